"""Server-side scoring of a validated submission against the server's own gold answers.

The submitted ``original_answer`` and ``category`` are never read here: a question's gold and
sub-type come from the dataset, so editing them in a file cannot change a score
(``docs/leaderboard.md``). Every dataset question of a submitted split is scored; a question
without a row, or with an empty ``system_answer`` (a failed answer), scores 0 and counts in the
denominator (``docs/metric-definitions.md`` §3).
"""

from __future__ import annotations

import functools

from pydantic import BaseModel

from .. import defaults
from ..data import SPLITS, Dataset, TaskType
from ..metrics import LexicalScores, aggregate, lexical_scores
from ..records import Aggregate, Cell
from ._validate import SubmissionReport

METRICS = ("precision", "recall", "f1", "bleu1", "exact_match")
"""Lexical columns, in display order (docs/metric-definitions.md §1)."""


class QuestionResult(BaseModel):
    """Scores of one question of one entry."""

    question_id: str
    split: str
    task_type: str
    """Abbreviation (UPR … AR), from the dataset."""
    main_category: str
    system_answer: str
    answered: bool
    """False when the submission has no row for the question."""
    precision: float
    recall: float
    f1: float
    bleu1: float
    exact_match: float
    judge_score: float | None = None
    judge_reasoning: str | None = None


@functools.lru_cache(maxsize=65_536)
def _lexical(pred: str, ref: str) -> LexicalScores:
    # Pure function of its inputs; resubmissions repeat most (answer, gold) pairs.
    return lexical_scores(pred, ref)


def score_submission(report: SubmissionReport, dataset: Dataset) -> list[QuestionResult]:
    """Lexical scores of every question of the submitted splits, in dataset order.

    Args:
        report: a validated submission (its ``matched`` rows give the answers).
        dataset: the gold dataset the report was checked against.

    Raises:
        h2hmem.metrics.TokenizerUnavailableError: NLTK is missing (never a silent fallback).
    """
    answers = {m.question_id: m.system_answer for m in report.matched}
    splits = set(report.files.values())
    out = []
    for q in dataset.questions:
        if q.split not in splits:
            continue
        answer = answers.get(q.id)
        s = _lexical(answer or "", q.gold)
        if not (answer or "").strip():
            s = s.model_copy(update=dict.fromkeys(METRICS, 0.0))  # a failed or missing answer scores 0
        out.append(
            QuestionResult(
                question_id=q.id,
                split=q.split,
                task_type=q.task_type.abbr,
                main_category=q.main_category.value,
                system_answer=answer or "",
                answered=answer is not None,
                **{m: getattr(s, m) for m in METRICS},
            )
        )
    return out


GROUP_ORDER: tuple[str, ...] = (
    "all",
    "split:dyadic",
    "split:multi-party",
    *dict.fromkeys(f"main:{t.main_category.value}" for t in TaskType),
    *(f"sub:{t.abbr}" for t in TaskType),
)
"""Summary groups: all questions, each split, each main category, each sub-type."""


def group_label(key: str) -> str:
    """``"split:dyadic"`` → ``"Dyadic"``; ``"main:Memory Recall"`` → ``"Recall"``; ``"sub:UPR"`` → ``"UPR"``."""
    kind, _, name = key.partition(":")
    if kind == "all":
        return "All"
    if kind == "split":
        return name.capitalize()
    if kind == "main":
        return name.split(" ", 1)[-1]
    return name


def _records(results: list[QuestionResult], with_judge: bool) -> list[dict]:
    out = []
    for r in results:
        rec = {
            "question_id": r.question_id,
            "split": r.split,
            "task_type": r.task_type,
            "main_category": r.main_category,
            "dialogue": r.question_id.split("/")[1],
            "failed": not r.system_answer.strip(),
            **{m: getattr(r, m) for m in METRICS},
        }
        if with_judge:
            rec["judge"] = r.judge_score
        out.append(rec)
    return out


def _judge_counts(records: list[dict]) -> dict[str, tuple[int, int]]:
    """Group key → (answered questions, answered questions the judge scored). A missing answer is
    scored 0 without a call: it is not *judged*, so it counts in neither."""
    out: dict[str, list[int]] = {}
    for r in records:
        if r["failed"]:
            continue
        for g in ("all", f"split:{r['split']}", f"main:{r['main_category']}", f"sub:{r['task_type']}"):
            c = out.setdefault(g, [0, 0])
            c[0] += 1
            c[1] += r.get("judge") is not None
    return {g: (a, j) for g, (a, j) in out.items()}


def _stats(
    cell: Cell, metrics: tuple[str, ...], macro: bool, judge_counts: tuple[int, int] = (0, 0)
) -> dict[str, float | int | list[float] | None]:
    n = cell.n_total
    st: dict[str, float | int | list[float] | None] = {
        "n": n,
        "answered": n - cell.failed,
        "coverage": (n - cell.failed) / n if n else 0.0,
    }
    for m in (*METRICS, "judge"):
        c = cell.metrics.get(m)
        st[m] = c.mean if c else None
        st[f"{m}_ci"] = c.ci if c else None
        if macro:
            st[f"{m}_macro"] = c.macro if c else None
    answered, judged = judge_counts
    st["judged"] = judged
    st["judge_coverage"] = judged / answered if answered else 0.0
    return st


def summarise(results: list[QuestionResult], *, n_boot: int = defaults.N_BOOT, seed: int = 0) -> dict[str, dict]:
    """Scores per group (keys of :data:`GROUP_ORDER` that have questions), via :func:`h2hmem.metrics.aggregate`.

    Each group: ``n`` (questions), ``answered`` and ``coverage`` (= share with a non-empty answer;
    the others score 0 and stay in the denominator), for every lexical metric and ``judge`` the
    micro average (the paper's "weighted average", docs/metric-definitions.md §3) and ``<metric>_ci`` (95%
    bootstrap interval, ``n_boot`` resamples, seeded), ``judged`` (answered questions the judge
    scored) and ``judge_coverage`` (= judged / answered: a missing answer scores 0 in ``judge``
    without being judged). ``all`` and split groups also carry ``<metric>_macro`` (mean of sub-type
    means). ``judge`` is None until the judge has scored at least one answered question.
    """
    with_judge = any(r.judge_score is not None and r.system_answer.strip() for r in results)
    metrics = (*METRICS, "judge") if with_judge else METRICS
    records = _records(results, with_judge)
    counts = _judge_counts(records) if with_judge else {}
    agg = Aggregate.model_validate(
        aggregate(records, metrics, groups=("task_type", "main_category"), n_boot=n_boot, seed=seed)
    )
    out: dict[str, dict] = {}
    splits = agg.splits
    present = {r.split for r in results}

    def stats(cell: Cell, group: str, macro: bool) -> dict:
        return _stats(cell, metrics, macro=macro, judge_counts=counts.get(group, (0, 0)))

    if results:
        out["all"] = stats(splits["all"].overall, "all", macro=True)
    for sp in SPLITS:
        if sp in present:
            out[f"split:{sp}"] = stats(splits[sp].overall, f"split:{sp}", macro=True)
    for main, cell in splits["all"].main_category.items():
        out[f"main:{main}"] = stats(cell, f"main:{main}", macro=False)
    for abbr, cell in splits["all"].task_type.items():
        out[f"sub:{abbr}"] = stats(cell, f"sub:{abbr}", macro=False)
    return {g: out[g] for g in GROUP_ORDER if g in out}
