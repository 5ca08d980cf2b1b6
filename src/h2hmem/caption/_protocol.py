"""What a captioner is: one async call from an image file to a caption, or a :class:`CaptionError`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..llm import Usage
from ._settings import CaptionSettings


class CaptionError(Exception):
    """One image could not be captioned; ``reason`` says why in words (recorded, never fatal)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass
class CaptionOutput:
    """One caption as produced, before the cut to the token limit."""

    text: str
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    """True when the model layer's request cache answered (no call was paid for)."""
    image_info: dict[str, Any] = field(default_factory=dict)
    """Extra facts to store with the caption (OCR: format, size, kind, EXIF date, raw text)."""


class Captioner(Protocol):
    """A caption backend (a VLM through ``ChatModel``, or OCR)."""

    spec: str
    """Model spec recorded with each caption (``"openai:gpt-4o"``, ``"ocr"``)."""
    identity: str
    """What decides the output besides the settings: part of the cache key."""
    uses_prompt: bool
    """False when prompt and temperature do not affect the output (OCR)."""

    async def caption(self, path: Path, settings: CaptionSettings, name: str = "") -> CaptionOutput:
        """Caption the image at ``path`` (``name``: ``"session3/1.png"``, for messages).

        Raises :class:`CaptionError` for a per-image failure."""
        ...

    async def aclose(self) -> None:
        """Release threads or connections (only called by whoever built the captioner)."""
        ...
