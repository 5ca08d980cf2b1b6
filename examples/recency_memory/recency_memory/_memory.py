"""RecencyMemory: the last ``window`` turns, in order, with their session, date and speaker."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from h2hmem.data import Session, Turn
from h2hmem.memory import (
    Answer, Evidence, MemoryMethod, MethodOptions, QuestionView, build_answer_messages, image_text,
    preset_option, render_turn,
)


class RecencyOptions(MethodOptions):
    """The options of ``recency``: ``--param window=20`` or ``--param order=newest-first``."""

    window: int = Field(50, ge=1, description="how many of the latest turns are shown to the model")
    order: Literal["time", "newest-first"] = preset_option(
        "time", "time", "order of the turns in the prompt: in time order, or the newest first"
    )


class RecencyMemory(MemoryMethod[RecencyOptions]):
    """Answers from the most recent turns only; images as captions.

    ``self.ctx`` is what the runner provides (answer model ``ctx.chat``, ``ctx.captions``…);
    ``self.options`` the validated :class:`RecencyOptions`.
    """

    name: ClassVar[str] = "recency"
    Options = RecencyOptions

    def __init__(self, ctx, options: RecencyOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        self.turns: list[tuple[Session, Turn]] = []

    def describe(self) -> dict[str, Any]:
        """Goes into the run manifest: how images were handled (the options are recorded by the runner)."""
        return {"method": self.name, "images": "captions inline ([Image <file> in <session>: caption])"}

    async def observe(self, session: Session) -> None:
        if session.absent:
            return
        self.turns.extend((session, turn) for turn in session.turns)

    async def answer(self, question: QuestionView) -> Answer:
        recent = self.turns[-self.options.window:]
        shown = recent if self.options.order == "time" else recent[::-1]
        lines = [f"({s.name}, turn {t.index}) " + render_turn(s, t, self.ctx.captions) for s, t in shown]
        memory = "\n".join(lines)
        if question.images:  # by content only: "[Image the question's image: <caption>]"
            memory += "\n\nImage attached to the question: " + " ".join(
                image_text(ref, self.ctx.captions) for ref in question.images)
        result = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config, stage="answer")
        return Answer(  # the runner counts the tokens and cache hits of the calls made here
            text=result.text.strip(),
            # most recent first: the order in which this method "ranks" its memory
            evidence=[Evidence(session=s.name, turn=t.index) for s, t in reversed(recent)],
            details={"turns_shown": len(recent), "turns_observed": len(self.turns)},
        )
