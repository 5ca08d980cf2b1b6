"""OpenAI-compatible chat backend over httpx (no SDK: the central wrapper owns retries, and raw
responses let every failure be classified exactly — status, ``Retry-After``, malformed bodies).

Wire format: only standard content-part keys (``{"type": "text", "text": …}``,
``{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,…"}}``); a message whose
parts are all text is sent as one string (text-only servers reject part lists); JSON mode is
``response_format={"type": "json_object"}``.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import re
import threading
import time
import weakref
from typing import Any

import httpx

from . import _known, _tokens
from ._backend import BackendReply
from ._errors import (BadRequestError, BadResponseError, ConnectionFailure, ContentFilterError,
                      ImageNotSupportedError, ModelError, ModelTimeoutError, RateLimitError, RequestInfo,
                      ServerError)
from ._images import JPEG_QUALITY, MAX_SIDE_PX, flatten_text, image_data_url
from ._types import GenerationConfig, ImagePart, Message

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Error text of servers that cannot take image parts (llama.cpp's server on a text-only model
# answers HTTP 500 "can only concatenate str (not "list") to str"; vLLM/OpenAI say "image"/"vision").
_IMAGE_REFUSAL = re.compile(r"image|vision|multimodal|multi-modal|not \"?list\"?|concatenate str", re.I)


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if isinstance(data, dict) and data.get("detail"):
            return str(data["detail"])
    except ValueError:
        pass
    return resp.text[:300] or resp.reason_phrase


def classify_http_error(resp: httpx.Response, info: RequestInfo, *, had_images: bool) -> ModelError:
    """The typed error for a non-2xx response."""
    status = resp.status_code
    message = _error_message(resp)
    retry_after = parse_retry_after(resp.headers)
    if had_images and status in (400, 415, 422, 500) and _IMAGE_REFUSAL.search(message):
        return ImageNotSupportedError(f"server refused image parts: {message}", info, status=status, body=resp.text)
    if status == 429:
        return RateLimitError(message, info, status=status, body=resp.text, retry_after=retry_after)
    if status >= 500:
        return ServerError(message, info, status=status, body=resp.text, retry_after=retry_after)
    return BadRequestError(message, info, status=status, body=resp.text)


class OpenAIBackend:
    """Chat completions at one or more OpenAI-compatible base URLs, used round-robin (each
    attempt, retries included, goes to the next URL)."""

    kind = "openai"
    supports_images = True

    def __init__(self, model: str, base_urls: list[str], api_key: str | None, *, concurrency: int,
                 context_tokens: int | None = None):
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
        # httpx clients are bound to the event loop that first used them.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()

    def identity(self) -> dict[str, Any]:
        urls = self.base_urls[0] if len(self.base_urls) == 1 else sorted(self.base_urls)
        return {"backend": self.kind, "model": self.model, "base_url": urls,
                "image": {"format": "jpeg", "max_side": MAX_SIDE_PX, "quality": JPEG_QUALITY}}

    def count_tokens(self, text: str) -> int:
        return _tokens.count_tokens(text, self.encoding)

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            limits = httpx.Limits(max_connections=None,
                                  max_keepalive_connections=max(self.concurrency, 1) * len(self.base_urls))
            client = httpx.AsyncClient(headers=headers, limits=limits, timeout=None)
            self._clients[loop] = client
        return client

    def next_base_url(self) -> str:
        with self._cycle_lock:
            return next(self._cycle)

    async def _wire_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        wire = []
        for msg in messages:
            text = flatten_text(msg.content)
            if text is not None:
                wire.append({"role": msg.role, "content": text})
                continue
            parts: list[dict[str, Any]] = []
            for p in msg.content:  # type: ignore[union-attr]
                if isinstance(p, ImagePart):
                    url = await asyncio.to_thread(image_data_url, p.path)
                    parts.append({"type": "image_url", "image_url": {"url": url}})
                else:
                    parts.append({"type": "text", "text": p.text})
            wire.append({"role": msg.role, "content": parts})
        return wire

    def request_body(self, wire: list[dict[str, Any]], config: GenerationConfig) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": wire, "temperature": config.temperature,
                                "max_tokens": config.max_tokens}
        if config.seed is not None:
            body["seed"] = config.seed
        if config.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    async def complete(self, messages: list[Message], config: GenerationConfig, *, description: str,
                       timeout_s: float) -> BackendReply:
        base_url = self.next_base_url()
        info = RequestInfo(self.model, base_url, description)
        had_images = any(isinstance(p, ImagePart) for m in messages if not isinstance(m.content, str)
                         for p in m.content)
        body = self.request_body(await self._wire_messages(messages), config)
        try:
            resp = await asyncio.wait_for(
                self._client().post(f"{base_url}/chat/completions", json=body,
                                    timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0))),
                timeout_s)
        except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
            raise ModelTimeoutError(f"no reply within {timeout_s:g} s ({type(exc).__name__})", info) from exc
        except httpx.TransportError as exc:
            raise ConnectionFailure(f"{type(exc).__name__}: {exc}", info) from exc
        if resp.status_code >= 300:
            raise classify_http_error(resp, info, had_images=had_images)
        return parse_completion(resp.text, info)

    async def aclose(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.aclose()


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
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    content = message.get("content")
    if finish == "content_filter":
        raise ContentFilterError("the provider's content filter withheld the answer", info, body=text[:500])
    if not isinstance(content, str):
        raise BadResponseError(f"reply message has no text content (finish_reason={finish!r})", info, body=text[:500])
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return BackendReply(text=content, finish_reason=finish, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                        completion_tokens=int(usage.get("completion_tokens") or 0))
