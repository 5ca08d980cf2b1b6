"""The worst-scored questions, with question, gold answer and every run's answer side by side
(the per-question transcript researchers audit a number with; cf. simple-evals' HTML report).

Ranking: mean over the runs of the headline score (judge, else F1; a failed answer counts 0,
an unjudged one is left out of the mean), ascending; ties by the mean F1, then question order
(split, dialogue, session, index). Only questions answered by every run are ranked.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

from ..metrics import question_order
from ._runs import RunResult
from ._scores import ScoreMetric
from ._table import Column, ReportTable

DEFAULT_WORST = 15
"""Questions shown (our choice: one screen of answers)."""


def _score(run: RunResult, qid: str, metric: ScoreMetric, failed: bool) -> float | None:
    if failed:
        return 0.0
    source = run.judge if metric.source == "judge" else run.f1
    return source.get(qid)


def worst_questions(runs: list[RunResult], metric: ScoreMetric, k: int = DEFAULT_WORST) -> ReportTable:
    """Table of the ``k`` lowest-scored questions (ranking in the module docstring); columns
    question id, sub-type, question, gold, then ``answer_i`` / ``score_i`` for run ``i``."""
    by_run = [{p.question_id: p for p in r.predictions} for r in runs]
    common = set(by_run[0]) if by_run else set()
    for b in by_run[1:]:
        common &= set(b)
    ranked = []
    for qid in common:
        scores = [_score(r, qid, metric, b[qid].failed) for r, b in zip(runs, by_run)]
        f1s = [0.0 if b[qid].failed else (r.f1.get(qid) or 0.0) for r, b in zip(runs, by_run)]
        known = [s for s in scores if s is not None]
        if not known:
            continue
        ranked.append((fmean(known), fmean(f1s), question_order(qid), qid, scores))
    ranked.sort(key=lambda x: x[:3])
    cols = [
        Column("question_id", "question id"),
        Column("task_type", "sub-type"),
        Column("question", "question"),
        Column("gold", "gold answer"),
    ]
    for i, r in enumerate(runs):
        cols += [Column(f"answer_{i}", f"{r.label}: answer"), Column(f"score_{i}", f"{metric.short}", "score")]
    rows: list[dict[str, Any]] = []
    for mean, _, _, qid, scores in ranked[:k]:
        p0 = by_run[0][qid]
        row: dict[str, Any] = {
            "question_id": qid,
            "task_type": p0.task_type,
            "question": p0.question,
            "gold": p0.gold,
            "mean": mean,
        }
        for i, (b, s) in enumerate(zip(by_run, scores)):
            p = b[qid]
            row[f"answer_{i}"] = f"[failed] {p.error}" if p.failed else (p.answer or "")
            row[f"score_{i}"] = s
            row[f"run_{i}"] = r.dir.name  # the viewer's name of the run (`h2hmem view` links)
        rows.append(row)
    return ReportTable(
        "worst_questions",
        f"The {len(rows)} worst-scored questions ({metric.name})",
        cols,
        rows,
        caption="Lowest mean score over the runs first; ties by mean F1, then question order. "
        "A failed answer scores 0. Question and gold answer as recorded in the first run's predictions.",
    )
