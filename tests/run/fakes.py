"""In-process fakes for runner tests: a scripted answer model and memories that record what they get."""

from __future__ import annotations

from typing import ClassVar

from h2hmem.llm import Usage
from h2hmem.memory import Answer, Evidence, MemoryContext, MemoryMethod
from h2hmem.testing import ScriptedChatModel, ScriptedRequest


def fake_chat(fail_on: str | None = None, *, supports_images: bool = False) -> ScriptedChatModel:
    """Answers ``"A:<first 8 chars of the question>"``; raises RuntimeError for questions containing
    ``fail_on``. Usage per call: ⌊user-text chars / 4⌋ prompt tokens, 3 completion tokens."""

    def answer(req: ScriptedRequest) -> str | Exception:
        question = req.question or "?"
        if fail_on and fail_on in question:
            return RuntimeError(f"scripted failure for {question[:30]!r}")
        return f"A:{question[:8]}"

    return ScriptedChatModel(
        [answer],
        spec="fake:scripted",
        supports_images=supports_images,
        usage=lambda req, text: Usage(prompt_tokens=len(req.user_text) // 4, completion_tokens=3, calls=1),
    )


class RecorderMemory(MemoryMethod):
    """Records the order of observe/answer calls in a class-level log."""

    name: ClassVar[str] = "recorder"
    log: ClassVar[list[str]] = []

    def __init__(self, ctx: MemoryContext, options=None):
        super().__init__(ctx, options)
        self.seen: list[str] = []

    async def observe(self, session) -> None:
        self.seen.append(session.name)
        RecorderMemory.log.append(f"observe {self.ctx.dialogue_id}/{session.name}")

    async def answer(self, question) -> Answer:
        # a method gets a QuestionView: no question id, no home session; the text identifies it here
        RecorderMemory.log.append(f"answer {self.ctx.dialogue_id}: {question.text}")
        return Answer(text=f"seen {len(self.seen)}", evidence=[Evidence(session=s) for s in self.seen[-1:]])


class WaitingRecorderMemory(RecorderMemory):
    """A RecorderMemory whose observe waits on the loop once per session (as a model call would)."""

    async def observe(self, session) -> None:
        import asyncio

        await asyncio.sleep(0.001)
        await super().observe(session)


class SurrogateMemory(RecorderMemory):
    """Answers with a lone surrogate (not valid Unicode), as a buggy plugin might."""

    async def answer(self, question) -> Answer:
        return Answer(text="caf\udce9")


class SnoopMemory(MemoryMethod):
    """A plugin that tries every field a method must not get, and keeps everything it is given
    about each question (``received``) so a test can search it for session and file names."""

    name: ClassVar[str] = "snoop"
    refused: ClassVar[dict[str, str]] = {}
    """Withheld field → the AttributeError message it raised."""
    leaked: ClassVar[dict[str, object]] = {}
    """Withheld field → the value it returned (must stay empty)."""
    received: ClassVar[list[str]] = []
    image_bytes: ClassVar[list[bytes]] = []

    async def observe(self, session) -> None:
        return None

    async def answer(self, question) -> Answer:
        import dataclasses

        from h2hmem.memory import GRANTABLE, WITHHELD, image_part, image_text

        tries = [(question, n) for n in [*WITHHELD, *GRANTABLE, "question_id", "home", "gold_answer"]]
        tries += [(img, n) for img in question.images for n in ("session", "file", "key", "name", "ref")]
        for obj, name in tries:
            try:
                SnoopMemory.leaked[f"{type(obj).__name__}.{name}"] = getattr(obj, name)
            except AttributeError as e:
                SnoopMemory.refused[f"{type(obj).__name__}.{name}"] = str(e)
        got = [
            repr(question),
            repr(vars(question)),
            question.key,
            question.text,
            question.dialogue_id,
            str(question.task_type),
            *(repr(dataclasses.asdict(i)) for i in question.images),
        ]
        for img in question.images:
            got += [
                str(self.ctx.captions(img)),
                image_text(img, self.ctx.captions),
                repr(image_part(img, self.ctx.captions)),
            ]
            if img.exists:
                SnoopMemory.image_bytes.append(img.read_bytes())
        SnoopMemory.received.extend(got)
        return Answer(text="ok")


class TwoCallMemory(MemoryMethod):
    """Two answer-model calls per question (a draft, then the answer) and one build call per session:
    the runner must add up both answer calls for the question, and none of the build calls."""

    name: ClassVar[str] = "two-calls"

    async def observe(self, session) -> None:
        from h2hmem.llm import Message

        await self.ctx.chat.chat([Message(role="user", content="summarise " + session.name)], stage="memory_build")

    async def answer(self, question) -> Answer:
        from h2hmem.memory import build_answer_messages

        draft = await self.ctx.chat.chat(build_answer_messages(question, "draft"), self.ctx.answer_config)
        final = await self.ctx.chat.chat(build_answer_messages(question, draft.text), self.ctx.answer_config)
        return Answer(text=final.text)


class PrepareLogMemory(MemoryMethod):
    """Logs ``("prepare", question text)`` when a question's retrieval is done, then makes one answer
    call whose only message is the question's text (so a logging chat model can name the question)."""

    name: ClassVar[str] = "prepare-log"
    log: ClassVar[list[tuple[str, str]]] = []

    async def observe(self, session) -> None:
        return None

    async def answer(self, question) -> Answer:
        from h2hmem.llm import Message

        PrepareLogMemory.log.append(("prepare", question.text))
        reply = await self.ctx.chat.chat([Message(role="user", content=question.text)], self.ctx.answer_config)
        return Answer(text=reply.text)


class TwinCallMemory(PrepareLogMemory):
    """Makes two answer calls side by side (``asyncio.gather``), each with the question's text."""

    name: ClassVar[str] = "twin-calls"

    async def answer(self, question) -> Answer:
        import asyncio

        from h2hmem.llm import Message

        msgs = [Message(role="user", content=question.text)]
        a, b = await asyncio.gather(*(self.ctx.chat.chat(msgs, self.ctx.answer_config) for _ in range(2)))
        return Answer(text=a.text + b.text)
