"""The question table's filters and sort orders on hand-made rows (expected orders worked out by hand)."""

from __future__ import annotations

import pytest

from h2hmem.records import Prediction
from h2hmem.view import Filters, QuestionRow, filter_rows, sort_rows


def row(
    qid: str,
    *,
    f1: float,
    judge: float | None,
    failed: bool = False,
    hit: bool | None = None,
    latency: float = 0.0,
    task: str = "UPR",
) -> QuestionRow:
    split, dialogue, session, _ = qid.split("/")
    p = Prediction(
        question_id=qid,
        split=split,
        dialogue=dialogue,
        session=session,
        task_type=task,
        main_category="Memory Recall",
        difficulty="easy",
        question=f"question {qid}",
        gold="gold",
        answer=None if failed else "an answer",
        error="boom" if failed else None,
        latency_s=latency,
    )
    return QuestionRow(pred=p, lexical={"f1": f1}, judge=None if judge is None else {"score": judge}, hit=hit)


ROWS = [
    row("dyadic/dialogue1/session1/q0", f1=0.5, judge=0.5, hit=True, latency=1.0),
    row("dyadic/dialogue1/session1/q1", f1=0.0, judge=0.5, hit=False, latency=3.0, task="TR"),
    row("dyadic/dialogue1/session2/q0", f1=0.9, judge=None, hit=None, latency=2.0),  # unjudged: its F1 counts
    row("dyadic/dialogue1/session10/q0", f1=0.2, judge=1.0, failed=True, hit=False),  # failed: 0 whatever the judge
    row("multi-party/dialogue2/session1/q0", f1=0.1, judge=0.0, hit=True, task="TR"),
]


def ids(rows: list[QuestionRow]) -> list[str]:
    return [r.id for r in rows]


def test_worst_first_uses_judge_else_f1_and_failed_as_zero():
    # headline scores: 0.5, 0.5, 0.9, 0 (failed), 0.0 → ties: (0, f1 0.1) before (0, f1 0.2); (0.5, 0.0) before (0.5, 0.5)
    assert ids(sort_rows(ROWS, "worst")) == [ROWS[4].id, ROWS[3].id, ROWS[1].id, ROWS[0].id, ROWS[2].id]
    assert ids(sort_rows(ROWS, "best")) == [ROWS[2].id, ROWS[0].id, ROWS[1].id, ROWS[3].id, ROWS[4].id]
    # question order sorts session numbers as numbers: session10 after session2
    assert ids(sort_rows(ROWS, "id")) == [ROWS[0].id, ROWS[1].id, ROWS[2].id, ROWS[3].id, ROWS[4].id]
    assert ids(sort_rows(ROWS, "slow"))[:3] == [ROWS[1].id, ROWS[2].id, ROWS[0].id]
    with pytest.raises(ValueError, match="unknown sort 'x'"):
        sort_rows(ROWS, "x")


@pytest.mark.parametrize(
    "filters, want",
    [
        (Filters(task_type="TR"), [1, 4]),
        (Filters(split="multi-party"), [4]),
        (Filters(dialogue="dyadic/dialogue1"), [0, 1, 2, 3]),
        (Filters(judge="0.5"), [0, 1]),
        (Filters(judge="none"), [2]),
        (Filters(judge="0"), [4]),
        (Filters(f1_min=0.2, f1_max=0.5), [0, 3]),
        (Filters(failed="yes"), [3]),
        (Filters(failed="no", evidence="miss"), [1]),
        (Filters(evidence="n/a"), [2]),
        (Filters(q="BOOM"), [3]),
        (Filters(task_type="TR", judge="0.5", evidence="miss"), [1]),
    ],
)
def test_filters(filters, want):
    assert ids(filter_rows(ROWS, filters)) == [ROWS[i].id for i in want]


def test_query_keeps_set_filters_only():
    f = Filters(task_type="TR", f1_max=0.25, sort="worst")
    assert f.query() == "task_type=TR&f1_max=0.25"
    assert f.query(page=2, sort="best") == "task_type=TR&f1_max=0.25&sort=best&page=2"


def test_headline_prefers_a_current_judge_then_f1():
    from h2hmem.records import ScoresSummary
    from h2hmem.view import headline

    def agg(x: float) -> dict:
        cell = {
            "n_total": 1,
            "metrics": {"score": {"n": 1, "coverage": 1.0, "mean": x}, "f1": {"n": 1, "coverage": 1.0, "mean": x}},
        }
        return {"aggregate": {"metrics": ["score", "f1"], "n_boot": 0, "splits": {"all": {"overall": cell}}}}

    def summary(metrics: dict) -> ScoresSummary:
        return ScoresSummary.model_validate({"metrics": metrics})

    judge = {"model": "openai:x", **agg(0.6)}
    assert headline(summary({"judge": judge, "lexical": agg(0.2)})) == ("judge", 0.6)
    assert headline(summary({"judge": {**judge, "stale": {"missing": 3}}, "lexical": agg(0.2)})) == ("F1", 0.2)
    assert headline(summary({"lexical": agg(0.2)})) == ("F1", 0.2)
    assert headline(None) == ("", None)
