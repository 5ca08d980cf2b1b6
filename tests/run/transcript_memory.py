"""A memory that makes one memory-construction call per session and one answer call per question
(for transcript tests; also run by the console script as ``transcript_memory:SummaryMemory``)."""

from __future__ import annotations

from typing import ClassVar

from h2hmem.llm import GenerationConfig, Message
from h2hmem.memory import Answer, Evidence, MemoryContext, MemoryMethod
from h2hmem.memory._prompt import build_answer_messages

BUILD_CONFIG = GenerationConfig(temperature=0.0, max_tokens=64)


class SummaryMemory(MemoryMethod):
    name: ClassVar[str] = "summary-test"

    def __init__(self, ctx: MemoryContext, options=None):
        super().__init__(ctx, options)
        self.notes: list[tuple[str, str]] = []

    async def observe(self, session) -> None:
        if session.absent or not session.turns:
            return
        text = "\n".join(f"{t.speaker}: {t.text}" for t in session.turns)
        r = await self.ctx.chat.chat(
            [Message(role="user", content=f"Summarise {session.name}:\n{text}")], BUILD_CONFIG, stage="memory_build"
        )
        self.notes.append((session.name, r.text))

    async def answer(self, question) -> Answer:
        memory = "\n".join(f"{s}: {n}" for s, n in self.notes)
        r = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config, stage="answer")
        return Answer(text=r.text, evidence=[Evidence(session=s) for s, _ in self.notes])
