"""A-Mem on the real sample with SmolLM2 as note writer and answerer (sessions cut to their first
turns and the writer to 64 tokens to keep the CPU test short): notes built without crashing on image turns or bad JSON, a
second instance reuses the saved notes, answers carry evidence."""

from __future__ import annotations

import pytest
from sample_run import context, questions, sample_dialogue, smollm2_or_skip

from h2hmem.embed import load_embedder
from h2hmem.memory.amem._memory import AMemMemory

pytestmark = pytest.mark.slow
TURNS = 1


async def test_amem_on_sample(sample_root, tmp_path):
    chat = smollm2_or_skip()
    d = sample_dialogue(sample_root)
    embedder = load_embedder("minilm")
    sessions = [s.model_copy(update={"turns": s.turns[:TURNS]}) for s in d.present_sessions]
    assert any(t.image for s in sessions for t in s.turns)  # an image turn is among them
    mem = AMemMemory(context(d, chat, tmp_path, embedder), build_max_tokens=64)
    for s in sessions:
        await mem.observe(s)
    stats = mem.store.stats
    assert len(mem.store.notes) == 2 * TURNS
    assert stats.construction_calls == 2 * TURNS + (2 * TURNS - 1)  # analysis each, evolution after the first
    assert chat.usage_by_stage()["memory_build"].calls == stats.construction_calls
    # SmolLM2's JSON is often cut at 64 tokens: those turns became fallback notes, counted, no crash
    assert stats.analysis_failures == sum(n.fallback for n in mem.store.notes)
    image_note = next(n for n in mem.store.notes if "[image: " in n.content)
    assert " in session" in image_note.content

    again = AMemMemory(context(d, chat, tmp_path, embedder), build_max_tokens=64)
    for s in sessions:
        await again.observe(s)
    assert chat.usage_by_stage()["memory_build"].calls == stats.construction_calls  # nothing rebuilt
    for q in questions(d)[-1:]:  # one question: SmolLM2 can ramble to 1,024 tokens (~40 s on 2 busy cores)
        ans = await again.answer(q)
        assert ans.text and len(ans.evidence) == 2 * TURNS  # top-k 5 of 2 notes
        assert ans.details["notes"] == 2 * TURNS
