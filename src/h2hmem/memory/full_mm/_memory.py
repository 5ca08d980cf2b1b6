"""Full (MM): the whole history in context with the images themselves (docs/baselines.md).

Same text as Full (Text) — every session in order, every turn with its date and speaker — but each
image is sent as an image part right after its turn's line, and the question's image comes first.
The official code cut the text at 4,096 tokens from the head and picked up to 10 images from an
unordered set, detached from their turns (docs/official-pitfalls.md #6, #7). Here:

- image budget (default 10, question image included): the most recent turn images are attached;
  older ones are shown as their caption text (``[Image 1.png in session3: caption]``);
- text budget (default: the model's context minus the answer budget and prompt overhead): the
  most recent lines are kept. Each attached image is charged ``image_tokens`` (765) when the
  answer model sees pixels, or the caption text that replaces it when it cannot;
- ``Answer.details`` records what was dropped (``dropped_turns``, ``dropped_images``) and the
  ``context_tokens`` sent.

That is the preset ``harmonized``. Under ``paper`` (option ``request=official``) the request is the
official one (:func:`~h2hmem.memory._paper_native.full_mm_request`): ``[Session s Turn i role]: [Image: file]
date:text`` lines cut to their first 4,096 cl100k tokens with the official note, the official prompt
(whose per-type instruction lookup reads a field no question has, so every question gets the
fallback instruction), then the question image(s) and up to 10 images in all, dialogue order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from ...data import ImageRef, Session
from ...llm import ContentPart, Message, TextPart
from ...llm import image_text as substitute_text
from .._budget import context_budget, keep_most_recent, token_counter
from .._method import MemoryMethod
from .._options import DateFormat, MethodOptions, preset_option
from .._paper_native import MAX_CONTEXT_TOKENS, full_mm_request
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_part, image_text, render_turn, session_header
from .._view import QuestionImage, QuestionView

MAX_IMAGES = 10
"""Published image budget per answer call."""
IMAGE_TOKENS = 765
"""Context tokens charged per attached image for a model that sees pixels: OpenAI's high-detail
cost of a 1,024 × 1,024 image (85 + 4 tiles × 170); images are sent at most 1,024 px per side."""


class FullMMOptions(MethodOptions):
    """Options of ``full-mm`` (``docs/protocol.md``)."""

    context_tokens: int | None = Field(
        None, ge=1, description="context window to fill; None = the model's own window (4,096 if unknown)"
    )
    max_images: int = Field(MAX_IMAGES, ge=0, description="images per answer call, question image included (10)")
    image_tokens: int = Field(
        IMAGE_TOKENS,
        ge=0,
        description="context tokens charged per attached image when the model sees pixels (official: text only)",
    )
    request: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "the whole answer request: the script's lines, head truncation (cl100k) with its note, prompt and "
        "image order (question images, then dialogue images, after the text), or h2hmem's interleaved "
        "context with the most recent turns and images and the shared prompt",
    )
    max_context_tokens: int | None = preset_option(
        MAX_CONTEXT_TOKENS,
        None,
        "request=official: cl100k tokens of dialogue kept from the head (h2hmem: context_tokens)",
        ge=1,
    )
    date_format: DateFormat = preset_option("raw", "iso", "request=official: timeline_date as written, or the ISO date")


@dataclass(frozen=True)
class _Line:
    session: str
    text: str
    """The line with its image named only (image attached after it)."""
    cost: int
    image: ImageRef | None = None
    caption_text: str = ""
    """The line with the image as caption text (used when the image is over budget)."""
    caption_cost: int = 0
    header: bool = False


class FullMMMemory(MemoryMethod[FullMMOptions]):
    """Native full-context baseline.

    Args:
        ctx: run context (answer model, captions).
        options: :class:`FullMMOptions` (``None`` = from ``params`` under ``ctx.preset``).
    """

    name: ClassVar[str] = "full-mm"
    Options = FullMMOptions
    modality: ClassVar[str] = "native"

    def __init__(self, ctx: MemoryContext, options: FullMMOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        self.image_tokens = self.options.image_tokens
        self.context_tokens = self.options.context_tokens
        self.max_images = self.options.max_images
        self._count, self._counter_kind = token_counter(ctx.chat)
        self._sees_images = bool(getattr(ctx.chat, "supports_images", False))
        self._lines: list[_Line] = []
        self._sessions: list[Session] = []

    def describe(self) -> dict[str, Any]:
        """What the answer request holds, as the ``request`` option chooses (``official`` under ``paper``)."""
        if self.options.request == "official":
            return {
                "method": self.name,
                "modality": self.modality,
                "token_counter": self._counter_kind,
                "truncation": f"the dialogue's first {self.options.max_context_tokens} cl100k tokens (head), with "
                "the script's truncation note",
                "images": (
                    f"native: after the text, the question images, then the dialogue's images in order, "
                    f"{self.max_images} in all; a text-only answer model or a missing file gets "
                    "'[Image <file> in <session>: caption]' (details.images_substituted)"
                ),
            }
        return {
            "method": self.name,
            "modality": self.modality,
            "token_counter": self._counter_kind,
            "truncation": "keep most recent turns; keep most recent images",
            "images": (
                "native: each image part right after its turn's line, question image first; images over "
                "the budget shown as caption text; a text-only answer model or a missing file gets "
                "'[Image <file> in <session>: caption]' (counted in the text budget when the model "
                "cannot see images, else image_tokens per image; details.images_substituted)"
            ),
        }

    def _image_cost(self, ref: ImageRef | QuestionImage) -> int:
        """Context tokens an attached image takes: pixels, or the caption text that replaces them."""
        if self._sees_images and ref.path is not None:
            return self.image_tokens
        return int(self._count(substitute_text(image_part(ref, self.ctx.captions)))) + 1

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        self._sessions.append(session)
        header = session_header(session)
        self._lines.append(_Line(session.name, header, self._count(header) + 1, header=True))
        for turn in session.turns:
            text = render_turn(session, turn, self.ctx.captions, image_as_text=False)
            cost = self._count(text) + 1
            if turn.image is None:
                self._lines.append(_Line(session.name, text, cost))
                continue
            cap = render_turn(session, turn, self.ctx.captions, image_as_text=True)
            self._lines.append(
                _Line(session.name, text, cost + self._image_cost(turn.image), turn.image, cap, self._count(cap) + 1)
            )

    def _plan(self, question: QuestionView) -> tuple[int, set[int], list[int], int, list[int]]:
        """``(first kept line, lines whose image is attached, line costs, budget, image lines)``."""
        n_q = len(question.images[: self.max_images])
        budget = context_budget(self.ctx.chat, self.context_tokens, self.ctx.answer_config.max_tokens)
        budget -= sum(self._image_cost(ref) for ref in question.images[: self.max_images])
        # the most recent images overall are the ones attached; older images become caption text
        image_slots = self.max_images - n_q
        with_image = [i for i, ln in enumerate(self._lines) if ln.image is not None]
        attach = set(with_image[max(0, len(with_image) - image_slots) :]) if image_slots > 0 else set()
        costs = [ln.cost if (i in attach or ln.image is None) else ln.caption_cost for i, ln in enumerate(self._lines)]
        return keep_most_recent(costs, budget), attach, costs, budget, with_image

    def _kept_sessions(self, start: int) -> list[Evidence]:
        """The kept sessions, most recent first."""
        return [Evidence(session=s) for s in dict.fromkeys(ln.session for ln in reversed(self._lines[start:]))]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The sessions ``answer`` would show, most recent first (no model call)."""
        if self.options.request == "official":
            return self._official_request(question)[2]
        return self._kept_sessions(self._plan(question)[0])

    async def answer(self, question: QuestionView) -> Answer:
        if self.options.request == "official":
            return await self._answer_official(question)
        q_images = [image_part(ref, self.ctx.captions) for ref in question.images][: self.max_images]
        start, attach, costs, budget, with_image = self._plan(question)

        parts: list[ContentPart] = []
        attached = 0
        for i in range(start, len(self._lines)):
            ln = self._lines[i]
            if ln.image is not None and i in attach:
                parts.append(TextPart(text=ln.text))
                parts.append(image_part(ln.image, self.ctx.captions))
                attached += 1
            else:
                parts.append(TextPart(text=ln.caption_text if ln.image is not None else ln.text))
        over = question.images[self.max_images :]  # question images beyond the budget: caption text
        if over:
            parts.append(
                TextPart(
                    text="Image attached to the question: "
                    + " ".join(image_text(ref, self.ctx.captions) for ref in over)
                )
            )
        memory: list[ContentPart] | str = parts if parts else ""
        result = await self.ctx.chat.chat(
            build_answer_messages(question, memory, q_images), self.ctx.answer_config, stage="answer"
        )
        dropped_turns = sum(1 for ln in self._lines[:start] if not ln.header)
        return Answer(
            text=result.text.strip(),
            evidence=self._kept_sessions(start),
            details={
                "context_tokens": sum(costs[start:]),
                "budget_tokens": budget,
                "truncated": start > 0,
                "dropped_lines": start,
                "dropped_turns": dropped_turns,
                "images_attached": attached + len(q_images),
                "dropped_images": len(with_image) - attached,
                "images_substituted": result.images_substituted,
            },
        )

    def _official_request(self, question: QuestionView) -> tuple[list[Message], dict[str, Any], list[Evidence]]:
        """``(messages, details, evidence)`` of the official request; evidence = the sessions that survive the
        cut, most recent first (h2hmem's evidence order)."""
        max_tokens = self.options.max_context_tokens or MAX_CONTEXT_TOKENS
        messages, details = full_mm_request(
            self._sessions,
            question,
            self.ctx.captions,
            max_context_tokens=max_tokens,
            max_images=self.max_images,
            date_format=self.options.date_format,
        )
        shown = details.pop("sessions_shown")
        return messages, details, [Evidence(session=s) for s in reversed(shown)]

    async def _answer_official(self, question: QuestionView) -> Answer:
        messages, details, evidence = self._official_request(question)
        result = await self.ctx.chat.chat(messages, self.ctx.answer_config, stage="answer")
        details["images_substituted"] = result.images_substituted
        return Answer(text=result.text.strip(), evidence=evidence, details=details)
