"""Persistent embedding cache and the shared embedder logic: counts, identical vectors, batching, --no-cache."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from h2hmem.embed import CachingEmbedder, EmbeddingCache, EmbeddingStats, default_embedding_cache_path, text_digest


class CountingEmbedder(CachingEmbedder):
    """3-d vectors from the text's length and its counts of 'a' and 'b'; records every model call."""

    name = "counting"
    dim = 3
    cache_model = "counting@v1"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.calls: list[list[str]] = []

    async def _compute(self, texts):
        self.calls.append(list(texts))
        await asyncio.sleep(0)
        v = np.array([[len(t), t.count("a"), t.count("b") + 1] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_store_round_trip_and_dim_check(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    v = np.array([0.6, 0.8], dtype=np.float32)
    cache.put_many("m", {text_digest("x"): v})
    assert len(cache) == 1 and cache.count("m") == 1 and cache.count("other") == 0
    got = cache.get_many("m", [text_digest("x"), text_digest("y")])
    assert list(got) == [text_digest("x")] and got[text_digest("x")].tobytes() == v.tobytes()
    assert cache.get_many("m", [text_digest("x")], dim=3) == {}  # stored with dim 2
    assert cache.get_many("other", [text_digest("x")]) == {}
    assert len(text_digest("x")) == 32 and text_digest("x") != text_digest("x ")  # exact text, no normalising


def test_corrupt_file_is_moved_aside(tmp_path, caplog):
    path = tmp_path / "e.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    cache = EmbeddingCache(path)
    assert cache.moved_aside is not None and cache.moved_aside.name.startswith("e.sqlite.corrupt-")
    assert "embedding cache" in caplog.text and len(cache) == 0


async def test_damaged_vectors_are_computed_again_with_a_warning(tmp_path, caplog):
    """Bytes changed inside a stored vector pass SQLite's checks; a vector that is not finite or has the
    wrong length is treated as absent: computed again, replaced, and the damage logged and counted."""
    import sqlite3

    path = tmp_path / "e.sqlite"
    first = await CountingEmbedder(path).embed(["ab", "b", "aaa"])
    with sqlite3.connect(path) as db:  # "ab": 0xFF bytes (NaN); "b": cut to 2 floats; "aaa" untouched
        db.execute("UPDATE embeddings SET vector = ? WHERE text_sha256 = ?", (b"\xff" * 12, text_digest("ab")))
        db.execute("UPDATE embeddings SET vector = ? WHERE text_sha256 = ?", (b"\x00" * 8, text_digest("b")))
    again = CountingEmbedder(path)
    v = await again.embed(["ab", "b", "aaa"])
    assert again.calls == [["ab", "b"]] and (again.stats.cache_hits, again.stats.computed) == (1, 2)
    assert v.tobytes() == first.tobytes()
    assert again.cache.damaged == 2 and "2 stored vectors of counting@v1 damaged" in caplog.text
    third = CountingEmbedder(path)  # replaced: read back whole
    assert (await third.embed(["ab", "b"])).tobytes() == first[:2].tobytes() and third.calls == []


def test_a_vector_that_is_not_finite_is_not_stored(tmp_path, caplog):
    """A model that returns NaN would otherwise have its vector called damaged, and computed again, on
    every read."""
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    good, bad = np.array([0.6, 0.8], dtype=np.float32), np.array([np.nan, 1.0], dtype=np.float32)
    cache.put_many("m", {text_digest("x"): good, text_digest("y"): bad})
    assert cache.count("m") == 1 and list(cache.get_many("m", [text_digest("x"), text_digest("y")])) == [
        text_digest("x")
    ]
    assert "1 vector(s) of m not stored: the model returned values that are not finite" in caplog.text
    assert cache.damaged == 0


def test_default_path_beside_the_request_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path))
    assert default_embedding_cache_path() == tmp_path / "embeddings.sqlite"
    assert default_embedding_cache_path(tmp_path / "sub" / "r.sqlite") == tmp_path / "sub" / "embeddings.sqlite"


async def test_counts_memory_then_persistent_then_refresh(tmp_path):
    path = tmp_path / "e.sqlite"
    emb = CountingEmbedder(path)
    first = await emb.embed(["ab", "b", "ab"])
    # "ab" → (2, 1, 2)/3, "b" → (1, 0, 2)/√5
    np.testing.assert_allclose(first[0], [2 / 3, 1 / 3, 2 / 3], rtol=1e-6)
    np.testing.assert_allclose(first[1], [1 / np.sqrt(5), 0, 2 / np.sqrt(5)], rtol=1e-6)
    assert first[2].tobytes() == first[0].tobytes()
    assert emb.stats == EmbeddingStats(
        texts=3, memory_hits=1, cache_hits=0, computed=2, model_calls=1, compute_s=emb.stats.compute_s
    )
    assert emb.calls == [["ab", "b"]]  # distinct texts, longest first
    await emb.embed(["b", "aaa"])
    assert (emb.stats.texts, emb.stats.memory_hits, emb.stats.computed, emb.stats.model_calls) == (5, 2, 3, 2)
    assert EmbeddingCache(path).count("counting@v1") == 3

    # a new process (new embedder) on the same file: every vector read back, none computed, bit-identical
    again = CountingEmbedder(path)
    v = await again.embed(["ab", "b", "aaa", "b"])
    assert again.calls == [] and (
        again.stats.texts,
        again.stats.cache_hits,
        again.stats.memory_hits,
        again.stats.computed,
    ) == (4, 3, 1, 0)
    assert v[:2].tobytes() == first[:2].tobytes()
    fresh = CountingEmbedder(None)  # memory only: computes everything, same vectors
    assert (await fresh.embed(["ab", "b"])).tobytes() == first[:2].tobytes() and fresh.stats.computed == 2

    # refresh: recomputed and rewritten, never read
    refresh = CountingEmbedder(path, refresh=True)
    await refresh.embed(["ab", "zz"])
    assert refresh.stats.cache_hits == 0 and refresh.stats.computed == 2
    assert EmbeddingCache(path).count() == 4


async def test_concurrent_callers_share_one_model_call():
    emb = CountingEmbedder()
    results = await asyncio.gather(emb.embed(["a"]), emb.embed(["bbb", "a"]), emb.embed(["cc"]))
    assert emb.calls == [["bbb", "cc", "a"]]  # one call, each text once, longest first
    assert emb.stats.texts == 4 and emb.stats.computed == 3 and emb.stats.memory_hits == 1
    assert results[0][0].tobytes() == results[1][1].tobytes()
    assert [r.shape for r in results] == [(1, 3), (2, 3), (1, 3)]
    assert (await emb.embed([])).shape == (0, 3)


async def test_a_failed_call_fails_its_callers_and_the_next_call_works():
    class Flaky(CountingEmbedder):
        fail = True

        async def _compute(self, texts):
            if self.fail:
                self.fail = False
                raise RuntimeError("model down")
            return await super()._compute(texts)

    emb = Flaky()
    out = await asyncio.gather(emb.embed(["a"]), emb.embed(["b"]), return_exceptions=True)
    assert all(isinstance(e, RuntimeError) for e in out)
    assert (await emb.embed(["a", "b"])).shape == (2, 3) and emb.stats.computed == 2


def test_works_across_event_loops(tmp_path):
    emb = CountingEmbedder(tmp_path / "e.sqlite")
    asyncio.run(emb.embed(["warm-up"]))
    assert asyncio.run(emb.embed(["warm-up", "b"])).shape == (2, 3)
    assert emb.stats.computed == 2 and emb.stats.memory_hits == 1


@pytest.mark.slow
async def test_minilm_from_cache_equals_fresh_compute(tmp_path):
    pytest.importorskip("sentence_transformers")
    from h2hmem.embed import load_embedder

    texts = ["Alice adopted a cat named Almond last May.", "The budget meeting moved to Thursday."]
    cold = load_embedder("minilm", cache=tmp_path / "e.sqlite")
    v = await cold.embed(texts)
    warm = load_embedder("minilm", cache=tmp_path / "e.sqlite")
    assert (await warm.embed(texts)).tobytes() == v.tobytes() and warm.stats.cache_hits == 2
    fresh = load_embedder("minilm")  # no persistent cache: computed again
    np.testing.assert_allclose(await fresh.embed(texts), v, atol=1e-6)


def test_torch_threads_follow_the_cpus_we_may_use(monkeypatch):
    import os

    from h2hmem.embed._minilm import torch_threads

    monkeypatch.delenv("H2HMEM_TORCH_THREADS", raising=False)
    assert torch_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("H2HMEM_TORCH_THREADS", "3")
    assert torch_threads() == 3
    monkeypatch.setenv("H2HMEM_TORCH_THREADS", "many")
    with pytest.raises(ValueError, match="H2HMEM_TORCH_THREADS"):
        torch_threads()
