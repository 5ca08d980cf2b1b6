"""RecencyMemory: the last ``window`` turns, in order, with their session, date and speaker."""

from __future__ import annotations

from typing import Any, ClassVar

from h2hmem.data import Session, Turn
from h2hmem.memory import (
    Answer, Evidence, MemoryContext, QuestionView, build_answer_messages, image_text, render_turn,
)


class RecencyMemory:
    """Answers from the most recent turns only; images as captions.

    Args:
        ctx: what the runner provides (answer model ``ctx.chat``, ``ctx.captions``…).
        window: how many of the latest turns are shown to the model (default 50).
    """

    name: ClassVar[str] = "recency"

    def __init__(self, ctx: MemoryContext, window: int = 50):
        if window < 1:
            raise ValueError(f"recency: window must be >= 1, got {window}")
        self.ctx = ctx
        self.window = window
        self.turns: list[tuple[Session, Turn]] = []

    def describe(self) -> dict[str, Any]:
        """Goes into the run manifest: parameters and how images were handled."""
        return {"method": self.name, "window": self.window, "images": "captions inline ([Image <file> in <session>: caption])"}

    async def observe(self, session: Session) -> None:
        if session.absent:
            return
        self.turns.extend((session, turn) for turn in session.turns)

    async def answer(self, question: QuestionView) -> Answer:
        recent = self.turns[-self.window:]
        lines = [f"({s.name}, turn {t.index}) " + render_turn(s, t, self.ctx.captions) for s, t in recent]
        memory = "\n".join(lines)
        if question.images:  # by content only: "[Image the question's image: <caption>]"
            memory += "\n\nImage attached to the question: " + " ".join(
                image_text(ref, self.ctx.captions) for ref in question.images)
        result = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config, stage="answer")
        return Answer(
            text=result.text.strip(),
            # most recent first: the order in which this method "ranks" its memory
            evidence=[Evidence(session=s.name, turn=t.index) for s, t in reversed(recent)],
            usage=result.usage,
            cached=result.cached,
            details={"turns_shown": len(recent), "turns_observed": len(self.turns)},
        )
