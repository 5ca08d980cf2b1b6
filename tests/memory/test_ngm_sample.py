"""NGM on the real sample with SmolLM2 and MiniLM (text fallback encoder): graph built from real
session dates, answers with ranked turn evidence."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from sample_run import context, questions, sample_dialogue, smollm2_or_skip

from h2hmem.embed import load_embedder
from h2hmem.memory.ngm._memory import NGMMemory

pytestmark = pytest.mark.slow


async def test_ngm_on_sample(sample_root, tmp_path):
    chat = smollm2_or_skip()
    d = sample_dialogue(sample_root)
    mem = NGMMemory(context(d, chat, tmp_path, load_embedder("minilm")), encoder="text")
    for s in d.sessions:
        await mem.observe(s)
    s1, s4 = d.present_sessions
    n1 = len(s1.turns)
    assert len(mem.graph) == n1 + len(s4.turns)
    # session1 (2024-02-18) ends at turn 70 → 70 min after midnight; session4 starts 2024-03-01 00:00
    gap = (dt.datetime(2024, 3, 1) - dt.datetime(2024, 2, 18)).total_seconds() - (n1 - 1) * 60
    assert mem.graph.edges[n1 - 1][(n1, "temporal")] == pytest.approx(math.exp(-gap / 3600))
    for q in questions(d):
        ans = await mem.answer(q)
        assert ans.text and 1 <= len(ans.evidence) <= 5
        scores = [e.score for e in ans.evidence]
        assert scores == sorted(scores, reverse=True)
    assert "deviations" in mem.describe()
