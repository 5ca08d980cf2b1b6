"""Turn-level evidence metrics and labels, worked out by hand on a tiny dialogue."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from h2hmem.memory import Evidence
from h2hmem.metrics import (
    EvidenceLabel,
    evaluate_run,
    find_evidence_labels,
    load_evidence_labels,
    score_evidence,
    score_turn_evidence,
    turn_metric_names,
    turn_scores,
)
from h2hmem.records import Prediction

A, B, C, D = ("session1", 0), ("session1", 1), ("session2", 0), ("session2", 3)


def test_docstring_example():
    s = turn_scores([A, B, C, D], [B, D])
    assert (s["turn_recall@1"], s["turn_precision@1"], s["turn_ndcg@1"]) == (0.0, 0.0, 0.0)
    assert s["turn_recall@3"] == 0.5 and s["turn_precision@3"] == pytest.approx(1 / 3)
    # DCG@3 = 1/log2(3) (hit at rank 2); IDCG@3 = 1 + 1/log2(3) (two gold turns)
    assert s["turn_ndcg@3"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert s["turn_ndcg@3"] == pytest.approx(0.386853, abs=1e-6)
    assert s["turn_recall@5"] == 1.0 and s["turn_precision@5"] == pytest.approx(2 / 5)
    # DCG@5 = 1/log2(3) + 1/log2(5); IDCG@5 = 1 + 1/log2(3)
    assert s["turn_ndcg@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert s["turn_ndcg@5"] == pytest.approx(0.650921, abs=1e-6)
    assert s["turn_precision@10"] == pytest.approx(0.2)
    assert s["turn_mrr"] == 0.5
    assert list(s) == turn_metric_names()


def test_perfect_and_empty_rankings():
    s = turn_scores([C], [C])
    assert s["turn_recall@1"] == s["turn_precision@1"] == s["turn_ndcg@1"] == s["turn_mrr"] == 1.0
    assert s["turn_precision@5"] == pytest.approx(0.2)  # divided by k, not by the 1 unit returned
    e = turn_scores([], [C])
    assert all(v == 0.0 for v in e.values())
    with pytest.raises(ValueError, match="gold turn"):
        turn_scores([A], [])
    with pytest.raises(ValueError, match="positive"):
        turn_scores([A], [A], ks=(0,))


def _pred(qid, evidence=(), *, error=None, task="UPR"):
    split, dialogue, session = qid.split("/")[:3]
    return Prediction(
        question_id=qid,
        split=split,
        dialogue=dialogue,
        session=session,
        task_type=task,
        main_category="Memory Recall",
        difficulty="easy",
        question="q?",
        gold="g",
        answer=None if error else "a",
        evidence=list(evidence),
        error=error,
        details={"answer_sessions": [session]},
    )


def _label(qid, status="labelled", turns=()):
    return EvidenceLabel(question_id=qid, status=status, turns=[{"session": s, "turn": t} for s, t in turns])


def _ev(*keys):
    return [Evidence(session=s, turn=t) for s, t in keys]


def test_score_turn_evidence_exclusions_duplicates_sessions_and_failures():
    q = [f"dyadic/dialogue1/session1/q{i}" for i in range(7)]
    preds = [
        # a whole-session unit and a repeated turn are skipped: ranking = [A, B]
        _pred(q[0], [Evidence(session="session1"), *_ev(A, A, B)]),
        _pred(q[1], _ev(A)),  # no label at all
        _pred(q[2], _ev(A)),  # Answer Refusal: no support expected
        _pred(q[3], _ev(A)),  # evidence missing
        _pred(q[4], error="boom"),  # failed: 0, not excluded
        _pred(q[5], _ev(A)),  # labelled but no turns listed
        _pred(q[6], _ev(C, D)),
    ]
    labels = {
        q[0]: _label(q[0], turns=[B]),
        q[2]: _label(q[2], "no_support_expected"),
        q[3]: _label(q[3], "evidence_missing", [D]),
        q[4]: _label(q[4], turns=[A]),
        q[5]: _label(q[5]),
        q[6]: _label(q[6], turns=[D, A]),
    }
    recs, info = score_turn_evidence(preds, labels)
    assert info["status"] == "ok" and info["labelled"] == 3
    assert info["excluded"] == {"no_label": 1, "no_support_expected": 1, "evidence_missing": 1, "no_label_turns": 1}
    r0, r4, r6 = recs[0], recs[4], recs[6]
    assert r0["retrieved_turns"] == ["session1/0", "session1/1"] and r0["turn_mrr"] == 0.5
    assert r0["turn_recall@1"] == 0.0 and r0["turn_recall@3"] == 1.0
    assert r4["turn_recall@5"] == 0.0 and r4["failed"]
    assert r6["turn_recall@1"] == 0.0 and r6["turn_recall@5"] == 0.5 and r6["turn_mrr"] == 0.5
    assert all(recs[i]["turn_recall@5"] is None for i in (1, 2, 3, 5))


def test_session_only_methods_are_na():
    p = _pred("dyadic/dialogue1/session1/q0", [Evidence(session="session1")])
    recs, info = score_turn_evidence([p], {p.question_id: _label(p.question_id, turns=[A])})
    assert info["status"] == "n/a" and recs[0]["turn_recall@5"] is None


def test_session_hit_excludes_absent_gold_sessions():
    p1 = _pred("dyadic/dialogue1/session3/q0", _ev(A))
    p2 = _pred("dyadic/dialogue1/session1/q0", _ev(A))
    gold = {p1.question_id: ["session3"], p2.question_id: ["session1", "session3"]}
    recs, info = score_evidence([p1, p2], gold, absent={"dyadic/dialogue1": {"session3"}})
    assert info["excluded"] == {"gold_session_absent": 1}
    assert recs[0]["excluded"] == "gold_session_absent" and recs[0]["hit@5"] is None
    # the absent gold session is left out of the gold set: recall 1/1, not 1/2
    assert recs[1]["gold_sessions"] == ["session1"] and recs[1]["recall@5"] == 1.0


def _write_labels(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dyadic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_load_and_find_labels(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    assert find_evidence_labels(root) is None
    _write_labels(
        tmp_path / "data-labels",
        [
            {
                "question_id": "dyadic/dialogue1/session1/q0",
                "status": "labelled",
                "turns": [{"session": "session1", "turn": 2, "quote": "x"}],
            }
        ],
    )
    assert find_evidence_labels(root) == (tmp_path / "data-labels").resolve()
    _write_labels(root / "evidence-labels", [{"question_id": "dyadic/dialogue1/session1/q0", "status": "unclear"}])
    assert find_evidence_labels(root) == (root / "evidence-labels").resolve()  # inside the root wins
    labs = load_evidence_labels(tmp_path / "data-labels" / "dyadic.jsonl")
    assert labs.get("dyadic/dialogue1/session1/q0").turn_keys == [("session1", 2)]
    assert labs.status_counts() == {"labelled": 1}


def test_bad_label_lines_name_file_line_and_field(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"question_id": "a", "status": "labelled"}\n{"question_id": "b", "status": "maybe"}\n')
    with pytest.raises(ValueError, match=r"x.jsonl: line 2, field status"):
        load_evidence_labels(f)
    f.write_text('{"question_id": "a", "status": "labelled"}\n{"question_id": "a", "status": "labelled"}\n')
    with pytest.raises(ValueError, match="labelled twice"):
        load_evidence_labels(f)
    f.write_text("{nope\n")
    with pytest.raises(ValueError, match="line 1 is not valid JSON"):
        load_evidence_labels(f)
    with pytest.raises(FileNotFoundError):
        load_evidence_labels(tmp_path / "missing.jsonl")


def test_evaluate_run_writes_turn_metrics_and_aggregates(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    q = [f"dyadic/dialogue1/session1/q{i}" for i in range(3)]
    preds = [_pred(q[0], _ev(B, A)), _pred(q[1], _ev(A), task="CD"), _pred(q[2], _ev(C))]
    (run / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in preds))
    _write_labels(
        tmp_path / "labels",
        [
            {"question_id": q[0], "status": "labelled", "turns": [{"session": "session1", "turn": 0}]},
            {"question_id": q[1], "status": "labelled", "turns": [{"session": "session1", "turn": 0}]},
            {"question_id": q[2], "status": "no_support_expected", "turns": []},
        ],
    )
    summary = evaluate_run(run, ("evidence",), n_boot=0, evidence_labels=tmp_path / "labels")
    tv = summary["metrics"]["turn_evidence"]
    assert tv["status"] == "ok" and tv["labelled"] == 2 and tv["excluded"] == {"no_support_expected": 1}
    overall = tv["aggregate"]["splits"]["all"]["overall"]
    assert overall["n_total"] == 2
    # q0: gold at rank 2 → recall@1 0, MRR 0.5; q1: rank 1 → recall@1 1, MRR 1
    assert overall["metrics"]["turn_recall@1"]["mean"] == 0.5
    assert overall["metrics"]["turn_mrr"]["mean"] == 0.75
    assert overall["metrics"]["turn_mrr"]["macro"] == 0.75  # UPR 0.5 and CD 1.0
    assert tv["aggregate"]["splits"]["all"]["task_type"]["CD"]["metrics"]["turn_ndcg@3"]["mean"] == 1.0
    assert (run / "scores" / "turn_evidence.jsonl").is_file()
    # a later evaluation without labels keeps the turn metrics already written
    again = evaluate_run(run, ("lexical",), n_boot=0)
    assert again["metrics"]["turn_evidence"]["labelled"] == 2
