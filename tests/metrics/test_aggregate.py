"""Aggregation pinned on a hand-made set of per-question scores (micro ≠ macro)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from h2hmem.metrics import aggregate


def _rec(split, tt, dialogue, f1, judge, *, failed=False, difficulty="easy"):
    return {
        "question_id": f"{split}/{dialogue}/{tt}/{f1}",
        "split": split,
        "task_type": tt,
        "main_category": None,
        "difficulty": difficulty,
        "dialogue": dialogue,
        "failed": failed,
        "f1": f1,
        "judge": judge,
    }


RECORDS = [
    _rec("dyadic", "UPR", "dialogue1", 1.0, 1.0),
    _rec("dyadic", "UPR", "dialogue1", 0.0, 0.5, difficulty="hard"),
    _rec("dyadic", "Unimodal Precise Recall", "dialogue2", 1.0, None),  # not judged
    _rec("dyadic", "UPR", "dialogue2", 1.0, 0.75),
    _rec("dyadic", "CD", "dialogue2", 0.0, 0.0),
    _rec("dyadic", "Conflict Detection (CD)", "dialogue10", 0.0, 0.0),
    _rec("multi-party", "AR", "dialogue1", 1.0, 1.0),
    _rec("multi-party", "TR", "dialogue1", None, None, failed=True),  # failed answer: counts as 0
]


@pytest.fixture(scope="module")
def agg():
    return aggregate(RECORDS, ["f1", "judge"], n_boot=2000, seed=7)


def test_micro_and_macro_by_hand(agg):
    # all: UPR mean 3/4 (4 q), CD 0 (2), AR 1 (1), TR 0 (1, failed)
    f1 = agg["splits"]["all"]["overall"]["metrics"]["f1"]
    assert f1["mean"] == pytest.approx(4 / 8)
    assert f1["macro"] == pytest.approx((0.75 + 0 + 1 + 0) / 4)
    assert f1["macro_types"] == 4
    dy = agg["splits"]["dyadic"]["overall"]["metrics"]["f1"]
    assert dy["mean"] == pytest.approx(3 / 6)
    assert dy["macro"] == pytest.approx((0.75 + 0) / 2)
    mp = agg["splits"]["multi-party"]["overall"]["metrics"]["f1"]
    assert mp["mean"] == pytest.approx(0.5) and mp["macro"] == pytest.approx(0.5)


def test_counts_failed_and_coverage(agg):
    all_ = agg["splits"]["all"]["overall"]
    assert all_["n_total"] == 8 and all_["failed"] == 1
    assert all_["metrics"]["f1"]["n"] == 8  # the failed answer is scored 0, not dropped
    judge = agg["splits"]["dyadic"]["overall"]["metrics"]["judge"]
    assert judge["n"] == 5 and judge["coverage"] == pytest.approx(5 / 6)
    assert judge["mean"] == pytest.approx((1 + 0.5 + 0.75 + 0 + 0) / 5)
    assert agg["splits"]["multi-party"]["overall"]["failed"] == 1
    assert agg["splits"]["multi-party"]["task_type"]["TR"]["metrics"]["judge"]["mean"] == 0.0


def test_groups_are_keyed_and_ordered(agg):
    dy = agg["splits"]["dyadic"]
    assert list(dy["task_type"]) == ["UPR", "CD"]
    assert dy["task_type"]["UPR"]["n_total"] == 4
    assert dy["task_type"]["UPR"]["metrics"]["f1"]["mean"] == pytest.approx(0.75)
    assert list(agg["splits"]["all"]["main_category"]) == ["Memory Recall", "Memory Reasoning", "Memory Application"]
    app = agg["splits"]["all"]["main_category"]["Memory Application"]["metrics"]["f1"]
    assert app["mean"] == pytest.approx(1 / 3) and app["n"] == 3
    assert list(dy["dialogue"]) == ["dyadic/dialogue1", "dyadic/dialogue2", "dyadic/dialogue10"]
    assert dy["difficulty"]["hard"]["n_total"] == 1 and dy["difficulty"]["easy"]["n_total"] == 5


def test_ci_brackets_mean_and_is_seeded(agg):
    for split in ("dyadic", "multi-party", "all"):
        cells = [agg["splits"][split]["overall"]] + [
            c for g in ("task_type", "main_category", "dialogue") for c in agg["splits"][split][g].values()
        ]
        for cell in cells:
            for m in cell["metrics"].values():
                if m["mean"] is None:
                    continue
                lo, hi = m["ci"]
                assert lo <= m["mean"] + 1e-12 and m["mean"] <= hi + 1e-12
    o = agg["splits"]["all"]["overall"]["metrics"]["f1"]
    assert o["macro_ci"][0] <= o["macro"] <= o["macro_ci"][1]
    again = aggregate(RECORDS, ["f1", "judge"], n_boot=2000, seed=7)
    assert again == agg
    other = aggregate(RECORDS, ["f1", "judge"], n_boot=2000, seed=8)
    assert other["splits"]["all"]["overall"]["metrics"]["f1"]["mean"] == o["mean"]


def test_constant_group_has_zero_width_ci(agg):
    cd = agg["splits"]["dyadic"]["task_type"]["CD"]["metrics"]["f1"]
    assert cd["ci"] == [0.0, 0.0]


def test_bootstrap_width_matches_normal_theory():
    rng = np.random.default_rng(1)
    recs = [_rec("dyadic", "UPR", "dialogue1", float(v), None) for v in rng.integers(0, 2, 1000)]
    m = aggregate(recs, ["f1"], n_boot=2000, seed=0)["splits"]["dyadic"]["overall"]["metrics"]["f1"]
    p = m["mean"]
    expected = 2 * 1.96 * math.sqrt(p * (1 - p) / 1000)
    assert m["ci"][1] - m["ci"][0] == pytest.approx(expected, rel=0.12)


def test_empty_split_and_unknown_label():
    out = aggregate([_rec("dyadic", "UPR", "dialogue1", 1.0, None)], ["f1", "judge"], n_boot=100)
    mp = out["splits"]["multi-party"]["overall"]
    assert mp["n_total"] == 0 and mp["metrics"]["f1"]["mean"] is None and mp["metrics"]["f1"]["macro"] is None
    judge = out["splits"]["dyadic"]["overall"]["metrics"]["judge"]
    assert judge["n"] == 0 and judge["coverage"] == 0.0 and judge["mean"] is None and judge["ci"] is None
    with pytest.raises(ValueError, match="record 0.*unknown task type"):
        aggregate([_rec("dyadic", "XYZ", "dialogue1", 1.0, None)], ["f1"])
    with pytest.raises(ValueError, match="missing field 'split'"):
        aggregate([{"task_type": "UPR"}], ["f1"])


def test_full_size_is_fast():
    rng = np.random.default_rng(0)
    tts = ["UPR", "CRR", "KR", "TR", "MCR", "RET", "TTL", "CD", "AR"]
    recs = []
    for i in range(2236):
        split = "dyadic" if i < 2046 else "multi-party"
        rec = _rec(split, tts[i % 9], f"dialogue{i % 20 + 1}", float(rng.random()), float(rng.random()))
        rec.update(bleu1=float(rng.random()), exact_match=float(rng.integers(0, 2)), precision=0.5, recall=0.5)
        recs.append(rec)
    start = time.process_time()
    aggregate(recs, ["precision", "recall", "f1", "bleu1", "exact_match"], n_boot=1000)
    assert time.process_time() - start < 5.0


def test_single_split_run_has_identical_split_and_all_cells():
    recs = [r for r in RECORDS if r["split"] == "dyadic"]
    out = aggregate(recs, ["f1"], n_boot=500, seed=3)["splits"]
    assert out["dyadic"] == out["all"]
