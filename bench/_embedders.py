"""Embedders for measuring the harness apart from the embedding model.

``hashed`` is a deterministic, nearly free stand-in for MiniLM (same 384 dimensions, same
:class:`~h2hmem.embed.Embedder` protocol, same VectorIndex search cost), so a naive-rag run
measures the harness — retrieval, prompt building, model calls, recording — and not MiniLM's
CPU time, which the ``index`` workload measures on its own. ``minilm`` is the real model (with
the persistent embedding cache when a path is given). ``hashed-cached`` is the stand-in behind
the same cache and batching as MiniLM (:class:`~h2hmem.embed.CachingEmbedder`), for the
smoke test of the ``embed`` workload. ``hashed-remote`` is the stand-in answering each request after
:data:`REMOTE_LATENCY_S` on the loop, as an embedding server would (an OpenAI-compatible
``--embedder``): a retrieval that waits, for the ``cpu`` workload's look-ahead row.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib
from typing import Any

import numpy as np

HASHED_DIM = 384
"""Same dimension as all-MiniLM-L6-v2 (MINILM_DIM), so the index does the same arithmetic."""

_WORD = re.compile(r"\w+")
REMOTE_LATENCY_S = 0.02
"""Seconds per request of ``hashed-remote`` (an embedding server on the network: 5–50 ms a request)."""


class HashedEmbedder:
    """Signed feature hashing of lower-cased words (CRC-32), L2-normalised; deterministic across
    processes (no ``hash()`` seed), so prompts — and request-cache keys — repeat exactly."""

    name = "hashed-384 (bench stand-in)"
    dim = HASHED_DIM

    def __init__(self) -> None:
        self.cpu_s = 0.0
        """Process CPU seconds spent in :meth:`embed` (it never suspends, so this is its own)."""

    async def embed(self, texts: list[str]) -> np.ndarray:
        cpu0 = time.process_time()
        try:
            return self._embed(texts)
        finally:
            self.cpu_s += time.process_time() - cpu0

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = zlib.crc32(word.encode("utf-8"))
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class RemoteHashedEmbedder(HashedEmbedder):
    """:class:`HashedEmbedder` whose every request waits :data:`REMOTE_LATENCY_S` first (without CPU)."""

    name = "hashed-384 (bench stand-in, remote: 20 ms a request)"

    async def embed(self, texts: list[str]) -> np.ndarray:
        await asyncio.sleep(REMOTE_LATENCY_S)
        return await super().embed(texts)


def make_embedder(kind: str, cache: str | None = None) -> Any:
    """``"hashed"`` → :class:`HashedEmbedder`; ``"hashed-remote"`` → :class:`RemoteHashedEmbedder`;
    ``"hashed-cached"`` → the same vectors behind
    :class:`~h2hmem.embed.CachingEmbedder`; ``"minilm"`` → the real all-MiniLM-L6-v2.
    ``cache``: the embedding cache file of the cached kinds (None = memory only)."""
    if kind == "hashed":
        return HashedEmbedder()
    if kind == "hashed-remote":
        return RemoteHashedEmbedder()
    if kind == "hashed-cached":
        return _cached_hashed(cache)
    if kind == "minilm":
        from h2hmem.embed import load_embedder

        return load_embedder("minilm", cache=cache)
    raise ValueError(f"unknown bench embedder {kind!r}: 'hashed', 'hashed-remote', 'hashed-cached' or 'minilm'")


def _cached_hashed(cache: str | None) -> Any:
    from h2hmem.embed import CachingEmbedder

    class CachedHashedEmbedder(CachingEmbedder):
        name = "hashed-384 (bench stand-in, cached)"
        dim = HASHED_DIM
        cache_model = "bench-hashed-384"

        async def _compute(self, texts: list[str]) -> np.ndarray:
            return await HashedEmbedder().embed(texts)

    return CachedHashedEmbedder(cache)
