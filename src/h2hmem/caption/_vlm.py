"""Captions from a vision-language model through the :class:`~h2hmem.llm.ChatModel` interface
(which owns retries, the request cache, concurrency and cost accounting)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..llm import ChatModel, GenerationConfig, ImageFileError, ImagePart, Message, ModelError, TextPart
from ._image import image_facts, open_image
from ._protocol import CaptionError, CaptionOutput
from ._settings import CaptionSettings

RAW_IMAGE_MAX_BYTES = 20 * 2**20
"""Largest file sent as raw bytes: OpenAI's documented per-image limit (20 MB). A larger file is
recorded as a failure before any call (the official captioner sent it and lost the run)."""


def caption_request(path: Path, settings: CaptionSettings, name: str = "") -> tuple[list[Message], GenerationConfig]:
    """The caption call for one image: one user message (prompt text + the image, in the settings'
    ``image_encoding`` and ``image_detail``) and its generation settings (official request)."""
    detail = None if settings.image_detail == "none" else settings.image_detail
    part = ImagePart(name=name or path.name, path=path, encoding=settings.image_encoding, detail=detail)
    messages = [Message(role="user", content=[TextPart(text=settings.rendered_prompt), part])]
    return messages, GenerationConfig(temperature=settings.temperature, max_tokens=settings.max_new_tokens)


class VLMCaptioner:
    """One user message (prompt text + the image) per image, at stage ``"caption"``: the request
    of the official captioner (``gpt_4o_caption.py``) with the settings' prompt, image encoding and
    ``detail``, ``temperature`` and ``max_tokens`` = ``max_new_tokens``.

    ``owned``: the model was built for this captioner, so :meth:`aclose` closes it.

    Raises:
        ValueError: on construction, when ``model.supports_images`` is false (a text-only model
            would caption the file name, not the picture).
    """

    uses_prompt = True

    def __init__(self, model: ChatModel, *, owned: bool = False):
        if not getattr(model, "supports_images", False):
            raise ValueError(
                f"model {model.spec!r} cannot see images; use a vision-language model "
                "(e.g. openai:gpt-4o) or the offline fallback --model ocr"
            )
        self.model = model
        self._owned = owned
        self.spec = model.spec
        self.identity = model.spec

    async def caption(self, path: Path, settings: CaptionSettings, name: str = "") -> CaptionOutput:
        """Caption the image at ``path`` (``name`` is shown to the model layer in errors).

        Raises:
            CaptionError: the file cannot be decoded (checked before any paid call), the model
                call failed after the model layer's retries, or the reply was empty.
        """
        img = await asyncio.to_thread(open_image, path)  # a corrupt file never costs a call
        facts = image_facts(img)
        if settings.image_encoding == "raw":
            size = path.stat().st_size  # noqa: ASYNC240 — one stat, not worth a thread
            if size > RAW_IMAGE_MAX_BYTES:
                raise CaptionError(
                    f"image file is {size / 2**20:.1f} MiB, over the {RAW_IMAGE_MAX_BYTES // 2**20} MiB "
                    "an API accepts as raw bytes (image_encoding=raw); use image_encoding=jpeg1024"
                )
        messages, config = caption_request(path, settings, name)
        try:
            result = await self.model.chat(messages, config, stage="caption")
        except (ModelError, ImageFileError) as e:
            raise CaptionError(f"{type(e).__name__}: {e}") from e
        if result.images_substituted:
            raise CaptionError(f"model {self.spec!r} did not receive the image (replaced by text)")
        text = result.text.strip()
        if not text:
            raise CaptionError(f"model {self.spec!r} returned an empty caption")
        info = {
            "format": facts.format,
            "width": facts.width,
            "height": facts.height,
            "kind": facts.kind,
            "exif_date": facts.exif_date,
            "finish_reason": result.finish_reason,
            "served_by": result.model,
        }
        return CaptionOutput(text=text, usage=result.usage, cached=result.cached, image_info=info)

    async def aclose(self) -> None:
        """Close the model's connections when it was built for us (``owned``); else the caller owns it."""
        if self._owned and hasattr(self.model, "aclose"):
            await self.model.aclose()
