"""Captioning settings, the default prompt and the cache key that decides when a caption is reused."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MODEL = "openai:gpt-4o"
"""The paper captioned every image with GPT-4o (``shared/spec/baselines.md``)."""

OCR_MODEL = "ocr"
"""Model spec of the offline fallback: Pillow facts plus Tesseract text."""

DEFAULT_PROMPT = (
    "Describe this image in one concise paragraph of at most {max_tokens} tokens. Say what the core "
    "scene is; name the main objects, people or animals; quote any visible text exactly; say what is "
    "happening; and give the setting and mood. Plain prose only: no lists, headings or preamble."
)
"""Our wording of the official caption request (core scene, main elements, visible text,
actions/state, setting), which asked for one fluent paragraph within the token limit.
``{max_tokens}`` is replaced by the caption limit."""


class CaptionSettings(BaseModel):
    """What changes a caption (and so is part of its cache key).

    Defaults are the official captioner's settings (varib1/H2HMEM ``caption/caption.py``).
    """

    model_config = ConfigDict(frozen=True)

    max_tokens: int = Field(256, ge=1)
    """Caption limit in ``cl100k_base`` tokens; longer captions are cut and marked truncated
    (paper: 256-token captions)."""
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    """Sampling temperature of the caption model (official: 0.7)."""
    max_new_tokens: int = Field(1200, ge=1)
    """Generation limit sent to the model, before the cut to ``max_tokens`` (official: 1,200)."""
    prompt: str = DEFAULT_PROMPT
    """Prompt template; ``{max_tokens}`` is replaced by the limit."""

    @property
    def rendered_prompt(self) -> str:
        """The prompt text actually sent."""
        return self.prompt.replace("{max_tokens}", str(self.max_tokens))

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.rendered_prompt.encode("utf-8")).hexdigest()


def cache_key(image_sha256: str, model: str, settings: CaptionSettings, *, uses_prompt: bool = True) -> str:
    """SHA-256 (hex) over what decides a caption: image content, model identity, prompt and limits.

    ``uses_prompt=False`` (the OCR fallback, which ignores prompt and temperature) leaves those
    out, so changing the prompt does not redo OCR captions.
    """
    parts: dict[str, object] = {"image_sha256": image_sha256, "model": model, "max_tokens": settings.max_tokens}
    if uses_prompt:
        parts.update(prompt_sha256=settings.prompt_sha256, temperature=settings.temperature,
                     max_new_tokens=settings.max_new_tokens)
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()
