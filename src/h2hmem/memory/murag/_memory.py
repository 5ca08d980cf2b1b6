"""MuRAG: multimodal dense retrieval over single turns, images sent to the model (docs/baselines.md).

- memory unit = 1 turn, embedded jointly: text ``[speaker] date: text`` plus the turn's image;
- encoder: GME-Qwen2-VL-7B (fused text+image, L2-normalised) — or CLIP, or the offline text
  fallback (turn text + caption, MiniLM) when no image encoder is available (recorded);
- query = question text + question image; cosine; top-k 5;
- context = retrieved turns in score order with session, turn, speaker and image file name; the
  retrieved turns' images attached in retrieval order after the question image; at most 10
  images and 4,096 text tokens.

The units, context builder and per-session vector cache are shared with NGM (``memory/_mm_units.py``).

That is the preset ``harmonized``. Under ``paper`` (options ``request=official``,
``unit_text=official``, ``max_images=5``) the unit text is ``[role] date:text`` and the request is
the official one (:func:`~h2hmem.memory._paper_native.murag_request`): ``[Memory k] Session s Turn i - role:
[Image: file] date:text`` lines, the official prompt allowing "appropriate reasoning", the memory
images (rank order) then the question image after the text, at most 5 images (the newest
``evaluate.sh``), prompt cut to 4,096 cl100k tokens.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

from pydantic import Field

from ... import defaults
from ...data import Session, Turn
from .._budget import token_counter
from .._method import MemoryMethod
from .._mm_units import (
    IMAGES_NOTE,
    MAX_IMAGES,
    MAX_TEXT_TOKENS,
    OFFICIAL_IMAGES_NOTE,
    SessionVectorCache,
    Unit,
    answer_from_hits,
    encode_query,
    encoder_describe,
    encoder_item,
    hits_evidence,
    load_encoder,
    official_answer,
    session_date,
)
from .._options import MethodOptions, TopK, preset_option
from .._paper_native import MAX_CONTEXT_TOKENS, murag_request, murag_unit_text
from .._protocol import Answer, Evidence, MemoryContext
from .._view import QuestionView


class MuRAGOptions(MethodOptions):
    """Options of ``murag`` (``docs/protocol.md``)."""

    encoder: str | None = Field(
        None,
        description="'gme:<path-or-id>', 'clip:<path-or-id>', 'text', or None (GME when its weights are cached "
        "locally, else the text fallback)",
    )
    device: str | None = Field(None, description="torch device of the encoder; None = the GPU when present")
    top_k: TopK = defaults.TOP_K
    max_text_tokens: int = Field(MAX_TEXT_TOKENS, ge=1, description="memory text budget (published 4,096)")
    request: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "the answer request: the script's '[Memory k] …' lines, prompt and image order (memory images, then "
        "the question image, after the text; prompt cut to 4,096 cl100k tokens), or h2hmem's context with "
        "each image after its turn and the shared prompt",
    )
    unit_text: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "text embedded with a turn's image: '[role] date:text' (raw timeline_date) or '[role] ISO-date: text'",
    )
    max_images: int = preset_option(5, MAX_IMAGES, "images per answer call, question image included", ge=0)


class MuRAGMemory(MemoryMethod[MuRAGOptions]):
    """Native multimodal dense retrieval over turns.

    Args:
        ctx: run context (answer model, captions, text embedder for the fallback encoder, state_dir).
        options: :class:`MuRAGOptions` (``None`` = from ``params`` under ``ctx.preset``).
        encoder: a ready ImageTextEncoder object (tests, notebooks) instead of ``options.encoder``; a
            string is taken as the ``encoder`` option.
    """

    name: ClassVar[str] = "murag"
    Options = MuRAGOptions
    modality: ClassVar[str] = "native"

    def __init__(self, ctx: MemoryContext, options: MuRAGOptions | None = None, *, encoder: Any = None, **params: Any):
        if isinstance(encoder, str):
            params, encoder = {**params, "encoder": encoder}, None
        super().__init__(ctx, options, **params)
        from ...embed import VectorIndex

        o = self.options
        self.top_k, self.max_images, self.max_text_tokens = o.top_k, o.max_images, o.max_text_tokens
        self.encoder = load_encoder(ctx, encoder if encoder is not None else o.encoder, o.device)
        self._vectors = SessionVectorCache(ctx.state_dir / "murag" if ctx.state_dir else None, self.encoder)
        self._count, self._counter_kind = token_counter(ctx.chat)
        self.index = VectorIndex()
        self._units: dict[str, Unit] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "token_counter": self._counter_kind,
            "unit": (
                "1 turn: '[speaker] date:text' + its image (date as written)"
                if self.options.unit_text == "official"
                else "1 turn: '[speaker] date: text' + its image"
            ),
            "images": OFFICIAL_IMAGES_NOTE if self.options.request == "official" else IMAGES_NOTE,
            **encoder_describe(self.encoder),
        }

    @staticmethod
    def unit_text(session: Session, turn: Turn) -> str:
        """``[Kiki] 2024-03-20: text`` (the published unit text)."""
        return f"[{turn.speaker}] {session_date(session)}: {turn.text.strip()}"

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        text = murag_unit_text if self.options.unit_text == "official" else self.unit_text
        items = [encoder_item(text(session, t), t.image, self.encoder, self.ctx.captions) for t in session.turns]
        vectors = await self._vectors.encode(session.name, items)
        ids = [f"{session.name}/t{t.index}" for t in session.turns]
        for uid, t in zip(ids, session.turns):
            self._units[uid] = Unit(session, t)
        self.index.add(ids, vectors)

    async def _hits(self, question: QuestionView) -> list[tuple[Unit, float]]:
        if not len(self.index):
            return []
        q = await encode_query(self.encoder, question, self.ctx.captions)
        return [(self._units[uid], s) for uid, s in self.index.search(q, self.top_k)[0]]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The turns ``answer`` would show, best first (no model call)."""
        return hits_evidence(await self._hits(question))

    async def answer(self, question: QuestionView) -> Answer:
        t0 = time.perf_counter()
        hits = await self._hits(question)
        extra = {"retrieved": len(hits), "retrieval_s": round(time.perf_counter() - t0, 6)}
        if self.options.request == "official":
            messages, details = murag_request(
                [(u.session, u.turn) for u, _ in hits],
                question,
                self.ctx.captions,
                max_context_tokens=MAX_CONTEXT_TOKENS,
                max_images=self.max_images,
            )
            return await official_answer(self.ctx, messages, hits, {**details, **extra})
        return await answer_from_hits(
            self.ctx,
            question,
            hits,
            self._count,
            max_images=self.max_images,
            max_text_tokens=self.max_text_tokens,
            extra=extra,
        )
