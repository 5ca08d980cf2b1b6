"""Every built-in method answers with the run's answer settings (``--answer-max-tokens``,
``--temperature`` → ``MemoryContext.answer_config``), not the module default ANSWER_CONFIG. Pinned under
the preset ``harmonized``, which adds nothing of its own (``paper`` adds the official ``top_p`` and A-Mem's
2,000-token answer limit: tests/memory/test_paper_preset.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from mm_fakes import HashEmbedder, make_question, make_session, recording_chat

from h2hmem.llm import GenerationConfig
from h2hmem.memory import MemoryContext
from h2hmem.memory._registry import resolve_method

CUSTOM = GenerationConfig(temperature=0.0, max_tokens=7)


@pytest.mark.parametrize("method", ["full-text", "naive-rag", "a-mem", "full-mm", "murag", "ngm"])
async def test_answer_call_uses_the_run_answer_config(method, tmp_path):
    chat = recording_chat()
    embedder = HashEmbedder()
    ctx = MemoryContext(
        dialogue_id="dyadic/dialogue1",
        chat=chat,
        state_dir=tmp_path / "state",
        embedder_factory=lambda: embedder,
        answer_config=CUSTOM,
        preset="harmonized",
    )
    memory = resolve_method(method)(ctx)
    await memory.observe(
        make_session(
            "session1",
            dt.date(2024, 3, 20),
            [("Kiki", "I adopted a cat named Miso.", None), ("Tom", "Miso is a lovely name.", None)],
        )
    )
    await memory.answer(make_question("What is the name of Kiki's cat?"))
    answer_configs = [r.config for r in chat.requests_for("answer")]
    assert answer_configs == [CUSTOM]
    if hasattr(memory, "describe") and "answer_temperature" in memory.describe():
        assert memory.describe()["answer_temperature"] == 0.0
