"""Full (Text): the whole history in context, images as captions (spec/baselines.md).

Every session in time order, every turn with its date, speaker and caption inline. The official
code kept the first 4,096 tokens and so lost the latest sessions (pitfall 6); we keep the most
recent turns that fit the model's context and record what was cut.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..data import Session
from ._budget import context_budget, keep_most_recent, token_counter
from ._prompt import build_answer_messages
from ._protocol import Answer, Evidence, MemoryContext
from ._view import QuestionView
from ._render import image_text, render_turn, session_header


class FullTextMemory:
    """Caption-based full-context baseline.

    Args:
        ctx: run context (answer model, captions).
        context_tokens: context window to fill; ``None`` = the model's own window.
    """

    name: ClassVar[str] = "full-text"
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, context_tokens: int | None = None):
        self.ctx = ctx
        self.context_tokens = context_tokens
        self._count, self._counter_kind = token_counter(ctx.chat)
        # (session name, line, tokens); session headers are lines with tokens too
        self._lines: list[tuple[str, str, int]] = []

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "modality": self.modality, "context_tokens": self.context_tokens,
                "token_counter": self._counter_kind, "truncation": "keep most recent turns",
                "images": "captions inline ([Image <file> in <session>: caption]); file name only when no caption"}

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        header = session_header(session)
        self._lines.append((session.name, header, self._count(header) + 1))
        for turn in session.turns:
            line = render_turn(session, turn, self.ctx.captions)
            self._lines.append((session.name, line, self._count(line) + 1))

    def _start(self, question: QuestionView, q_caps: list[str]) -> tuple[int, int]:
        """``(first kept line, budget)``: the most recent lines that fit."""
        budget = context_budget(self.ctx.chat, self.context_tokens, self.ctx.answer_config.max_tokens)
        budget -= sum(self._count(c) for c in q_caps)
        return keep_most_recent([c for _, _, c in self._lines], budget), budget

    def _sessions(self, start: int) -> list[Evidence]:
        """The kept sessions, most recent first."""
        return [Evidence(session=s) for s in dict.fromkeys(s for s, _, _ in reversed(self._lines[start:]))]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The sessions ``answer`` would show, most recent first (no model call)."""
        caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        return self._sessions(self._start(question, caps)[0])

    async def answer(self, question: QuestionView) -> Answer:
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        start, budget = self._start(question, q_caps)
        kept = self._lines[start:]
        memory = "\n".join(line for _, line, _ in kept)
        if q_caps:
            memory = memory + "\n\nImage attached to the question: " + " ".join(q_caps)
        result = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config, stage="answer")
        return Answer(
            text=result.text.strip(),
            evidence=self._sessions(start),
            usage=result.usage,
            cached=result.cached,
            details={"context_tokens": sum(c for _, _, c in kept), "budget_tokens": budget,
                     "dropped_lines": start, "truncated": start > 0},
        )
