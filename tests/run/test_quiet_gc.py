"""The collector settings while a run answers (``h2hmem.run._gc``), counted not timed: what is alive
when the run starts is frozen (a full collection does not walk the dataset again), the young
generation is collected every YOUNG_THRESHOLD allocations, and both are undone when the last
overlapping run ends."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from h2hmem.data import load_dataset
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.run._gc import YOUNG_THRESHOLD, quiet_gc
from h2hmem.testing import ScriptedChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
from mm_fakes import HashEmbedder


def test_a_run_answers_with_the_dataset_frozen_and_restores_the_collector(sample_root, tmp_path):
    before = (gc.get_threshold(), gc.get_freeze_count())
    seen: list[tuple[int, int]] = []

    def reply(_request) -> str:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return "Not mentioned."

    ds = load_dataset(sample_root, "multi-party")
    turns = sum(len(s.turns) for d in ds.dialogues for s in d.sessions)
    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="naive-rag",
        out_dir=tmp_path / "runs",
        use_cache=False,
        limit=6,
    )
    s = run_benchmark(cfg, chat_model=ScriptedChatModel(default=reply, spec="fake:chat"), embedder=HashEmbedder())
    assert s.failed == 0 and len(seen) == 6
    # every answer call ran with at least the dataset's turns frozen (each Turn is one tracked object)
    assert all(frozen >= turns and young == max(YOUNG_THRESHOLD, before[0][0]) for frozen, young in seen)
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_overlapping_runs_restore_the_collector_when_the_last_one_ends():
    before = (gc.get_threshold(), gc.get_freeze_count())
    first, second = quiet_gc(), quiet_gc()
    first.__enter__()
    frozen = gc.get_freeze_count()
    second.__enter__()
    assert gc.get_freeze_count() == frozen  # the second run does not freeze again
    first.__exit__(None, None, None)  # the first run ends while the second still answers
    assert gc.get_threshold()[0] == max(YOUNG_THRESHOLD, before[0][0]) and gc.get_freeze_count() == frozen
    second.__exit__(None, None, None)
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_an_error_inside_still_restores_the_collector():
    before = (gc.get_threshold(), gc.get_freeze_count())
    try:
        with quiet_gc():
            raise OSError("disk full")
    except OSError:
        pass
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
