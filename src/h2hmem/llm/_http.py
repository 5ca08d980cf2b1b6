"""HTTP transport for OpenAI-compatible servers: aiohttp sessions (one per event loop) and the
mapping of every transport outcome to a typed :class:`ModelError`.

aiohttp rather than httpx (or the openai SDK, which is built on httpx): measured here against
the mock server at 64 concurrent requests, httpx managed ~70 requests/s and aiohttp ~770/s on
2 cores; benchmarks run thousands of calls at concurrency 64.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from .._json import dumps_bytes
from ._errors import (
    BadRequestError,
    ConnectionFailure,
    ImageNotSupportedError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    RequestInfo,
    ServerError,
)

# Error text of servers that cannot take image parts (llama.cpp's server on a text-only model
# answers HTTP 500 "can only concatenate str (not "list") to str"; vLLM/OpenAI say "image"/"vision").
_IMAGE_REFUSAL = re.compile(r"image|vision|multimodal|multi-modal|not \"?list\"?|concatenate str", re.I)


_JSON_TYPE = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: Mapping[str, str]
    text: str


class SessionPool:
    """One ``aiohttp.ClientSession`` per running event loop (sessions are bound to their loop).

    Each session is closed when its loop shuts down (``asyncio.run`` and ``asyncio.Runner`` close
    async generators on exit; a started async generator per session does the closing), so callers
    that never call :meth:`aclose` leave no open connections or "Unclosed client session" noise.
    """

    def __init__(self, api_key: str | None = None):
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._sessions: dict[int, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession, Any]] = {}

    async def session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        entry = self._sessions.get(id(loop))
        if entry is not None and entry[0] is loop and not entry[1].closed:
            return entry[1]
        for key, (other, _, _) in list(self._sessions.items()):
            if other.is_closed():
                del self._sessions[key]
        # no connection cap here: the model's semaphore bounds requests in flight
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0), headers=self._headers
        )
        closer = _close_at_shutdown(weakref.ref(self), loop, session)
        await closer.__anext__()  # runs to its yield at once: no other task can interleave
        self._sessions[id(loop)] = (loop, session, closer)
        return session

    async def aclose(self) -> None:
        """Close the running loop's session now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        entry = self._sessions.pop(id(loop), None)
        if entry is not None and entry[0] is loop:
            await entry[1].close()
            await entry[2].aclose()


async def _close_at_shutdown(
    pool_ref: weakref.ref[SessionPool], loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
) -> AsyncGenerator[None, None]:
    # Holds the pool weakly: a strong reference would form a cycle (pool → entry → this generator
    # → pool) that the garbage collector may break by finalising the open session first.
    try:
        yield
    finally:
        pool = pool_ref()
        if pool is not None:
            entry = pool._sessions.get(id(loop))
            if entry is not None and entry[1] is session:
                del pool._sessions[id(loop)]
        if not session.closed:
            await session.close()


async def post_json(
    pool: SessionPool, url: str, body: dict[str, Any], *, timeout_s: float, info: RequestInfo
) -> HttpReply:
    """POST ``body`` as compact UTF-8 JSON; raise :class:`ModelTimeoutError` (no reply within ``timeout_s``)
    / :class:`ConnectionFailure` (refused, reset or timed-out connections — a server that cannot be
    reached —, bodies cut short) for transport failures."""
    connect_s = min(timeout_s, 30.0)
    timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_s)
    try:
        data = dumps_bytes(body, default=None)  # aiohttp's json= would run the standard encoder
        async with (await pool.session()).post(url, data=data, headers=_JSON_TYPE, timeout=timeout) as resp:
            raw = await resp.read()
            return HttpReply(resp.status, resp.headers, raw.decode("utf-8", errors="replace"))
    except aiohttp.ConnectionTimeoutError as exc:  # a host that is off or drops packets: unreachable, not slow
        raise ConnectionFailure(f"no connection within {connect_s:g} s", info) from exc
    except asyncio.TimeoutError as exc:  # aiohttp.ServerTimeoutError is a subclass
        raise ModelTimeoutError(f"no reply within {timeout_s:g} s", info) from exc
    except aiohttp.ClientError as exc:
        raise ConnectionFailure(f"{type(exc).__name__}: {exc}", info) from exc


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
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


def error_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        data = json.loads(text)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        if isinstance(data, dict) and data.get("detail"):
            return str(data["detail"])
    except ValueError:
        pass
    return text[:300] or "(empty body)"


def classify_http_error(reply: HttpReply, info: RequestInfo, *, had_images: bool) -> ModelError:
    """The typed error for a non-2xx reply: 429 → :class:`RateLimitError`, 5xx →
    :class:`ServerError`, other → :class:`BadRequestError`; a 400/415/422/500 to a request with
    image parts whose message points at the images → :class:`ImageNotSupportedError`."""
    status = reply.status
    message = error_message(reply.text)
    retry_after = parse_retry_after(reply.headers)
    if had_images and status in (400, 415, 422, 500) and _IMAGE_REFUSAL.search(message):
        return ImageNotSupportedError(f"server refused image parts: {message}", info, status=status, body=reply.text)
    if status == 429:
        return RateLimitError(message, info, status=status, body=reply.text, retry_after=retry_after)
    if status >= 500:
        return ServerError(message, info, status=status, body=reply.text, retry_after=retry_after)
    return BadRequestError(message, info, status=status, body=reply.text)
