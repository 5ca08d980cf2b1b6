"""Per-dialogue memory-build bars: they move per session and per memory_build call, then go."""

import asyncio

from h2hmem.run._progress import DialogueBars
from h2hmem.testing import ScriptedChatModel


class FakeProgress:
    def __init__(self):
        self.tasks, self.removed, self.n = {}, [], 0

    def add_task(self, description, total, **fields):
        self.n += 1
        self.tasks[self.n] = {"description": description, "total": total, "completed": 0}
        return self.n

    def update(self, task, completed):
        self.tasks[task]["completed"] = completed

    def remove_task(self, task):
        self.removed.append(task)


def test_bars_follow_notes_and_sessions():
    bars, progress = DialogueBars(), FakeProgress()
    bars.attach(progress)
    bars.expect("dyadic/dialogue1", 10)
    chat = bars.wrap(ScriptedChatModel(default="{}", spec="fake:echo"), "dyadic/dialogue1")
    assert chat.spec == "fake:echo" and bars.wrap(None, "x") is None

    async def notes():
        for _ in range(3):
            await chat.chat([], stage="memory_build")
        await chat.chat([], stage="answer")  # answers do not move the build bar

    asyncio.run(notes())
    task = progress.tasks[1]
    assert task["description"] == "  dyadic/dialogue1 · memory" and task["total"] == 10 and task["completed"] == 3
    bars.session_done("dyadic/dialogue1", 4)  # a session of 4 turns: max(4 turns, 3 notes)
    assert task["completed"] == 4
    bars.built("dyadic/dialogue1")
    assert progress.removed == [1]
