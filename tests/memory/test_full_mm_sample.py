"""Full (MM) on the real sample with SmolLM2: answers, evidence, and image parts replaced by their
names (the sample has no image files; SmolLM2 reads no pixels)."""

from __future__ import annotations

import pytest
from sample_run import context, questions, sample_dialogue, smollm2_or_skip

from h2hmem.memory.full_mm._memory import FullMMMemory

pytestmark = pytest.mark.slow


async def test_full_mm_on_sample(sample_root, tmp_path):
    chat = smollm2_or_skip()
    d = sample_dialogue(sample_root)
    mem = FullMMMemory(context(d, chat, tmp_path), context_tokens=1792)  # keep the CPU test short
    for s in d.sessions:
        await mem.observe(s)
    for q in questions(d):
        ans = await mem.answer(q)
        assert ans.text
        assert ans.evidence and ans.evidence[0].session == "session4"  # the most recent session kept first
        assert ans.details["truncated"] and ans.details["context_tokens"] <= ans.details["budget_tokens"]
        # every attached image was sent as '[Image <file> in <session>]' text (no files, text-only model)
        assert ans.details["images_substituted"] == ans.details["images_attached"]
        n_images = sum(len(s.images) for s in d.present_sessions)
        assert ans.details["images_attached"] + ans.details["dropped_images"] == n_images
    assert "caption text" in mem.describe()["images"]
