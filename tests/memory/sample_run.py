"""Shared pieces of the real-sample checks: SmolLM2 (in-process, text-only), MiniLM, and the
first multi-party dialogue with a few of its questions. Tests using them are marked ``slow``."""

from __future__ import annotations

import pytest

from h2hmem.data import Dialogue, load_dataset
from h2hmem.memory import MemoryContext


def smollm2_or_skip():
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama-cpp-python is not installed")
    from h2hmem.llm import load_chat_model

    return load_chat_model("local:smollm2")


def sample_dialogue(sample_root) -> Dialogue:
    """multi-party/dialogue1: sessions 1 and 4 present (71 + 81 turns, 29 image turns, no image files)."""
    ds = load_dataset(sample_root, "multi-party", strict=False)
    return next(d for d in ds.dialogues if d.name == "dialogue1")


def questions(d: Dialogue, n: int = 2):
    """The contradiction-detection (CD, Yes/No) questions of the present sessions, first ``n``:
    their answers are one word, which keeps SmolLM2's generation (the slow part on CPU) short."""
    present = {s.name for s in d.present_sessions}
    return [q for q in d.questions if q.task_type.abbr == "CD" and q.session in present][:n]


def context(d: Dialogue, chat, tmp_path, embedder=None) -> MemoryContext:
    return MemoryContext(
        preset="harmonized",
        dialogue_id=d.id,
        chat=chat,
        state_dir=tmp_path / "state" / d.split / d.name,
        embedder_factory=(lambda: embedder) if embedder is not None else None,
    )
