"""mem0 with its LLM extraction on, over the first turns of a real sample dialogue, with a real
model: Qwen2.5-Coder-1.5B (``local:qwen2.5-coder-1.5b``, in-process llama.cpp) served to mem0 by
h2hmem's model gateway, embeddings from the hashing embedder. The memories must be mem0's
extractions, not the turns copied or an empty store."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from conftest import DIALOGUE, HashEmbedder

from h2hmem.data import load_dataset
from h2hmem.memory import MemoryContext
from h2hmem.memory.products.mem0 import Mem0Memory

pytestmark = pytest.mark.slow
if importlib.util.find_spec("mem0") is None:  # not imported here: the adapter sets its telemetry switch first
    pytest.skip("mem0ai is not installed", allow_module_level=True)
TURNS = 4


def qwen():
    pytest.importorskip("llama_cpp")
    from h2hmem.llm import load_chat_model

    try:
        return load_chat_model("local:qwen2.5-coder-1.5b")
    except Exception as e:  # the GGUF parts are not installed
        pytest.skip(f"local:qwen2.5-coder-1.5b unavailable: {e}")


def test_mem0_extracts_memories_with_a_real_model(sample_root, tmp_path, loopback_only):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    d = next(x for x in ds.dialogues if x.id == DIALOGUE)
    (session,) = d.present_sessions
    short = session.model_copy(update={"turns": session.turns[:TURNS]})
    chat = qwen()
    ctx = MemoryContext(
        dialogue_id=d.id, chat=chat, state_dir=tmp_path / "state", embedder_factory=lambda: HashEmbedder()
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
    assert chat.usage_by_stage()["memory_build"].calls == TURNS // 2  # mem0's calls, through the gateway
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
