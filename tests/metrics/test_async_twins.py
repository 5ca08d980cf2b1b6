"""The async twins of the long entry points: awaited inside a running loop (as in a notebook) they
give what the sync ones give, and the sync ones refuse a running loop with a pointer to the twin."""

from __future__ import annotations

import asyncio
import shutil

import pytest

import h2hmem
from h2hmem import InRunningLoopError
from h2hmem._aio import run_sync
from h2hmem.metrics import aevaluate_run, evaluate_run, label_evidence
from tests.metrics.test_evaluate import judge_model, run  # noqa: F401 — the run-directory fixture

JUDGED = dict(judge_mode="question", n_boot=50, preset="harmonized")


def _comparable(summary):
    return {k: v for k, v in summary.items() if k not in ("created_at", "run")}


async def test_aevaluate_run_in_a_running_loop_equals_the_sync_evaluate_run(run, tmp_path):  # noqa: F811
    d, qs = run
    twin = tmp_path / "twin"
    shutil.copytree(d, twin)
    awaited = await aevaluate_run(d, ["lexical", "judge"], judge_model=judge_model("local:smollm2"), **JUDGED)
    # the sync one, where no loop runs (a worker thread), on an identical copy of the run directory
    synced = await asyncio.to_thread(
        evaluate_run, twin, ["lexical", "judge"], judge_model=judge_model("local:smollm2"), **JUDGED
    )
    assert _comparable(awaited) == _comparable(synced)
    assert awaited["metrics"]["judge"]["coverage"]["judged"] == len(qs)
    for name in ("lexical.jsonl", "judge.jsonl"):
        assert (d / "scores" / name).read_text() == (twin / "scores" / name).read_text()


async def test_sync_entry_points_refuse_a_running_loop_and_name_their_twin(run, tmp_path):  # noqa: F811
    d, _ = run
    with pytest.raises(
        InRunningLoopError, match=r"evaluate_run\(\) .*use `await aevaluate_run\(\.\.\.\)` in a notebook"
    ):
        evaluate_run(d, ["judge"], judge_model=judge_model("local:smollm2"), **JUDGED)
    with pytest.raises(InRunningLoopError, match=r"use `await alabel_evidence\(\.\.\.\)`"):
        label_evidence(tmp_path / "nowhere")
    # scoring without the judge waits on nothing, so the sync call still works inside a loop
    offline = evaluate_run(d, ["lexical"], n_boot=50)
    assert (
        offline["metrics"]["lexical"]["aggregate"]
        == (await aevaluate_run(d, ["lexical"], n_boot=50))["metrics"]["lexical"]["aggregate"]
    )


def test_run_sync_outside_a_loop_runs_and_a_loop_free_call_that_waits_is_refused():
    async def three() -> int:
        return 3

    async def waits() -> int:
        await asyncio.sleep(0)
        return 4

    assert run_sync(three, "athree") == 3

    async def inside() -> None:
        assert run_sync(three, "athree", loop_free=True) == 3
        with pytest.raises(InRunningLoopError, match=r"waits\(\) had to wait .*`await awaits\(x, \.\.\.\)`"):
            run_sync(waits, "awaits", args="x, ...", loop_free=True)

    asyncio.run(inside())


def test_the_twins_are_exported_from_the_package_root():
    for sync, twin in [
        ("run_benchmark", "arun_benchmark"),
        ("estimate_run", "aestimate_run"),
        ("evaluate_run", "aevaluate_run"),
        ("estimate_judge", "aestimate_judge"),
        ("label_evidence", "alabel_evidence"),
        ("caption_dataset", "acaption_dataset"),
        ("run_sweep", "arun_sweep"),
        ("estimate_sweep", "aestimate_sweep"),
    ]:
        assert callable(getattr(h2hmem, sync)) and asyncio.iscoroutinefunction(getattr(h2hmem, twin)), twin
    with pytest.raises(AttributeError):
        h2hmem.no_such_function  # noqa: B018
