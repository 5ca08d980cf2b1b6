"""bench.retrieval: the held-out choice of settings and the abstention discrimination (hand-computed)."""

from __future__ import annotations

import json

import pytest

from bench.retrieval import abstention, heldout


def test_leave_one_dialogue_out_and_split_half():
    # setting 0 is better on d1 and d3, setting 1 on d2 (one question each, type T)
    s0 = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.0), "q3": ("d3", "T", 1.0)}
    s1 = {"q1": ("d1", "T", 0.5), "q2": ("d2", "T", 1.0), "q3": ("d3", "T", 0.5)}
    out = heldout([s0, s1])
    # d1 held out: on d2+d3 s0 = 0.5, s1 = 0.75 → s1 scores d1 (0.5); d2: s0 (1.0 vs 0.5) → 0.0; d3: like d1 → 0.5
    assert out["lodo_choice"] == {"d1": 1, "d2": 0, "d3": 1}
    assert out["lodo"]["overall"] == pytest.approx(1 / 3, abs=1e-4)
    # halves A = {d1, d3}, B = {d2}: chosen on B → s1 scores A (0.5, 0.5); chosen on A → s0 scores B (0.0)
    assert out["halves"] == {"A": ["d1", "d3"], "B": ["d2"]}
    assert out["split_half"]["T"] == pytest.approx(1 / 3, abs=1e-4)
    assert out["full_sample"] == [{"overall": 0.6667, "T": 0.6667}, {"overall": 0.6667, "T": 0.6667}]


def test_ties_go_to_the_first_setting_unless_asked():
    same = {"q1": ("d1", "T", 1.0), "q2": ("d2", "T", 0.0)}
    assert set(heldout([same, dict(same)])["lodo_choice"].values()) == {0}
    assert set(heldout([same, dict(same)], ties_to_last=True)["lodo_choice"].values()) == {1}


def _pred(qid, task, signal):
    return {
        "question_id": qid,
        "split": "dyadic",
        "dialogue": "dialogue1",
        "session": "session1",
        "task_type": task,
        "main_category": "Memory Recall",
        "difficulty": "easy",
        "question": "?",
        "gold": "x",
        "answer": "I don't know.",
        "evidence": [],
        "method": "h2h",
        "details": {"abstain_signal": signal},
    }


def test_abstention_auroc_and_threshold(tmp_path):
    rows = [_pred("q1", "AR", 0.2), _pred("q2", "AR", 0.5), _pred("q3", "UPR", 0.3), _pred("q4", "UPR", 0.9)]
    (tmp_path / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = abstention(tmp_path, 0.35)
    # pairs (AR, other) where AR's signal is lower: (0.2, 0.3), (0.2, 0.9), (0.5, 0.9) of 4 → 0.75
    assert out["auroc"] == 0.75
    # flagged below 0.35: q1 (AR) and q3 (UPR) → precision 1/2, recall 1/2
    assert (out["precision"], out["recall"], out["flagged"]) == (0.5, 0.5, 2)
    with pytest.raises(ValueError, match="abstain_signal"):
        (tmp_path / "predictions.jsonl").write_text(json.dumps(_pred("q1", "AR", 0.2)) + "\n")
        abstention(tmp_path, 0.35)
