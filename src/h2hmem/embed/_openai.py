"""``openai:<model>``: an OpenAI-compatible ``/embeddings`` endpoint, with the chat layer's
retry policy and error classification; cache, LRU and batching: :class:`CachingEmbedder`."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import defaults
from ..llm import (
    BadResponseError,
    RequestInfo,
    RetryPolicy,
    SessionPool,
    call_with_retries,
    classify_http_error,
    post_json,
)
from ._cache import EmbeddingCache
from ._cached import CachingEmbedder
from ._protocol import l2_normalise

BATCH_SIZE = 256
"""Texts per request (OpenAI accepts up to 2,048 inputs; smaller batches keep requests light)."""


class OpenAIEmbedder(CachingEmbedder):
    """Embeddings from ``{base_url}/embeddings``. ``dim`` is learnt from the first reply (or
    cached vector) when not given. The persistent cache is keyed by model name and ``dim``, not
    by the server's URL: one model gives one vector per text wherever it is served."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        *,
        dim: int | None = None,
        cache: EmbeddingCache | str | Path | None = None,
        refresh: bool = False,
        timeout_s: float = defaults.TIMEOUT_S,
        retry: RetryPolicy | None = None,
    ):
        super().__init__(cache, refresh=refresh)
        self.model = model
        self.cache_model = f"openai:{model}" + (f"@{dim}" if dim else "")
        self.name = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.dim: int = dim or 0
        self._dimensions = dim
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._pool = SessionPool(api_key)

    async def _request(self, texts: list[str]) -> np.ndarray:
        info = RequestInfo(self.model, self.base_url, f"embeddings of {len(texts)} texts")
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        reply = await post_json(self._pool, f"{self.base_url}/embeddings", body, timeout_s=self.timeout_s, info=info)
        if not 200 <= reply.status < 300:
            raise classify_http_error(reply, info, had_images=False)
        try:
            data = json.loads(reply.text)["data"]
            rows = sorted(data, key=lambda d: d["index"])
            vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise BadResponseError(f"unusable embeddings reply: {exc!r}", info) from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise BadResponseError(f"expected {len(texts)} embeddings, got shape {vectors.shape}", info)
        return l2_normalise(vectors)

    async def _compute(self, texts: list[str]) -> np.ndarray:
        parts = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = texts[start : start + BATCH_SIZE]
            parts.append(await call_with_retries(functools.partial(self._request, batch), self.retry))
        return np.concatenate(parts).astype(np.float32, copy=False)

    async def aclose(self) -> None:
        """Close HTTP connections opened in the running event loop."""
        await self._pool.aclose()
