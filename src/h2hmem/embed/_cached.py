"""What every text embedder shares: an in-process LRU, the persistent :class:`EmbeddingCache`,
and one model call for all the texts that concurrent callers are waiting for.

A subclass implements ``async _compute(texts) -> (len(texts), dim) float32`` and sets
``name``, ``dim`` and ``cache_model`` (the model identity the persistent cache is keyed by).
``embed`` then:

1. hashes each text (SHA-256 of the exact UTF-8 text) and serves repeats and LRU hits from memory;
2. reads the rest from the persistent cache (one query per 500 texts), unless ``refresh``;
3. queues what is left; the first waiting caller starts a drain that takes *every* queued text
   (from all callers: sessions of several dialogues being observed at once, questions being
   answered at once), removes duplicates, orders them longest first (so each model batch holds
   texts of similar length and little padding) and computes them in one ``_compute`` call;
   callers that arrive meanwhile form the next call. No timer: a lone caller never waits.
4. stores computed vectors in the LRU and the persistent cache.

A persistent cache that cannot be read or written (disk full, file-size limit, ``disk I/O
error``) is dropped with one logged warning and the embedder goes on without it: the vectors are
computed and returned as usual, only not stored (a cache is an optimisation; the run's own files
decide whether the run can go on). Every failure inside the drain reaches the callers waiting on
it (``embed`` raises it); no caller is left waiting on a drain that died.

:attr:`stats` counts each path (see :class:`EmbeddingStats`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..records import EmbeddingCounts
from ._cache import EmbeddingCache, text_digest

log = logging.getLogger(__name__)

LRU_SIZE = 50_000
"""Vectors kept in memory per embedder (384 float32 = 1.5 KB each → ~75 MB at most)."""


class EmbeddingStats(EmbeddingCounts):
    """Live counts of one embedder (or, subtracted, of one run): the counters of
    :class:`~h2hmem.records.EmbeddingCounts` (``model_calls`` = ``_compute`` calls, ``compute_s`` =
    wall seconds inside ``_compute``), with arithmetic."""

    def __sub__(self, other: EmbeddingCounts) -> EmbeddingStats:
        return EmbeddingStats(**{k: getattr(self, k) - getattr(other, k) for k in EmbeddingCounts.model_fields})

    def __add__(self, other: EmbeddingCounts) -> EmbeddingStats:
        return EmbeddingStats(**{k: getattr(self, k) + getattr(other, k) for k in EmbeddingCounts.model_fields})

    def as_dict(self) -> dict[str, Any]:
        d = self.model_dump()
        d["compute_s"] = round(d["compute_s"], 4)
        return d


@dataclass
class _Waiting:
    digests: list[bytes]
    texts: list[str]
    future: asyncio.Future[dict[bytes, np.ndarray]]


class CachingEmbedder:
    """Base class of the text embedders (see the module docstring).

    Stats invariant (for calls that succeeded): ``texts == memory_hits + cache_hits + computed``.

    Args:
        cache: persistent cache (an :class:`EmbeddingCache` or its SQLite path), or None for
            memory only (``--no-cache``).
        refresh: compute every text again (cache reads skipped) and overwrite what is stored.
        lru_size: vectors kept in memory.
    """

    name: str = "?"
    dim: int = 0
    cache_model: str = "?"

    def __init__(
        self, cache: EmbeddingCache | str | Path | None = None, *, refresh: bool = False, lru_size: int = LRU_SIZE
    ):
        self.cache = EmbeddingCache(cache) if isinstance(cache, (str, Path)) else cache
        self.cache_error: str | None = None
        """Why the persistent cache was dropped mid-run (None while it works); see the module docstring."""
        self._cache_path = str(self.cache.path) if self.cache is not None else None
        self.refresh = refresh
        self.stats = EmbeddingStats()
        self._lru: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lru_size = lru_size
        self._waiting: list[_Waiting] = []
        self._drainer: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _compute(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (shape ``(len(texts), dim)``, float32); ``texts`` is never empty."""
        raise NotImplementedError

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts``: float32, shape ``(len(texts), dim)``; ``embed([])`` → ``(0, dim)``."""
        self.stats.texts += len(texts)
        digests = [text_digest(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        for d in digests:
            v = self._lru.get(d)
            if v is not None:
                found[d] = v
                self._lru.move_to_end(d)
        todo = {d: t for d, t in zip(digests, texts) if d not in found}
        n_stored = 0
        if todo and self.cache is not None and not self.refresh:
            try:
                stored = self.cache.get_many(self.cache_model, list(todo), self.dim or None)
            except (sqlite3.Error, OSError) as e:
                self._drop_cache(e, "read")
                stored = {}
            if stored:
                if not self.dim:
                    self.dim = len(next(iter(stored.values())))
                found.update(stored)
                self._remember(stored)
                self.stats.cache_hits += len(stored)
                n_stored = len(stored)
                for d in stored:
                    del todo[d]
        if todo:
            found.update(await self._submit(list(todo), list(todo.values())))
        self.stats.memory_hits += len(texts) - len(todo) - n_stored
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[d] for d in digests]).astype(np.float32, copy=False)

    def _remember(self, vectors: dict[bytes, np.ndarray]) -> None:
        for d, v in vectors.items():
            self._lru[d] = v
            self._lru.move_to_end(d)
        while len(self._lru) > self._lru_size:
            self._lru.popitem(last=False)

    async def _submit(self, digests: list[bytes], texts: list[str]) -> dict[bytes, np.ndarray]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (another asyncio.run): the old queue died with its loop
            self._loop, self._waiting, self._drainer = loop, [], None
        waiting = _Waiting(digests, texts, loop.create_future())
        self._waiting.append(waiting)
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await waiting.future

    async def _drain(self) -> None:
        batch: list[_Waiting] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                unique: dict[bytes, str] = {}
                for w in batch:
                    unique.update(zip(w.digests, w.texts))
                order = sorted(unique, key=lambda d: -len(unique[d]))
                t0 = time.perf_counter()
                try:
                    vectors = await self._compute([unique[d] for d in order])
                except Exception as exc:  # this batch's callers get the model's error; the next batch goes on
                    _fail(batch, exc)
                    batch = []
                    continue
                self.stats.compute_s += time.perf_counter() - t0
                self.stats.model_calls += 1
                self.stats.computed += len(order)
                self.stats.memory_hits += sum(len(w.digests) for w in batch) - len(order)  # asked by two at once
                if vectors.shape[1:] and not self.dim:
                    self.dim = int(vectors.shape[1])
                result = {d: vectors[i] for i, d in enumerate(order)}
                self._remember(result)
                if self.cache is not None:
                    try:
                        self.cache.put_many(self.cache_model, result)
                    except (sqlite3.Error, OSError) as e:
                        self._drop_cache(e, "write")
                for w in batch:
                    if not w.future.done():
                        w.future.set_result({d: result[d] for d in w.digests})
                batch = []
        except BaseException as exc:
            # Anything else (cancellation, a bug): every waiting caller gets it, none waits forever,
            # and the task itself ends quietly (its failure was delivered, not left unretrieved).
            waiting, self._waiting = [*batch, *self._waiting], []
            if not waiting and isinstance(exc, Exception):
                log.error("embedding drain failed with nobody waiting: %s: %s", type(exc).__name__, exc)
            _fail(waiting, exc)
            if not isinstance(exc, Exception):
                raise

    def _drop_cache(self, exc: BaseException, doing: str) -> None:
        """Go on without the persistent cache after it failed to ``doing`` (read/write): one warning."""
        self.cache_error = f"{doing}: {type(exc).__name__}: {exc}"
        log.warning(
            "embedding cache %s cannot be %s (%s: %s); going on without it: vectors are computed but no "
            "longer stored or looked up in this process",
            self._cache_path,
            "read" if doing == "read" else "written",
            type(exc).__name__,
            exc,
        )
        self.cache = None

    def describe_cache(self) -> dict[str, Any]:
        """What the manifest records: model identity, cache file (None = memory only), refresh."""
        return {
            "model": self.cache_model,
            "cache": self._cache_path,
            "refresh": self.refresh,
        }


def _fail(waiting: list[_Waiting], exc: BaseException) -> None:
    for w in waiting:
        if w.future.done():
            continue
        if isinstance(exc, asyncio.CancelledError):
            w.future.cancel()
        else:
            w.future.set_exception(exc)


def embedding_record(
    embedder: Any, since: EmbeddingStats | None = None, old: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """The manifest's ``embedding`` entry: the embedder's cache description and its counts
    since ``since`` (a copy of ``stats`` taken earlier), added to ``old`` (the entry of earlier
    invocations of the same run). None for an embedder without :class:`EmbeddingStats`."""
    stats = getattr(embedder, "stats", None)
    if not isinstance(stats, EmbeddingStats):
        return old
    delta = stats - since if since is not None else stats.model_copy()
    if old:
        delta = delta + EmbeddingCounts.model_validate(old)  # its other keys (model, cache, …) are ignored
    describe = getattr(embedder, "describe_cache", None)
    return {**(describe() if callable(describe) else {}), **delta.as_dict()}
