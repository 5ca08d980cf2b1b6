"""The one wrapper every chat backend runs behind: cache, retries, per-call timeout, a global
concurrency limit and usage accounting per stage live here once."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sqlite3
import time
import weakref
from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from .. import defaults
from ._backend import Backend, BackendReply
from ._cache import CacheEntry, RequestCache, cache_key
from ._calllog import call_params, emit_call, messages_as_sent, recording
from ._errors import OutputTruncatedError, RequestInfo
from ._images import file_sha256, messages_fingerprint, prepare_messages
from ._prices import Prices, cost_usd
from ._retry import RetryPolicy, call_with_retries
from ._types import ChatResult, GenerationConfig, ImagePart, Message, Stage, TextPart, Usage

log = logging.getLogger(__name__)
_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.lru_cache(maxsize=256)
def _key_settings(config: GenerationConfig) -> Mapping[str, Any]:
    """The generation settings in a request's cache key, worked out once per distinct (frozen) config:
    :func:`~h2hmem.llm._calllog.call_params` without ``top_p`` and ``json_schema`` when unset (so the
    keys of requests cached before those fields existed stay valid)."""
    settings = dict(call_params(config))
    for newer in ("top_p", "json_schema"):
        if settings.get(newer) is None:
            settings.pop(newer, None)
    return MappingProxyType(settings)


def describe_request(messages: list[Message], stage: str, n_images: int) -> str:
    """Short human description for error messages: stage, counts and the start of the last user text."""
    last = ""
    for m in reversed(messages):
        if m.role == "user":
            last = (
                m.content[:400]
                if isinstance(m.content, str)
                else " ".join(p.text[:400] for p in m.content if isinstance(p, TextPart))[:400]
            )
            break
    last = " ".join(last.split())  # only the head: prompts run to tens of kB and this runs on every call
    if len(last) > 60:
        last = last[:57] + "..."
    return f"stage={stage}, {len(messages)} messages, {n_images} images, last user text {last!r}"


class ModelClient:
    """A :class:`~h2hmem.llm.ChatModel`: a backend plus cache, retries, timeout, concurrency
    limit and usage accounting. Build it with :func:`~h2hmem.llm.load_chat_model`.

    ``await chat(messages, config, stage=...)`` returns a :class:`ChatResult`:

    1. image parts become ``[Image <name>: <caption>]`` text when the model is text-only or the
       file is missing (counted in ``images_substituted``);
    2. with a cache, a hit returns the stored text with ``cached=True`` and
       ``usage == Usage(cached_calls=1)`` (no tokens or cost: nothing was sent);
    3. otherwise the backend is called under the concurrency semaphore (held per attempt, not
       during retry waits), retried per ``retry`` on transient errors; the last error is raised
       (never cached, never turned into an answer);
    4. ``finish_reason == "length"`` returns the cut text (default ``on_truncation="return"``)
       or raises :class:`OutputTruncatedError` (``"raise"``); only returned replies are cached.

    5. every call (hit, paid or failed) is reported to the transcript sink of the running context,
       if one is set (:func:`~h2hmem.llm.record_calls`; paid calls before their cache entry).

    A request cache that cannot be written (disk full, file-size limit, ``disk I/O error``) is
    not an error of the call: the reply, paid for, is returned, one warning is logged and no
    further reply is stored (lookups go on); one that cannot be read is dropped likewise (a miss).
    An error of the transcript sink (a :class:`~h2hmem.LocalIOError`) is raised: the run's own
    record of the call could not be written.

    ``latency_s`` is the wall time of the whole call, retries included, less the time spent
    waiting for a slot (``queue_s``: the concurrency semaphore, or a local model serving
    another request), so a queue of requests on one local model is not reported as latency.
    """

    def __init__(
        self,
        spec: str,
        backend: Backend,
        *,
        cache: RequestCache | None = None,
        concurrency: int = defaults.CONCURRENCY,
        timeout_s: float = defaults.TIMEOUT_S,
        retry: RetryPolicy | None = None,
        prices: Prices | None = None,
        refresh: bool = False,
        text_only: bool = False,
        on_truncation: Literal["return", "raise"] = "return",
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.spec = spec
        self.backend = backend
        self.cache = cache
        self.cache_error: str | None = None
        """Why the request cache stopped being written (or read) in this process; None while it works."""
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.prices = prices
        self.refresh = refresh
        self.text_only = text_only
        self.on_truncation = on_truncation
        self.supports_images = backend.supports_images and not text_only
        self._usage: dict[str, Usage] = defaultdict(Usage)
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    # ----- model facts -------------------------------------------------------------------------
    @property
    def context_tokens(self) -> int:
        """The model's context window in tokens."""
        return self.backend.context_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (tiktoken for OpenAI models, the GGUF vocabulary locally)."""
        return self.backend.count_tokens(text)

    # ----- accounting --------------------------------------------------------------------------
    def usage_by_stage(self) -> dict[str, Usage]:
        """Usage summed per stage (copies)."""
        return {stage: u.model_copy() for stage, u in self._usage.items()}

    def total_usage(self) -> Usage:
        total = Usage()
        for u in self._usage.values():
            total = total + u
        return total

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        return sem

    def cache_key(self, messages: list[Message], config: GenerationConfig) -> str:
        """Cache key of an already prepared request (see :meth:`chat`)."""
        return cache_key(
            {
                "identity": self.backend.identity(),
                "messages": messages_fingerprint(messages),
                "config": dict(_key_settings(config)),
            }
        )

    # ----- the call ----------------------------------------------------------------------------
    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        config = config or GenerationConfig()
        start = time.perf_counter()
        prepared, substituted = prepare_messages(messages, send_images=self.supports_images)
        key = self.cache_key(prepared, config) if self.cache is not None else None
        if key is not None and not self.refresh and self.cache is not None:
            try:
                hit = self.cache.get(key)
            except (sqlite3.Error, OSError) as e:
                self._drop_cache(e, "read")
                hit = None
            if hit is not None:
                usage = Usage(cached_calls=1)
                self._usage[stage] = self._usage[stage] + usage
                self._transcript(
                    stage,
                    prepared,
                    config,
                    key,
                    hit.text,
                    hit.finish_reason,
                    usage,
                    time.perf_counter() - start,
                    substituted,
                    cached=True,
                )
                return ChatResult(
                    text=hit.text,
                    model=self.spec,
                    usage=usage,
                    latency_s=time.perf_counter() - start,
                    cached=True,
                    finish_reason=hit.finish_reason,
                    images_substituted=substituted,
                )

        n_images = sum(isinstance(p, ImagePart) for m in prepared if not isinstance(m.content, str) for p in m.content)
        description = describe_request(messages, stage, n_images)

        queued = 0.0

        async def attempt() -> BackendReply:
            nonlocal queued
            t_wait = time.perf_counter()
            async with self._semaphore():
                queued += time.perf_counter() - t_wait
                reply = await self.backend.complete(prepared, config, description=description, timeout_s=self.timeout_s)
                queued += reply.queue_s
                return reply

        try:
            reply = await call_with_retries(attempt, self.retry)
        except Exception as e:
            self._transcript(
                stage,
                prepared,
                config,
                key,
                None,
                None,
                Usage(),
                time.perf_counter() - start,
                substituted,
                error=f"{type(e).__name__}: {e}",
            )
            raise
        latency = time.perf_counter() - start - queued
        if reply.finish_reason == "length" and self.on_truncation == "raise":
            self._transcript(
                stage,
                prepared,
                config,
                key,
                reply.text,
                reply.finish_reason,
                Usage(
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    calls=1,
                    latency_s=latency,
                ),
                latency,
                substituted,
                error="OutputTruncatedError",
            )
            raise OutputTruncatedError(
                f"answer hit max_tokens={config.max_tokens}", RequestInfo(self.spec, None, description)
            )
        cost = (
            0.0
            if self.backend.kind == "local"
            else cost_usd(self.backend.model, reply.prompt_tokens, reply.completion_tokens, self.prices)
        )
        usage = Usage(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            calls=1,
            cost_usd=cost,
            latency_s=latency,
        )
        self._usage[stage] = self._usage[stage] + usage
        text = _valid_unicode(reply.text)
        # the transcript before the cache: every reply the cache can serve later has its paid record
        self._transcript(stage, prepared, config, key, text, reply.finish_reason, usage, latency, substituted)
        if key is not None and self.cache is not None and self.cache_error is None:  # key is None without a cache
            try:
                self.cache.put(
                    key,
                    CacheEntry(
                        self.spec,
                        text,
                        reply.finish_reason,
                        reply.prompt_tokens,
                        reply.completion_tokens,
                    ),
                )
            except (sqlite3.Error, OSError) as e:
                # The reply is paid for: keep it, lose only the cache entry (disk full, I/O error).
                self._drop_cache(e, "write")
        return ChatResult(
            text=text,
            model=self.spec,
            usage=usage,
            latency_s=latency,
            cached=False,
            finish_reason=reply.finish_reason,
            images_substituted=substituted,
            queue_s=queued,
        )

    def _drop_cache(self, exc: BaseException, doing: str) -> None:
        """Stop writing the request cache (after a failed read, stop using it at all): one warning."""
        path = getattr(self.cache, "path", None)
        self.cache_error = f"{doing}: {type(exc).__name__}: {exc}"
        if doing == "read":
            self.cache = None
        log.warning(
            "request cache %s cannot be %s (%s: %s); going on without it: replies are used and recorded, "
            "but not stored (a rerun pays again for them)",
            path,
            "read" if doing == "read" else "written",
            type(exc).__name__,
            exc,
        )

    def _transcript(
        self,
        stage: str,
        prepared: list[Message],
        config: GenerationConfig,
        key: str | None,
        reply: str | None,
        finish_reason: str | None,
        usage: Usage,
        latency: float,
        substituted: int,
        *,
        cached: bool = False,
        error: str | None = None,
    ) -> None:
        """Hand this call's record to the transcript sink of the context, if any (see ``_calllog``)."""
        if recording():
            emit_call(
                stage=stage,
                model=self.spec,
                messages=messages_as_sent(prepared, file_sha256),
                config=config,
                cache_key=key,
                reply=reply,
                finish_reason=finish_reason,
                usage=usage,
                latency_s=latency,
                cached=cached,
                images_substituted=substituted,
                error=error,
            )

    async def aclose(self) -> None:
        """Close HTTP connections opened in the running event loop."""
        await self.backend.aclose()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ModelClient({self.spec!r}, concurrency={self.concurrency}, cache={self.cache!r})"


def _valid_unicode(text: str) -> str:
    """Replace lone surrogates (invalid UTF-8 decoded by a lenient server) with U+FFFD, so the
    reply can be stored, written to JSON and compared."""
    return _SURROGATE.sub("\ufffd", text)
