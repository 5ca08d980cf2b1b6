"""Efficiency row: memory-build time from the manifest's observe() timing, retrieval from the method."""

from pathlib import Path

import pytest

from h2hmem.records import Prediction
from h2hmem.report._efficiency import efficiency
from h2hmem.report._runs import RunResult


def _pred(i: int, latency: float, retrieval: float | None) -> Prediction:
    details = {"retrieval_s": retrieval} if retrieval is not None else {}
    return Prediction(
        question_id=f"dyadic/dialogue1/session1/q{i}",
        split="dyadic",
        dialogue="dialogue1",
        session="session1",
        task_type="UPR",
        main_category="Memory Recall",
        difficulty="easy",
        question="q",
        gold="g",
        answer="a",
        latency_s=latency,
        details=details,
    )


def test_build_time_per_session_and_retrieval_time():
    manifest = {"timing": {"memory_build_s": 3.0, "sessions_observed": 6}, "usage": {}}
    run = RunResult(
        dir=Path("."), manifest=manifest, summary={}, predictions=[_pred(0, 2.0, 0.25), _pred(1, 4.0, 0.75)]
    )
    row = efficiency(run)
    assert row["sessions"] == 6
    assert row["build_time"] == pytest.approx(0.5)  # 3.0 s / 6 sessions
    assert row["retrieval_time"] == pytest.approx(0.5)  # mean(0.25, 0.75)
    assert row["answer_time"] == pytest.approx(3.0)  # mean wall time of answer(), retrieval included


def test_no_retrieval_time_when_the_method_reports_none():
    run = RunResult(
        dir=Path("."),
        manifest={"timing": {"memory_build_s": 0.0, "sessions_observed": 2}},
        summary={},
        predictions=[_pred(0, 1.0, None)],
    )
    assert efficiency(run)["retrieval_time"] is None and efficiency(run)["build_time"] == 0.0
