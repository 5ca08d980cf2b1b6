"""How memory is shown to a model: one line per turn with its session, date and speaker.

Shared by every method (spec/baselines.md, "Shared answer step"): each turn carries its session's
date (``timeline_date``), its speaker (``role``) and its text; an image turn adds its file name and
session ("1.png in session3", because some gold answers are exactly that) and, for caption-based
methods, its caption.
"""

from __future__ import annotations

from ..data import ImageRef, Session, Turn
from ..llm._types import ImagePart
from ._protocol import CaptionLookup


def session_header(session: Session) -> str:
    """``"## session3 (2024-03-20)"``; the raw date when it could not be parsed."""
    date = session.date.isoformat() if session.date else (session.raw_date or "date unknown")
    return f"## {session.name} ({date})"


def image_label(ref: ImageRef) -> str:
    """``"1.png in session3"`` — the form gold answers use for image references."""
    return f"{ref.file} in {ref.session}"


def image_text(ref: ImageRef, captions: CaptionLookup | None) -> str:
    """Caption-based image rendering: ``[Image 1.png in session3: <caption>]`` or ``[Image 1.png in session3]``."""
    caption = captions(ref) if captions is not None else None
    if caption:
        return f"[Image {image_label(ref)}: {caption.strip()}]"
    return f"[Image {image_label(ref)}]"


def render_turn(session: Session, turn: Turn, captions: CaptionLookup | None = None, *, with_date: bool = True,
                image_as_text: bool = True) -> str:
    """One turn as a line: ``"[2024-03-20] Xu Huaian: text [Image 1.png in session1: caption]"``.

    With ``image_as_text=False`` (native methods) the image is only named (``<image 1.png in session1>``);
    the caller sends the pixels as an :class:`ImagePart` right after the line.
    """
    prefix = ""
    if with_date:
        date = session.date.isoformat() if session.date else (session.raw_date or "?")
        prefix = f"[{date}] "
    line = f"{prefix}{turn.speaker}: {turn.text.strip()}"
    if turn.image is not None:
        line += " " + (image_text(turn.image, captions) if image_as_text else f"<image {image_label(turn.image)}>")
    return line


def image_part(ref: ImageRef, captions: CaptionLookup | None = None) -> ImagePart:
    """An :class:`ImagePart` for a native method; the caption rides along for text-only backends."""
    return ImagePart(name=image_label(ref), path=ref.path, caption=captions(ref) if captions else None)
