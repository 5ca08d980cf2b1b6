"""The collector settings while a run answers (``h2hmem.run._gc``), counted not timed: what is alive
when the run starts is frozen (a full collection does not walk the dataset again), the young
generation is collected every YOUNG_THRESHOLD allocations, and both are undone when the last
overlapping run ends; what the process set itself is left as it was."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from h2hmem.data import Turn, load_dataset
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.run._gc import YOUNG_THRESHOLD, quiet_gc
from h2hmem.testing import ScriptedChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
from mm_fakes import HashEmbedder


def _tracked_turns() -> int:
    """Turns the collector would walk (frozen objects are not listed by gc.get_objects)."""
    return sum(isinstance(o, Turn) for o in gc.get_objects())


def test_a_run_answers_with_the_dataset_frozen_and_restores_the_collector(sample_root, tmp_path):
    before = (gc.get_threshold(), gc.get_freeze_count())
    seen: list[tuple[int, int]] = []

    def reply(_request) -> str:
        seen.append((_tracked_turns(), gc.get_threshold()[0]))
        return "Not mentioned."

    ds = load_dataset(sample_root, "multi-party")
    assert _tracked_turns() >= sum(len(s.turns) for d in ds.dialogues for s in d.sessions) > 0
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
    # every answer call ran with no turn of the dataset left for a collection to walk, at the raised threshold
    assert seen == [(0, max(YOUNG_THRESHOLD, before[0][0]))] * 6
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    assert _tracked_turns() > 0  # unfrozen again


def test_overlapping_runs_restore_the_collector_when_the_last_one_ends():
    before = (gc.get_threshold(), gc.get_freeze_count())
    first, second = quiet_gc(), quiet_gc()
    first.__enter__()
    probe = [[]]  # allocated while the first run is active
    second.__enter__()
    assert any(o is probe for o in gc.get_objects())  # the second run did not freeze again
    first.__exit__(None, None, None)  # the first run ends while the second still answers
    assert gc.get_threshold()[0] == max(YOUNG_THRESHOLD, before[0][0])
    assert not any(o is first for o in gc.get_objects())  # still frozen
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


def test_what_the_process_set_itself_is_left_as_it_was():
    saved = gc.get_threshold()
    gc.freeze()  # e.g. a server that froze before forking
    host_frozen = gc.get_freeze_count()
    gc.set_threshold(0)  # automatic collection off
    marker = [[]]  # allocated after the host's freeze: a second freeze would hide it from the collector
    try:
        with quiet_gc():
            # frozen objects freed by reference counting leave the permanent generation, so the count can
            # only fall on its own; a second freeze would raise it and take the marker
            assert gc.get_threshold()[0] == 0 and gc.get_freeze_count() <= host_frozen
            assert any(o is marker for o in gc.get_objects())
        assert gc.get_threshold()[0] == 0 and gc.get_freeze_count() <= host_frozen
        assert any(o is marker for o in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)
