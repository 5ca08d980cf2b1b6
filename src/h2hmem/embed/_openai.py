"""``openai:<model>``: an OpenAI-compatible ``/embeddings`` endpoint, with the chat layer's
retry policy and error classification, and optionally the SQLite request cache."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from ..llm._cache import CacheEntry, RequestCache, cache_key
from ..llm._errors import BadResponseError, RequestInfo
from ..llm._http import SessionPool, classify_http_error, post_json
from ..llm._retry import RetryPolicy, call_with_retries
from ._protocol import l2_normalise

BATCH_SIZE = 256
"""Texts per request (OpenAI accepts up to 2,048 inputs; smaller batches keep requests light)."""


class OpenAIEmbedder:
    """Embeddings from ``{base_url}/embeddings``. ``dim`` is learnt from the first reply when not given."""

    def __init__(self, model: str, base_url: str, api_key: str | None, *, dim: int | None = None,
                 cache: RequestCache | None = None, timeout_s: float = 60.0, retry: RetryPolicy | None = None):
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.dim: int = dim or 0
        self._dimensions = dim
        self.cache = cache
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._pool = SessionPool(api_key)

    def _key(self, text: str) -> str:
        return cache_key({"backend": "openai-embeddings", "model": self.model, "base_url": self.base_url,
                          "dimensions": self._dimensions, "input": text})

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

    async def embed(self, texts: list[str]) -> np.ndarray:
        found: dict[int, np.ndarray] = {}
        if self.cache is not None:
            for i, t in enumerate(texts):
                hit = self.cache.get(self._key(t))
                if hit is not None:
                    found[i] = np.frombuffer(base64.b64decode(hit.text), dtype=np.float32)
        todo = [i for i in range(len(texts)) if i not in found]
        for start in range(0, len(todo), BATCH_SIZE):
            idx = todo[start:start + BATCH_SIZE]
            batch = [texts[i] for i in idx]
            vectors = await call_with_retries(lambda b=batch: self._request(b), self.retry)
            for i, v in zip(idx, vectors):
                found[i] = v
                if self.cache is not None:
                    self.cache.put(self._key(texts[i]), CacheEntry(self.name, base64.b64encode(v.tobytes()).decode(),
                                                                   "embedding", 0, 0))
        if found and not self.dim:
            self.dim = len(next(iter(found.values())))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[i] for i in range(len(texts))]).astype(np.float32)

    async def aclose(self) -> None:
        """Close HTTP connections opened in the running event loop."""
        await self._pool.aclose()
