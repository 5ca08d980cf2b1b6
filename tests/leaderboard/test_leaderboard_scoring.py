"""Scoring, matching and ranking rules on small hand-made inputs (values worked out by hand)."""

from __future__ import annotations

import json

import pytest

from h2hmem.data import Dataset, Dialogue, ImageRef, Question, TaskType
from h2hmem.leaderboard import QuestionResult, UploadedFile, check_submission, hash_password, summarise, verify_password
from h2hmem.leaderboard._views import ranking


def _r(qid: str, task: str, f1: float, answered: bool = True, judge: float | None = None) -> QuestionResult:
    t = TaskType[task]
    return QuestionResult(
        question_id=qid,
        split=qid.split("/")[0],
        task_type=t.abbr,
        main_category=t.main_category.value,
        system_answer="an answer" if answered else "",
        answered=answered,
        precision=f1,
        recall=f1,
        f1=f1,
        bleu1=f1,
        exact_match=0.0,
        judge_score=judge,
    )


RESULTS = [
    _r("dyadic/dialogue1/session1/q0", "UPR", 1.0, judge=1.0),
    _r("dyadic/dialogue1/session1/q1", "UPR", 0.5, judge=None),
    _r("dyadic/dialogue1/session2/q0", "CD", 0.0, answered=False, judge=0.0),
    _r("multi-party/dialogue1/session1/q0", "TR", 0.25, judge=0.5),
]


def test_summarise_by_hand():
    s = summarise(RESULTS, n_boot=200)
    a = s["all"]
    assert a["n"] == 4 and a["answered"] == 3 and a["coverage"] == 0.75
    assert a["f1"] == pytest.approx((1 + 0.5 + 0 + 0.25) / 4)  # micro: 0.4375
    assert a["f1_macro"] == pytest.approx(((1 + 0.5) / 2 + 0 + 0.25) / 3)  # UPR .75, CD 0, TR .25
    # judged: answered questions the judge scored (q0, TR); the unanswered CD is scored 0, not judged
    assert a["judge"] == pytest.approx((1 + 0 + 0.5) / 3) and a["judged"] == 2 and a["judge_coverage"] == 2 / 3
    lo, hi = a["f1_ci"]
    assert 0 <= lo <= a["f1"] <= hi <= 1
    assert s["split:dyadic"]["n"] == 3 and s["split:dyadic"]["f1"] == pytest.approx(0.5)
    assert s["split:multi-party"]["f1"] == pytest.approx(0.25)
    assert s["main:Memory Recall"]["f1"] == pytest.approx(0.75) and s["main:Memory Recall"]["n"] == 2
    assert s["main:Memory Application"]["coverage"] == 0.0
    assert s["sub:TR"]["judge"] == pytest.approx(0.5)
    assert list(s) == [
        "all",
        "split:dyadic",
        "split:multi-party",
        "main:Memory Recall",
        "main:Memory Reasoning",
        "main:Memory Application",
        "sub:UPR",
        "sub:TR",
        "sub:CD",
    ]
    unjudged = summarise([r.model_copy(update={"judge_score": None}) for r in RESULTS], n_boot=0)
    assert unjudged["all"]["judge"] is None and unjudged["all"]["judged"] == 0 and unjudged["all"]["f1_ci"] is None


def _q(qid: str, text: str, gold: str, images: tuple[ImageRef, ...] = (), task: TaskType = TaskType.UPR) -> Question:
    split, dialogue, session, q = qid.split("/")
    return Question(
        id=qid,
        split=split,
        dialogue=dialogue,
        session=session,
        index=int(q[1:]),
        text=text,
        images=images,
        gold=gold,
        task_type=task,
        main_category=task.main_category,
    )


def _dataset(*qs: Question) -> Dataset:
    return Dataset(root="/nonexistent", dialogues=(Dialogue(split="dyadic", name="dialogue1", number=1, questions=qs),))


def _file(*rows: dict) -> UploadedFile:
    full = [{"question_image": "", "system_answer": "x", "original_answer": "", "category": "UPR", **r} for r in rows]
    return UploadedFile("prediction_dyadic.json", json.dumps({"predictions": full}).encode())


def test_same_text_questions_are_told_apart_by_image_then_gold():
    img = ImageRef(session="session2", file="1.png")
    ds = _dataset(
        _q("dyadic/dialogue1/session1/q0", "What did Ann buy?", "A kettle"),
        _q("dyadic/dialogue1/session1/q1", "What did Ann buy?", "A lamp"),
        _q("dyadic/dialogue1/session2/q0", "What did Ann buy?", "A rug", images=(img,)),
    )
    rep = check_submission(
        [
            _file(
                {
                    "question_text": "what did  Ann buy?",
                    "question_image": "1.png",
                    "original_answer": "whatever",
                },  # image decides
                {"question_text": "What did Ann buy?", "original_answer": "A lamp"},  # gold copy decides between q0/q1
                {"question_text": "What did Ann buy?", "original_answer": "A kettle"},
            )
        ],
        ds,
    )
    assert rep.ok, [str(p) for p in rep.problems]
    assert [m.question_id for m in rep.matched] == [
        "dyadic/dialogue1/session2/q0",
        "dyadic/dialogue1/session1/q1",
        "dyadic/dialogue1/session1/q0",
    ]
    rep = check_submission([_file({"question_text": "What did Ann buy?", "original_answer": "A sofa"})], ds)
    assert [p.code for p in rep.errors] == ["ambiguous"]
    assert "add question_id" in rep.errors[0].message


def test_identical_questions_are_assigned_in_order_and_image_mismatch_warns():
    ds = _dataset(
        _q("dyadic/dialogue1/session1/q0", "Who came?", "Bo"),
        _q("dyadic/dialogue1/session1/q1", "Who came?", "Bo"),
        _q("dyadic/dialogue1/session1/q2", "Where?", "Home", images=(ImageRef(session="session1", file="2.png"),)),
    )
    rep = check_submission(
        [
            _file(
                {"question_text": "Who came?"},
                {"question_text": "Who came?"},
                {"question_text": "Who came?"},
                {"question_text": "Where?", "question_image": "3.png", "original_answer": "Home"},
            )
        ],
        ds,
    )
    assert [m.question_id for m in rep.matched] == [
        "dyadic/dialogue1/session1/q0",
        "dyadic/dialogue1/session1/q1",
        "dyadic/dialogue1/session1/q2",
    ]
    assert [(p.code, p.row) for p in rep.problems] == [
        ("gold-mismatch", 0),
        ("gold-mismatch", 1),
        ("duplicate", 2),
        ("image-mismatch", 3),
    ]


def test_password_hashes():
    h = hash_password("s3cret-pass!")
    assert h != hash_password("s3cret-pass!")  # salted
    assert verify_password("s3cret-pass!", h) and not verify_password("s3cret-pass?", h)
    assert not verify_password("x", "md5$abc") and not verify_password("x", "garbage")


class _E:
    def __init__(self, id, method, f1):
        import datetime as dt

        self.id, self.method, self.organisation, self.duplicate_of = id, method, "", None
        self.judge_status, self.judge_preset = "none", "paper"
        self.created_at = dt.datetime(2026, 1, id)
        self.summary = {"all": {"f1": f1, "f1_macro": f1, "coverage": 1.0}} if f1 is not None else {}


def test_ranking_ties_and_missing_values():
    rows = ranking([_E(1, "a", 0.5), _E(2, "b", 0.7), _E(3, "c", 0.5), _E(4, "d", None)])
    assert [(r["method"], r["rank"]) for r in rows] == [("b", 1), ("a", 2), ("c", 2), ("d", None)]
    rows = ranking([_E(1, "a", 0.5), _E(2, "b", 0.7), _E(4, "d", None)], sort="all", descending=False)
    assert [r["method"] for r in rows] == ["a", "b", "d"]  # no value: last either way
    with pytest.raises(ValueError, match="unknown sort column"):
        ranking([], sort="evil")
