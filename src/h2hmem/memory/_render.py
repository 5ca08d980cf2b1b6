"""How memory is shown to a model: one line per turn with its session, date and speaker.

Shared by every method (docs/baselines.md, "Shared answer step"): each turn carries its session's
date (``timeline_date``), its speaker (``role``) and its text; an image turn adds its file name and
session ("1.png in session3", because some gold answers are exactly that) and, for caption-based
methods, its caption. A question's own image (:class:`~._view.QuestionImage`) is never named: it
renders as "the question's image" with its caption, so no retrieval query or prompt carries the
dataset file name that would match the turn that shared it.
"""

from __future__ import annotations

from ..data import ImageRef, Session, Turn
from ..llm import ImagePart
from ._protocol import CaptionLookup
from ._view import QuestionImage

QUESTION_IMAGE_LABEL = "the question's image"
"""How a question image is named to a model (never by its dataset file name)."""


def session_header(session: Session) -> str:
    """``"## session3 (2024-03-20)"``; the raw date when it could not be parsed."""
    date = session.date.isoformat() if session.date else (session.raw_date or "date unknown")
    return f"## {session.name} ({date})"


def image_label(ref: ImageRef | QuestionImage) -> str:
    """``"1.png in session3"`` — the form gold answers use for image references; a question image
    is :data:`QUESTION_IMAGE_LABEL`."""
    if isinstance(ref, QuestionImage):
        return QUESTION_IMAGE_LABEL
    return f"{ref.file} in {ref.session}"


def image_text(ref: ImageRef | QuestionImage, captions: CaptionLookup | None) -> str:
    """Caption-based image rendering: ``[Image 1.png in session3: <caption>]`` or ``[Image 1.png in session3]``;
    a question image: ``[Image the question's image: <caption>]``."""
    caption = _caption(ref, captions)
    if caption:
        return f"[Image {image_label(ref)}: {caption.strip()}]"
    return f"[Image {image_label(ref)}]"


def render_turn(
    session: Session,
    turn: Turn,
    captions: CaptionLookup | None = None,
    *,
    with_date: bool = True,
    image_as_text: bool = True,
) -> str:
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


def image_part(ref: ImageRef | QuestionImage, captions: CaptionLookup | None = None) -> ImagePart:
    """An :class:`ImagePart` for a native method; the caption rides along for text-only backends."""
    return ImagePart(name=image_label(ref), path=ref.path, caption=_caption(ref, captions))


def _caption(ref: ImageRef | QuestionImage, captions: CaptionLookup | None) -> str | None:
    if isinstance(ref, QuestionImage):  # looked up (and counted) when the view was built
        return ref.caption
    return captions(ref) if captions is not None else None
