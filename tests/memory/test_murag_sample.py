"""MuRAG on the real sample with SmolLM2 and MiniLM: with no image encoder available the text
fallback is used and recorded; answers carry ranked turn evidence."""

from __future__ import annotations

import pytest
from sample_run import context, questions, sample_dialogue, smollm2_or_skip

from h2hmem.embed import load_embedder
from h2hmem.memory.murag._memory import MuRAGMemory

pytestmark = pytest.mark.slow


async def test_murag_on_sample(sample_root, tmp_path):
    chat = smollm2_or_skip()
    d = sample_dialogue(sample_root)
    mem = MuRAGMemory(context(d, chat, tmp_path, load_embedder("minilm")), encoder="text")
    desc = mem.describe()
    assert desc["encoder"].startswith("text:") and desc["encoder_uses_images"] is False
    assert "GME" in desc["deviations"][0]
    for s in d.sessions:
        await mem.observe(s)
    for q in questions(d):
        ans = await mem.answer(q)
        assert ans.text and len(ans.evidence) == 5
        assert all(e.turn is not None and e.session in ("session1", "session4") for e in ans.evidence)
        scores = [e.score for e in ans.evidence]
        assert scores == sorted(scores, reverse=True)
        assert ans.details["images_substituted"] == ans.details["images_attached"]
