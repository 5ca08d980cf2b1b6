"""OpenAI-compatible chat backend over aiohttp (no SDK: the central wrapper owns retries, and raw
responses let every failure be classified exactly — status, ``Retry-After``, malformed bodies).

Wire format: only standard content-part keys (``{"type": "text", "text": …}``,
``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,…"}}``, plus ``"detail"`` when the
part sets one; a ``raw`` part's URL carries the file's own bytes and type); a message whose
parts are all text is sent as one string (text-only servers reject part lists); JSON mode is
``response_format={"type": "json_object"}``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any

from . import _known, _tokens
from ._backend import BackendReply
from ._errors import BadResponseError, ContentFilterError, RequestInfo
from ._http import SessionPool, classify_http_error, post_json
from ._images import JPEG_QUALITY, MAX_SIDE_PX, flatten_text, part_data_url
from ._types import ContentPart, GenerationConfig, ImagePart, Message, TextPart

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIBackend:
    """Chat completions at one or more OpenAI-compatible base URLs, used round-robin (each
    attempt, retries included, goes to the next URL)."""

    kind = "openai"
    supports_images = True

    def __init__(
        self,
        model: str,
        base_urls: list[str],
        api_key: str | None,
        *,
        concurrency: int,
        context_tokens: int | None = None,
    ):
        if not base_urls:
            raise ValueError("at least one base URL is needed")
        self.model = model
        self.base_urls = [u.rstrip("/") for u in base_urls]
        self.api_key = api_key
        self.concurrency = concurrency
        self.context_tokens = context_tokens or _known.context_tokens_for(model)
        self.encoding = _known.encoding_for(model)
        self._cycle = itertools.cycle(self.base_urls)
        self._cycle_lock = threading.Lock()
        self._pool = SessionPool(api_key)

    def identity(self) -> dict[str, Any]:
        urls = self.base_urls[0] if len(self.base_urls) == 1 else sorted(self.base_urls)
        return {
            "backend": self.kind,
            "model": self.model,
            "base_url": urls,
            "image": {"format": "jpeg", "max_side": MAX_SIDE_PX, "quality": JPEG_QUALITY},
        }

    def count_tokens(self, text: str) -> int:
        return _tokens.count_tokens(text, self.encoding)

    def next_base_url(self) -> str:
        with self._cycle_lock:
            return next(self._cycle)

    async def _wire_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        wire: list[dict[str, Any]] = []
        for msg in messages:
            text = flatten_text(msg.content)
            if text is not None and not msg.as_parts:
                wire.append({"role": msg.role, "content": text})
                continue
            content: list[ContentPart] = [TextPart(text=msg.content)] if isinstance(msg.content, str) else msg.content
            parts: list[dict[str, Any]] = []
            for p in content:
                if isinstance(p, ImagePart):
                    url = await asyncio.to_thread(part_data_url, p)
                    image_url = {"url": url} if p.detail is None else {"url": url, "detail": p.detail}
                    parts.append({"type": "image_url", "image_url": image_url})
                else:
                    parts.append({"type": "text", "text": p.text})
            wire.append({"role": msg.role, "content": parts})
        return wire

    def request_body(self, wire: list[dict[str, Any]], config: GenerationConfig) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": wire, "temperature": config.temperature}
        if config.max_tokens is not None:
            body["max_tokens"] = config.max_tokens
        if config.top_p is not None:
            body["top_p"] = config.top_p
        if config.seed is not None:
            body["seed"] = config.seed
        if config.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": json.loads(config.json_schema)}
        elif config.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, description: str, timeout_s: float
    ) -> BackendReply:
        base_url = self.next_base_url()
        info = RequestInfo(self.model, base_url, description)
        had_images = any(
            isinstance(p, ImagePart) for m in messages if not isinstance(m.content, str) for p in m.content
        )
        body = self.request_body(await self._wire_messages(messages), config)
        reply = await post_json(self._pool, f"{base_url}/chat/completions", body, timeout_s=timeout_s, info=info)
        if not 200 <= reply.status < 300:
            raise classify_http_error(reply, info, had_images=had_images)
        return parse_completion(reply.text, info)

    async def aclose(self) -> None:
        await self._pool.aclose()


def parse_completion(text: str, info: RequestInfo) -> BackendReply:
    """A chat-completion JSON body → :class:`BackendReply`; raises :class:`BadResponseError`
    (not JSON, no/empty ``choices``, no message content) or :class:`ContentFilterError`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BadResponseError(f"reply is not valid JSON ({exc}); body starts {text[:80]!r}", info) from exc
    if not isinstance(data, dict):
        raise BadResponseError("reply JSON is not an object", info)
    choices = data.get("choices")
    if choices is None:
        raise BadResponseError("reply has no 'choices'", info, body=text[:500])
    if not isinstance(choices, list) or not choices:
        raise BadResponseError("reply has empty 'choices'", info, body=text[:500])
    choice = choices[0] if isinstance(choices[0], dict) else {}
    finish = choice.get("finish_reason")
    raw_message = choice.get("message")
    message = raw_message if isinstance(raw_message, dict) else {}
    content = message.get("content")
    if finish == "content_filter":
        raise ContentFilterError("the provider's content filter withheld the answer", info, body=text[:500])
    if not isinstance(content, str):
        raise BadResponseError(f"reply message has no text content (finish_reason={finish!r})", info, body=text[:500])
    raw_usage = data.get("usage")
    usage = raw_usage if isinstance(raw_usage, dict) else {}
    return BackendReply(
        text=content,
        finish_reason=finish,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )
