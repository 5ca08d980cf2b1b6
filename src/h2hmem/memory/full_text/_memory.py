"""Full (Text): the whole history in context, images as captions (docs/baselines.md).

Every session in time order, every turn with its date, speaker and caption inline. Two presets
(``docs/protocol.md``; each choice below is an option, overridable with ``--param NAME=VALUE``):

- ``paper`` — as ``baselines/FullText/FullText.py`` + ``evaluate.sh`` @ b6070899: the official
  layout (session-information header, then ``  Turn i - role: [Image: caption] date:text`` lines
  grouped by session), the first 4,096 cl100k tokens of it (head truncation, which loses the
  latest sessions — docs/official-pitfalls.md #6, kept because it shaped the published numbers) with the
  official truncation note, the per-type instruction and one-shot example in one user message,
  the question's first image attached after the text, ``top_p`` 0.9;
- ``harmonized`` — our own turn lines, the most recent turns that fit the model's context, the
  shared answer prompt, the question image as its caption.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field

from ...data import Session
from ...llm import ImagePart, Message
from .._budget import context_budget, keep_most_recent, token_counter
from .._method import MemoryMethod
from .._options import AttachQuestionImage, DateFormat, MethodOptions, TopP, preset_option
from .._paper_answer import official_messages, question_image_parts
from .._paper_render import full_text_context, head_truncate
from .._per_state import PerState
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_text, render_turn, session_header
from .._view import QuestionView


class FullTextOptions(MethodOptions):
    """Options of ``full-text`` (``docs/protocol.md``)."""

    layout: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "context layout: the official session header and 'Turn i - role: [Image: caption] date:text' lines, "
        "or h2hmem's '## session (date)' header and '[date] speaker: text [Image …: caption]' lines",
    )
    prompt: Literal["official", "shared"] = preset_option(
        "official",
        "shared",
        "answer prompt: the script's per-type instruction, one-shot example and counter-example in one user "
        "message, or the shared system + user prompt of all methods",
    )
    truncation: Literal["head", "recent"] = preset_option(
        "head",
        "recent",
        "what survives an over-long context: its first tokens (official) or the most recent turns",
    )
    max_context_tokens: int | None = preset_option(
        4096,
        None,
        "tokens of memory context; None = the model's window minus the answer budget and prompt overhead",
        ge=1,
    )
    context_tokens: int | None = Field(
        None, ge=1, description="context window to fill when max_context_tokens is None; None = the model's own"
    )
    tokenizer: Literal["cl100k", "model"] = preset_option(
        "cl100k",
        "model",
        "how context tokens are counted: tiktoken cl100k_base (official) or the answer model's tokenizer",
    )
    date_format: DateFormat = preset_option(
        "raw", "iso", "session dates: timeline_date as written ('2024-02-20 (正月十一)') or the ISO date"
    )
    attach_question_image: AttachQuestionImage = preset_option(
        True,
        False,
        "send the question's (first) image as an image part (a text-only model gets its caption) instead "
        "of its caption text",
    )
    top_p: TopP = preset_option(0.9, None, "nucleus sampling of the answer call; None = not sent")


class FullTextMemory(MemoryMethod[FullTextOptions]):
    """Caption-based full-context baseline.

    Args:
        ctx: run context (answer model, captions, preset).
        options: :class:`FullTextOptions` (``None`` = from ``params`` under ``ctx.preset``).
    """

    name: ClassVar[str] = "full-text"
    Options = FullTextOptions
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, options: FullTextOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        self.context_tokens = self.options.context_tokens
        self._count: Callable[[str], int]
        if self.options.tokenizer == "cl100k":
            from ...llm import count_tokens

            self._count, self._counter_kind = count_tokens, "cl100k_base"
        else:
            self._count, self._counter_kind = token_counter(ctx.chat)
        self._sessions: list[Session] = []
        # (session name, line, tokens) of the h2hmem layout; session headers are lines with tokens too
        self._lines: list[tuple[str, str, int]] = []
        # context lines and cuts of the observed sessions: one rendering and tokenization per state, not per question
        self._per_state = PerState()

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "token_counter": self._counter_kind,
            "images": "memory images as captions inline; question image per attach_question_image",
        }

    async def observe(self, session: Session) -> None:
        if session.absent:
            return
        self._sessions.append(session)
        self._per_state.clear()
        if not session.turns or self.options.layout != "h2hmem":
            return
        header = session_header(session)
        self._lines.append((session.name, header, self._count(header) + 1))
        for turn in session.turns:
            line = render_turn(session, turn, self.ctx.captions)
            self._lines.append((session.name, line, self._count(line) + 1))

    def _lines_now(self) -> list[tuple[str, str, int]]:
        """Context lines in order: (session, line, tokens)."""
        if self.options.layout == "h2hmem":
            return self._lines
        text = full_text_context(self._sessions, self.ctx.captions, self.options.date_format)
        # per-line counts matter only when whole lines are kept (head + cl100k cuts the joined text)
        per_line = self.options.truncation == "recent" or self._counter_kind != "cl100k_base"
        session_of, current = [], ""
        for line in text.split("\n"):
            if line.startswith("Session ") and not line.endswith("dialogue turns"):
                current = line.removeprefix("Session ").split(":", 1)[0]
            session_of.append((current, line, self._count(line) + 1 if per_line else 0))
        return session_of

    def _plan(self, question: QuestionView) -> dict[str, Any]:
        """What the answer request shows: question image parts or captions, the context after the cut, token
        counts, and the kept sessions as evidence (most recent first)."""
        opts = self.options
        q_images = question_image_parts(question.images, self.ctx.captions) if opts.attach_question_image else []
        q_caps = [] if opts.attach_question_image else [image_text(ref, self.ctx.captions) for ref in question.images]
        lines = self._per_state.get("lines", self._lines_now)
        if opts.max_context_tokens is not None:
            budget = int(opts.max_context_tokens)
        else:
            budget = context_budget(self.ctx.chat, self.context_tokens, self.ctx.answer_config.max_tokens)
            budget -= sum(self._caption_tokens(c) for c in q_caps)
        context, original, kept_tokens, kept_lines, evidence = self._per_state.get(
            ("cut", budget), lambda: self._cut_with_evidence(lines, budget)
        )
        return {
            "q_images": q_images,
            "q_caps": q_caps,
            "n_lines": len(lines),
            "budget": budget,
            "context": context,
            "original": original,
            "kept_tokens": kept_tokens,
            "kept_lines": kept_lines,
            "evidence": list(evidence),
        }

    def _caption_tokens(self, text: str) -> int:
        """Tokens of a question-image caption, counted once per state (questions share images)."""
        return self._per_state.get(("tokens", text), lambda: self._count(text))

    def _cut_with_evidence(
        self, lines: list[tuple[str, str, int]], budget: int
    ) -> tuple[str, int, int, int, list[Evidence]]:
        """:meth:`_cut` and the kept sessions as evidence, most recent first."""
        context, original, kept_tokens, kept_lines = self._cut(lines, budget)
        kept = lines[:kept_lines] if self.options.truncation == "head" else lines[len(lines) - kept_lines :]
        evidence = [Evidence(session=s) for s in dict.fromkeys(s for s, _, _ in reversed(kept) if s)]
        return context, original, kept_tokens, kept_lines, evidence

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The sessions ``answer`` would show, most recent first (no model call)."""
        evidence: list[Evidence] = self._plan(question)["evidence"]
        return evidence

    async def answer(self, question: QuestionView) -> Answer:
        plan = self._plan(question)
        context, original, kept_tokens = plan["context"], plan["original"], plan["kept_tokens"]
        truncated = kept_tokens < original
        if plan["q_caps"]:
            context = context + "\n\nImage attached to the question: " + " ".join(plan["q_caps"])
        config = self.ctx.answer_config.model_copy(update={"top_p": self.options.top_p})
        messages = self._messages(question, context, plan["q_images"], truncated, original, kept_tokens)
        result = await self.ctx.chat.chat(messages, config, stage="answer")
        return Answer(
            text=result.text.strip(),
            evidence=plan["evidence"],
            details={
                "context_tokens": kept_tokens,
                "original_context_tokens": original,
                "budget_tokens": plan["budget"],
                "dropped_lines": plan["n_lines"] - plan["kept_lines"],
                "truncated": truncated,
                "question_images_attached": len(plan["q_images"]),
            },
        )

    def _cut(self, lines: list[tuple[str, str, int]], budget: int) -> tuple[str, int, int, int]:
        """``(context text, tokens before the cut, tokens kept, whole lines kept)`` under the truncation option."""
        if self.options.truncation == "recent":
            start = keep_most_recent([c for _, _, c in lines], budget)
            kept = lines[start:]
            return "\n".join(t for _, t, _ in kept), sum(c for _, _, c in lines), sum(c for _, _, c in kept), len(kept)
        text = "\n".join(t for _, t, _ in lines)
        if self._counter_kind == "cl100k_base":
            cut, original, kept_tokens = head_truncate(text, budget)
        else:  # another tokenizer cannot cut mid-line: keep whole lines from the start
            total, n = 0, 0
            while n < len(lines) and total + lines[n][2] <= budget:
                total, n = total + lines[n][2], n + 1
            cut, original, kept_tokens = "\n".join(t for _, t, _ in lines[:n]), sum(c for _, _, c in lines), total
        n_lines = len(lines) if cut == text else cut.count("\n")  # the last, partial line is not counted as kept
        return cut, original, kept_tokens, n_lines

    def _messages(
        self,
        question: QuestionView,
        context: str,
        q_images: list[ImagePart],
        truncated: bool,
        original: int,
        kept_tokens: int,
    ) -> list[Message]:
        if self.options.prompt == "shared":
            return build_answer_messages(question, context, q_images or None)
        return official_messages(
            "full_text",
            question,
            context,
            q_images,
            truncated=truncated,
            original_tokens=original,
            truncated_tokens=kept_tokens,
        )
