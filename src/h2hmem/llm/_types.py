"""Message, content-part and result types shared by every model backend and caller.

A message's content is a string or a list of parts; an :class:`ImagePart` refers to an image
file on disk (sent as a data URL by the OpenAI-compatible backend, or replaced by
``[Image <name>: <caption>]`` by text-only backends).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from .. import defaults
from ..records import Usage as Usage

Stage = Literal["caption", "memory_build", "answer", "judge", "other"]
"""Accounting buckets for tokens, calls and cost (issue: usage per stage in the manifest)."""


class TextPart(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image given to the model. ``path`` may be ``None`` when the file is missing."""

    model_config = ConfigDict(frozen=True)
    type: Literal["image"] = "image"
    name: str
    """Human-readable name shown to text-only models, e.g. ``"session3/1.png"``."""
    path: Path | None = None
    caption: str | None = None
    """Caption used when the backend cannot see pixels (or the file is missing)."""
    encoding: Literal["jpeg1024", "raw"] = "jpeg1024"
    """How an OpenAI-compatible backend sends the pixels: ``jpeg1024`` re-encodes to JPEG with the
    long side at most 1,024 px; ``raw`` sends the file's own bytes with the MIME type of its
    extension (the official captioner)."""
    detail: Literal["auto", "low", "high"] | None = None
    """OpenAI's ``image_url.detail`` field; None sends none."""


ContentPart = TextPart | ImagePart


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str | list[ContentPart]
    as_parts: bool = False
    """Send ``content`` to an OpenAI-compatible server as a list of parts even when it holds text
    only (the official native scripts' wire format, preset ``paper``); by default text-only content
    goes as one string. Part of the cache key where it changes the wire (content without an image)."""


class GenerationConfig(BaseModel):
    """Generation parameters. Part of the cache key (unlike concurrency or retry settings)."""

    model_config = ConfigDict(frozen=True)
    temperature: float = Field(default=defaults.ANSWER_TEMPERATURE, ge=0.0)
    """Paper's answer temperature (docs/baselines.md; :data:`h2hmem.defaults.ANSWER_TEMPERATURE`); not negative."""
    max_tokens: int | None = Field(default=defaults.ANSWER_MAX_TOKENS, ge=1)
    """None sends no limit (the official judge sets none); else at least 1."""
    json_mode: bool = False
    seed: int | None = None
    top_p: float | None = None
    json_schema: str | None = None
    """A JSON schema (as JSON text: ``{"name": …, "schema": …, "strict": true}``) the reply must follow; sent
    as ``response_format={"type": "json_schema", "json_schema": …}`` (A-Mem's note writer under the preset
    ``paper``); a backend without schema support treats it as ``json_mode``."""
    """Nucleus sampling; ``None`` = not sent (the server's default). The official Full (Text) and Naive RAG
    scripts send 0.9 (preset ``paper``)."""
    attempt: int = Field(default=0, ge=0)
    """Which try of a request this is, when the caller asks again because the reply was unusable (A-Mem's
    note writer under ``paper``: up to 3 tries). Never sent; part of the cache key (from 1 on), so a
    retry reaches the model instead of the cached unusable reply, and a rerun replays every try from the
    cache. Recorded in transcripts (``params.attempt``, from the 2nd try on)."""


class ChatResult(BaseModel):
    text: str
    model: str
    usage: Usage
    latency_s: float
    """Wall seconds of the call, retries included, without ``queue_s``."""
    cached: bool = False
    finish_reason: str | None = None
    images_substituted: int = 0
    queue_s: float = 0.0
    """Seconds the call waited for a free slot (the concurrency limit, or a local model busy
    with another request) before it was served."""
    """Image parts replaced by text because the backend cannot see pixels."""


@runtime_checkable
class ChatModel(Protocol):
    """Chat completion with text and image parts. Implementations own cache, retries,
    concurrency and usage accounting, so callers just ``await model.chat(...)``."""

    spec: str
    """The model spec string it was built from, e.g. ``"openai:gpt-4o-mini"``."""
    supports_images: bool

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult: ...
