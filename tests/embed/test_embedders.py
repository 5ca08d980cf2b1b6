from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from h2hmem.embed import Embedder, EmbeddingCache, load_embedder
from h2hmem.llm import ServerError
from h2hmem.llm._retry import RetryPolicy
from h2hmem.testing import Fault, MockOpenAIServer, Rule, hashed_embedding


@pytest.mark.slow
async def test_minilm_paraphrase_beats_unrelated():
    pytest.importorskip("sentence_transformers")
    emb = load_embedder("minilm")
    assert isinstance(emb, Embedder) and emb.dim == 384 and emb.name == "all-MiniLM-L6-v2"
    texts = [
        "Alice adopted a cat named Almond last May.",
        "Last May, Alice took in a cat called Almond.",
        "The quarterly budget meeting was moved to Thursday.",
    ]
    v = await emb.embed(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.3
    again = await emb.embed([texts[2], texts[0]])  # from the LRU, same vectors
    np.testing.assert_array_equal(again, v[[2, 0]])
    assert (await emb.embed([])).shape == (0, 384)


_LOAD_WITHOUT_NETWORK = """
import asyncio, json, os, socket
tried = []
def refuse(self, address):
    tried.append(repr(address))
    raise OSError("no network in this test")
socket.socket.connect = refuse
from h2hmem.embed import load_embedder
vectors = asyncio.run(load_embedder("minilm").embed(["a cat called Almond"]))
import huggingface_hub.constants as hub
print(json.dumps({"shape": list(vectors.shape), "tried": tried, "hub_offline": hub.HF_HUB_OFFLINE,
                  "env": [k for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if k in os.environ]}))
"""


@pytest.mark.slow
def test_minilm_loads_without_the_network_and_leaves_the_hub_online():
    """The weights come from the installed package: loading opens no connection, and sets nothing that
    would make a later ``download_dataset()`` in the same process see the Hub as offline (huggingface_hub
    reads HF_HUB_OFFLINE once, when it is imported). A fresh process, so nothing imported before counts."""
    pytest.importorskip("sentence_transformers")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_WITHOUT_NETWORK], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"shape": [1, 384], "tried": [], "hub_offline": False, "env": []}


async def test_openai_embedder_against_mock(tmp_path):
    with MockOpenAIServer(embedding_dim=16) as srv:
        emb = load_embedder("openai:text-embedding-3-small", base_url=srv.base_url, cache=tmp_path / "c.sqlite")
        v = await emb.embed(["red cat", "blue dog", "red cat"])
        assert v.shape == (3, 16) and emb.dim == 16
        np.testing.assert_allclose(v[0], hashed_embedding("red cat", 16), rtol=1e-6)
        np.testing.assert_allclose(v[0], v[2])
        calls = srv.calls
        v2 = await emb.embed(["blue dog", "red cat"])  # both cached
        assert srv.calls == calls
        np.testing.assert_allclose(v2, v[[1, 0]])
        await emb.aclose()
        again = load_embedder("openai:text-embedding-3-small", base_url=srv.base_url, cache=tmp_path / "c.sqlite")
        np.testing.assert_array_equal(await again.embed(["red cat"]), v[:1])  # a new embedder reads the file
        assert srv.calls == calls and again.stats.cache_hits == 1
        await again.aclose()
    assert EmbeddingCache(tmp_path / "c.sqlite").count("openai:text-embedding-3-small") == 2


async def test_openai_embedder_retries_and_raises():
    with MockOpenAIServer(script=[Fault.http(502)]) as srv:
        emb = load_embedder("openai:e", base_url=srv.base_url)
        emb.retry = RetryPolicy(max_retries=2, initial_backoff_s=0.01)
        assert (await emb.embed(["x"])).shape[0] == 1 and srv.calls == 2
        srv.set_script([Rule(Fault.http(500), path="embeddings")])
        with pytest.raises(ServerError, match="embeddings of 1 texts"):
            await emb.embed(["y"])
        await emb.aclose()


def test_unknown_spec():
    with pytest.raises(ValueError, match="minilm"):
        load_embedder("clip")
