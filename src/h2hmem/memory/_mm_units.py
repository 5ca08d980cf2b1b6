"""Turn units, the native context builder, the per-session vector cache and the encoder plumbing shared
by MuRAG and NGM ("context and images as MuRAG"); the methods live in ``memory/murag`` and ``memory/ngm``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data import ImageRef, Session, Turn
from ..llm import ContentPart, ImagePart, Message, TextPart
from ._prompt import build_answer_messages
from ._protocol import Answer, CaptionLookup, Evidence, MemoryContext
from ._render import image_part, image_text, render_turn
from ._view import QuestionImage, QuestionView

MAX_IMAGES = 10
"""Published cap on images per answer call (question image included)."""
MAX_TEXT_TOKENS = 4096
"""Published cap on the memory text."""


def session_date(session: Session) -> str:
    return session.date.isoformat() if session.date else (session.raw_date or "date unknown")


def load_encoder(ctx: MemoryContext, spec: Any, device: str | None) -> Any:
    """The run's image-text encoder: ``spec`` as for :func:`h2hmem.embed._multimodal.load_image_text_encoder`,
    or an already built :class:`~h2hmem.embed._multimodal.ImageTextEncoder` (programmatic use)."""
    from ..embed import load_image_text_encoder

    if spec is not None and not isinstance(spec, str):
        return spec

    return load_image_text_encoder(spec, text_embedder_factory=ctx.embedder_factory, device=device)


def encoder_item(
    text: str, image: ImageRef | QuestionImage | None, encoder: Any, captions: CaptionLookup
) -> tuple[str, Path | None]:
    """What the encoder gets for one unit: the image file when the encoder reads images and the file
    exists; otherwise the image's caption (or name) appended to the text."""
    if image is None:
        return text, None
    if encoder.uses_images and image.path is not None:
        return text, image.path
    return f"{text} {image_text(image, captions)}", None


def encoder_describe(encoder: Any) -> dict[str, Any]:
    """Encoder facts for ``describe()``, with the deviation when the text fallback is in use."""
    out: dict[str, Any] = {"encoder": encoder.name, "encoder_uses_images": encoder.uses_images}
    if not encoder.uses_images:
        out["deviations"] = [
            "no image encoder available: units are embedded as turn text + image caption "
            "with the text embedder (paper: GME-Qwen2-VL-7B fused text+image embeddings)"
        ]
    return out


class SessionVectorCache:
    """Per-session vectors saved under ``state_dir`` so a restarted run never re-encodes a session.

    One ``<session>.npz`` per session holding the vectors and a fingerprint of the encoder and
    of the items; a file whose fingerprint differs is ignored (and overwritten).
    """

    def __init__(self, folder: Path | None, encoder: Any):
        self.folder = folder
        self.encoder = encoder

    def _fingerprint(self, items: list[tuple[str, Path | None]]) -> str:
        blob = json.dumps([self.encoder.name, [[t, str(p) if p else None] for t, p in items]], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    async def encode(self, session: str, items: list[tuple[str, Path | None]]) -> np.ndarray:
        if self.folder is None:
            fresh: np.ndarray = await self.encoder.encode(items)
            return fresh
        path = self.folder / f"{session}.npz"
        fp = self._fingerprint(items)
        if path.is_file():
            try:
                with np.load(path) as data:
                    if str(data["fingerprint"]) == fp and data["vectors"].shape[0] == len(items):
                        cached: np.ndarray = data["vectors"].astype(np.float32)
                        return cached
            except (OSError, ValueError, KeyError):  # unreadable: encode again and overwrite
                pass
        vectors: np.ndarray = await self.encoder.encode(items)
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, vectors=vectors, fingerprint=np.array(fp))
        tmp.replace(path)
        return vectors


@dataclass(frozen=True)
class Unit:
    """One memory unit: a turn of a session."""

    session: Session
    turn: Turn


def build_native_context(
    hits: list[tuple[Unit, float]],
    question: QuestionView,
    captions: CaptionLookup,
    count: Callable[[str], int],
    *,
    max_images: int,
    max_text_tokens: int,
) -> tuple[list[ContentPart], list[ImagePart], dict[str, Any]]:
    """Memory parts for retrieved turns, best first, each image right after its turn's line.

    Lines read ``(session3, turn 12) [2024-03-20] Kiki: text <image 1.png in session3>``. The
    question's images come first (returned separately) and count against ``max_images``; a turn
    image beyond the budget is shown as its caption text. Turns whose line would overflow
    ``max_text_tokens`` are dropped, lowest-ranked first.

    Returns ``(memory parts, question image parts, details)`` with details ``context_tokens``,
    ``dropped_turns``, ``images_attached``, ``dropped_images``.
    """
    q_images = [image_part(ref, captions) for ref in question.images][:max_images]
    budget_images = max_images - len(q_images)
    parts: list[ContentPart] = []
    tokens = dropped_turns = dropped_images = attached = 0
    for unit, _ in hits:
        send_image = unit.turn.image is not None and attached < budget_images
        line = f"({unit.session.name}, turn {unit.turn.index}) " + render_turn(
            unit.session, unit.turn, captions, image_as_text=not send_image
        )
        cost = count(line) + 1
        if tokens + cost > max_text_tokens:
            dropped_turns += 1
            continue
        tokens += cost
        parts.append(TextPart(text=line))
        if send_image:
            parts.append(image_part(unit.turn.image, captions))  # type: ignore[arg-type]
            attached += 1
        elif unit.turn.image is not None:
            dropped_images += 1
    if not parts:
        parts.append(TextPart(text="(nothing was retrieved)"))
    details = {
        "context_tokens": tokens,
        "dropped_turns": dropped_turns,
        "images_attached": attached + len(q_images),
        "dropped_images": dropped_images,
    }
    return parts, q_images, details


def hits_evidence(hits: list[tuple[Unit, float]]) -> list[Evidence]:
    """Turn units as :class:`Evidence`, in rank order (shared by MuRAG and NGM)."""
    return [Evidence(session=u.session.name, turn=u.turn.index, score=round(s, 6)) for u, s in hits]


async def answer_from_hits(
    ctx: MemoryContext,
    question: QuestionView,
    hits: list[tuple[Unit, float]],
    count: Callable[[str], int],
    *,
    max_images: int,
    max_text_tokens: int,
    extra: dict[str, Any] | None = None,
) -> Answer:
    """The answer call shared by MuRAG and NGM: native context, shared prompt, evidence in rank order."""
    parts, q_images, details = build_native_context(
        hits, question, ctx.captions, count, max_images=max_images, max_text_tokens=max_text_tokens
    )
    result = await ctx.chat.chat(build_answer_messages(question, parts, q_images), ctx.answer_config, stage="answer")
    details.update(extra or {})
    details["images_substituted"] = result.images_substituted
    return Answer(
        text=result.text.strip(),
        evidence=hits_evidence(hits),
        details=details,
    )


async def official_answer(
    ctx: MemoryContext, messages: list[Message], hits: list[tuple[Unit, float]], details: dict[str, Any]
) -> Answer:
    """Send an official request (MuRAG, NGM under ``paper``); evidence in rank order."""
    result = await ctx.chat.chat(messages, ctx.answer_config, stage="answer")
    details["images_substituted"] = result.images_substituted
    return Answer(
        text=result.text.strip(),
        evidence=[Evidence(session=u.session.name, turn=u.turn.index, score=round(s, 6)) for u, s in hits],
        details=details,
    )


async def encode_query(encoder: Any, question: QuestionView, captions: CaptionLookup) -> np.ndarray:
    """Question text plus its (first) image, as the encoder takes it; shape ``(dim,)``.
    Further question images, rare, join as caption text."""
    text = question.text.strip()
    for ref in question.images[1:]:
        text += " " + image_text(ref, captions)
    first = question.images[0] if question.images else None
    vectors: np.ndarray = await encoder.encode([encoder_item(text, first, encoder, captions)])
    row: np.ndarray = vectors[0]
    return row


OFFICIAL_IMAGES_NOTE = (
    "native (official request): after the text, the retrieved turns' images in rank order, then the "
    "question image; a text-only answer model or a missing image file gets '[Image <file> in <session>: "
    "caption]' instead (count in each answer's details.images_substituted)"
)
IMAGES_NOTE = (
    "native: image parts attached (retrieval order) after the question image; a text-only answer model "
    "or a missing image file gets '[Image <file> in <session>: caption]' instead "
    "(count in each answer's details.images_substituted)"
)
