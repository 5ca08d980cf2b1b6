"""Evidence hit@k / recall@k worked out by hand."""

from __future__ import annotations

import pytest

from h2hmem.memory import Evidence
from h2hmem.metrics import evidence_metric_names, evidence_scores, score_evidence
from h2hmem.records import Prediction


def _ev(*sessions):
    return [Evidence(session=s, turn=i) for i, s in enumerate(sessions)]


def test_docstring_example():
    s = evidence_scores(_ev("session2", "session2", "session5", "session1"), ["session1", "session5"])
    assert (s["hit@1"], s["recall@1"]) == (0.0, 0.0)
    assert (s["hit@3"], s["recall@3"]) == (1.0, 0.5)
    assert (s["hit@5"], s["recall@5"]) == (1.0, 1.0)
    assert (s["hit@all"], s["recall@all"]) == (1.0, 1.0)
    assert list(s) == evidence_metric_names()


def test_k_counts_units_not_sessions():
    # ten turns of session3 then the gold session: only "all" reaches it
    s = evidence_scores(_ev(*["session3"] * 10, "session7"), ["session7"])
    assert s["hit@10"] == 0.0 and s["hit@all"] == 1.0


def test_empty_evidence_and_errors():
    s = evidence_scores([], ["session1"])
    assert all(v == 0.0 for v in s.values())
    with pytest.raises(ValueError, match="gold session"):
        evidence_scores(_ev("session1"), [])
    with pytest.raises(ValueError, match="positive"):
        evidence_scores(_ev("session1"), ["session1"], ks=(0,))


def _pred(qid, session, evidence=(), *, error=None, details=None):
    split, dialogue = qid.split("/")[:2]
    return Prediction(
        question_id=qid,
        split=split,
        dialogue=dialogue,
        session=session,
        task_type="UPR",
        main_category="Memory Recall",
        difficulty="easy",
        question="q?",
        gold="g",
        answer=None if error else "a",
        evidence=list(evidence),
        error=error,
        details=details or {},
    )


def test_score_evidence_sources_exclusions_and_failures():
    preds = [
        _pred("dyadic/dialogue1/session2/q0", "session2", _ev("session2"), details={"answer_sessions": ["session9"]}),
        _pred("dyadic/dialogue1/session3/q0", "session3", _ev("session1"), details={"answer_sessions": ["session3"]}),
        _pred("dyadic/dialogue1/session0/q0", "session0", _ev("session1"), details={"answer_sessions": []}),
        _pred("dyadic/dialogue1/session4/q0", "session4", error="boom", details={"answer_sessions": ["session4"]}),
        _pred("dyadic/dialogue1/session5/q0", "session5", _ev("session5")),
    ]
    gold = {"dyadic/dialogue1/session2/q0": ["session2"]}  # the dataset wins over the copy in details
    recs, info = score_evidence(preds, gold)
    assert info["status"] == "ok" and info["gold_source"] == "dataset"
    assert info["excluded"] == {"no_gold_session": 1, "gold_unknown": 1}
    by = {r["question_id"].split("/")[2]: r for r in recs}
    assert by["session2"]["recall@1"] == 1.0 and by["session2"]["gold_sessions"] == ["session2"]
    assert by["session3"]["hit@all"] == 0.0
    assert by["session0"]["excluded"] == "no_gold_session" and by["session0"]["recall@5"] is None
    assert by["session4"]["failed"] and by["session4"]["recall@5"] == 0.0
    assert by["session5"]["excluded"] == "gold_unknown"


def test_session0_questions_are_scored_when_their_gold_names_real_sessions():
    """The public session0 pool says only ["session0"]: excluded. The synthetic data lists the real
    evidence sessions there, so that evidence can be scored (docs/data-synth-download.md); before,
    every session0 question was excluded as no_gold_session, gold sessions or not."""
    preds = [
        _pred("dyadic/dialogue1/session0/q0", "session0", _ev("session3", "session1"), details={"answer_sessions": ["session0"]}),
        _pred("dyadic/dialogue1/session0/q1", "session0", _ev("session3", "session1", "session4"), details={"answer_sessions": ["session2", "session3"]}),
    ]  # fmt: skip
    recs, info = score_evidence(preds)
    assert info["excluded"] == {"no_gold_session": 1}
    pooled, synthetic = recs
    assert pooled["excluded"] == "no_gold_session" and pooled["recall@5"] is None
    assert synthetic["excluded"] is None and synthetic["gold_sessions"] == ["session2", "session3"]
    # retrieved sessions in rank order: session3, session1, session4 → one of the two gold sessions
    assert (synthetic["hit@1"], synthetic["recall@1"], synthetic["recall@5"]) == (1.0, 0.5, 0.5)


def test_method_without_evidence_is_na_not_zero():
    preds = [_pred("dyadic/dialogue1/session2/q0", "session2", details={"answer_sessions": ["session2"]})]
    recs, info = score_evidence(preds)
    assert info["status"] == "n/a" and info["gold_source"] == "predictions"
    assert recs[0]["recall@5"] is None and recs[0]["excluded"] is None
