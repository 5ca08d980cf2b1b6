"""Captioning settings: the two presets' named options, the prompts, and the cache key that
decides when a caption is reused.

Presets (``docs/protocol.md``, "Captions"):

=====================  =============================  ==========================
option                 ``paper`` (official)           ``harmonized``
=====================  =============================  ==========================
``caption_prompt``     ``official`` (bulleted request) ``prose`` (one paragraph)
``image_encoding``     ``raw`` (file bytes, own MIME)  ``jpeg1024`` (≤1,024 px JPEG)
``image_detail``       ``auto`` (sent in the part)     ``none`` (not sent)
``truncation_marker``  ``"... [truncated]"``           ``""``
``partial_chars``      ``replace`` (U+FFFD kept)       ``drop``
=====================  =============================  ==========================

Official source: varib1/H2HMEM ``caption/gpt_4o_caption.py`` and ``caption/run_caption.sh`` @ b6070899.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import defaults
from .._protocol_text import load_protocol_text
from ..llm import count_tokens, get_encoding, truncate_tokens
from ..presets import DEFAULT_PRESET, Preset, fill_from_preset

DEFAULT_MODEL = defaults.CAPTION_MODEL
"""The paper captioned every image with GPT-4o (``docs/baselines.md``)."""

OCR_MODEL = "ocr"
"""Model spec of the offline fallback: Pillow facts plus Tesseract text."""

DEFAULT_PROMPT = (
    "Describe this image in one concise paragraph of at most {max_tokens} tokens. Say what the core "
    "scene is; name the main objects, people or animals; quote any visible text exactly; say what is "
    "happening; and give the setting and mood. Plain prose only: no lists, headings or preamble."
)
"""The ``prose`` prompt (``harmonized``): our wording of the request, asking for one fluent
paragraph within the token limit. ``{max_tokens}`` is replaced by the caption limit."""

OFFICIAL_PROMPT_FILE = "official_caption_prompt.txt"
"""Package data file holding the official bulleted request (``caption_prompt=official``)."""

OFFICIAL_TRUNCATION_MARKER = "... [truncated]"
"""Appended by the official captioner to a caption cut at the limit."""

CaptionPrompt = Literal["official", "prose"]
ImageEncoding = Literal["raw", "jpeg1024"]
ImageDetail = Literal["auto", "low", "high", "none"]
PartialChars = Literal["replace", "drop"]

OPTION_NAMES: tuple[str, ...] = (
    "caption_prompt",
    "image_encoding",
    "image_detail",
    "truncation_marker",
    "partial_chars",
)
"""The options a preset decides (each can be overridden on its own)."""

CAPTION_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "caption_prompt": "official",
        "image_encoding": "raw",
        "image_detail": "auto",
        "truncation_marker": OFFICIAL_TRUNCATION_MARKER,
        "partial_chars": "replace",
    },
    "harmonized": {
        "caption_prompt": "prose",
        "image_encoding": "jpeg1024",
        "image_detail": "none",
        "truncation_marker": "",
        "partial_chars": "drop",
    },
}
"""Resolved option values of each preset."""


def official_prompt() -> str:
    """The official caption request template (``{max_tokens}`` not yet filled in)."""
    return load_protocol_text(__package__, OFFICIAL_PROMPT_FILE).text


class CaptionSettings(BaseModel):
    """What changes a caption (and so is part of its cache key).

    Options left out (or None) take the value of ``preset``; generation parameters are the
    official ones in both presets (temperature 0.7, 1,200 new tokens, 256-token cut).

    Raises:
        ValueError: unknown preset or option value.
    """

    model_config = ConfigDict(frozen=True)

    preset: Preset = DEFAULT_PRESET
    max_tokens: int = Field(defaults.CAPTION_MAX_TOKENS, ge=1)
    """Caption limit in ``cl100k_base`` tokens; longer captions are cut and marked truncated
    (paper: 256-token captions)."""
    temperature: float = Field(defaults.CAPTION_TEMPERATURE, ge=0.0, le=2.0)
    """Sampling temperature of the caption model (official: 0.7)."""
    max_new_tokens: int = Field(defaults.CAPTION_MAX_NEW_TOKENS, ge=1)
    """Generation limit sent to the model, before the cut to ``max_tokens`` (official: 1,200)."""
    caption_prompt: CaptionPrompt = "official"
    """``official``: the bulleted request of ``gpt_4o_caption.py``; ``prose``: :data:`DEFAULT_PROMPT`."""
    prompt: str | None = None
    """A custom prompt template; when set it replaces ``caption_prompt``'s text."""
    image_encoding: ImageEncoding = "raw"
    """``raw``: the file's bytes as a data URL with the MIME type of its extension (official);
    ``jpeg1024``: re-encoded to JPEG, long side at most 1,024 px."""
    image_detail: ImageDetail = "auto"
    """The image part's ``detail`` field (official ``"auto"``); ``none`` sends no such field."""
    truncation_marker: str = OFFICIAL_TRUNCATION_MARKER
    """Appended to a caption cut at ``max_tokens``."""
    partial_chars: PartialChars = "replace"
    """A multi-byte character split by the cut: ``replace`` keeps tiktoken's U+FFFD (official
    ``decode(tokens[:n])``), ``drop`` removes it."""

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        return fill_from_preset(data, CAPTION_PRESETS, keep_none=("prompt",))

    @classmethod
    def for_preset(cls, preset: str = DEFAULT_PRESET, **overrides: Any) -> CaptionSettings:
        """Settings of ``preset`` with ``overrides`` (None values ignored) applied."""
        return cls(preset=cast(Preset, preset), **overrides)  # any name: validation raises ValueError

    def options(self) -> dict[str, Any]:
        """The resolved value of every preset option (recorded with each caption and run)."""
        return {name: getattr(self, name) for name in OPTION_NAMES}

    @property
    def template(self) -> str:
        if self.prompt is not None:
            return self.prompt
        return official_prompt() if self.caption_prompt == "official" else DEFAULT_PROMPT

    @property
    def rendered_prompt(self) -> str:
        """The prompt text actually sent."""
        return self.template.replace("{max_tokens}", str(self.max_tokens))

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.rendered_prompt.encode("utf-8")).hexdigest()


TOKEN_ENCODING = "cl100k_base"
"""Captions are measured and cut with tiktoken ``cl100k_base`` (official captioner)."""


def cut_caption(text: str, settings: CaptionSettings) -> tuple[str, int, bool]:
    """``(final text, original cl100k tokens, was cut)``: ``text`` unchanged when it has at most
    ``settings.max_tokens`` tokens, else its first ``max_tokens`` tokens decoded (a split
    multi-byte character kept as U+FFFD or dropped, per ``partial_chars``) plus
    ``truncation_marker``. Official: ``decode(tokens[:256]) + "... [truncated]"``.
    """
    n = count_tokens(text, TOKEN_ENCODING)
    if n <= settings.max_tokens:
        return text, n, False
    if settings.partial_chars == "replace":
        enc = get_encoding(TOKEN_ENCODING)
        head = enc.decode(enc.encode(text, disallowed_special=())[: settings.max_tokens])
    else:
        head = truncate_tokens(text, settings.max_tokens, TOKEN_ENCODING)
    return head + settings.truncation_marker, n, True


def cache_key(image_sha256: str, model: str, settings: CaptionSettings, *, uses_prompt: bool = True) -> str:
    """SHA-256 (hex) over what decides a caption: image content, model identity, prompt, limits
    and the preset options that change the request or the stored text.

    ``uses_prompt=False`` (the OCR fallback, which ignores prompt, temperature and image
    encoding) leaves those out, so changing them does not redo OCR captions. Options equal to
    the ``harmonized`` values are left out too, so caption files written before presets existed
    keep their keys; any other value (``paper``'s raw bytes, ``detail``, marker…) makes a new key.
    """
    parts: dict[str, object] = {"image_sha256": image_sha256, "model": model, "max_tokens": settings.max_tokens}
    if uses_prompt:
        parts.update(
            prompt_sha256=settings.prompt_sha256,
            temperature=settings.temperature,
            max_new_tokens=settings.max_new_tokens,
        )
    names = OPTION_NAMES[1:] if uses_prompt else ("truncation_marker", "partial_chars")
    base = CAPTION_PRESETS["harmonized"]
    parts.update({n: getattr(settings, n) for n in names if getattr(settings, n) != base[n]})
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()
