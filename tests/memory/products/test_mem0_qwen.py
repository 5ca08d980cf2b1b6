"""mem0 with its LLM extraction on, over the first turns of a real sample dialogue, with a real
model: Qwen2.5-Coder-1.5B (``local:qwen2.5-coder-1.5b``) served by llama.cpp's OpenAI-compatible
server on loopback (embeddings from the mock: the GGUF chat model gives no pooled embeddings).
The memories must be mem0's extractions, not the turns copied or an empty store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import httpx
import pytest
from conftest import DIALOGUE

from h2hmem.data import load_dataset
from h2hmem.memory import MemoryContext
from h2hmem.memory.products import Endpoint
from h2hmem.memory.products.mem0 import Mem0Memory
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel, free_port

pytestmark = pytest.mark.slow
pytest.importorskip("mem0")
TURNS = 4


def qwen_server():
    pytest.importorskip("llama_cpp.server")
    from h2hmem.llm import local_model_path

    try:
        path = local_model_path("qwen2.5-coder-1.5b")
    except Exception as e:  # the GGUF parts are not installed
        pytest.skip(f"local:qwen2.5-coder-1.5b unavailable: {e}")
    port = free_port()
    args = ["--model", str(path), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--verbose", "false"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("llama.cpp server did not start within 120 s")


def test_mem0_extracts_memories_with_a_real_model(sample_root, tmp_path, loopback_only):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    d = next(x for x in ds.dialogues if x.id == DIALOGUE)
    (session,) = d.present_sessions
    short = session.model_copy(update={"turns": session.turns[:TURNS]})
    proc, url = qwen_server()
    try:
        with MockOpenAIServer(embedding_dim=64) as embed:
            endpoint = Endpoint(url, "local", "qwen2.5-coder-1.5b", "embed", 64, embedding_base_url=embed.base_url)
            ctx = MemoryContext(
                dialogue_id=d.id,
                chat=ScriptedChatModel(default="-"),
                state_dir=tmp_path / "state",
                extras={"product_endpoint": endpoint},
            )
            mem = Mem0Memory(ctx, infer=True, batch_turns=2)

            async def build():
                await mem.observe(short)
                store = mem._store
                try:
                    return store.memory.get_all(filters={"user_id": d.id}, top_k=100)["results"]
                finally:
                    await mem.aclose()

            memories = asyncio.run(build())
    finally:
        proc.kill()
        proc.wait(30)
    assert mem.stats["product_build_calls"] == TURNS // 2
    texts = [m["memory"] for m in memories]
    assert texts, "mem0 extracted nothing from the real model's replies"
    lines = {t.text for t in short.turns}
    assert not any(t in lines for t in texts)  # extractions, not the turns copied
    words = {w.lower() for t in short.turns for w in t.text.split() if len(w) > 4}
    assert any(w in t.lower() for t in texts for w in words)  # about what was said
    for m in memories:  # each traced back to its batch of 2 turns, dated by the session
        assert m["metadata"]["h2hmem_session"] == session.name
        assert m["metadata"]["h2hmem_turns"] in ("0,1", "2,3")
        assert m["created_at"].startswith(session.date.isoformat())
    assert loopback_only == []
