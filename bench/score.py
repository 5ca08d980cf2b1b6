"""Workload 5: ``score`` — lexical scoring of every answer and judge-score aggregation.

The answers are real prediction records: the harness answers every question once against a mock
model with no latency (naive-rag, C = 64; the mock answers with a sentence from the retrieved
memory, so answers have realistic length and vocabulary). Then, in a fresh process:

- lexical: :func:`h2hmem.metrics.lexical_scores` (P/R/F1, BLEU-1, exact match) for every answer;
- aggregation: :func:`h2hmem.metrics.aggregate` of a judge score per question (one of the five
  judge levels, chosen by CRC-32 of the question id — deterministic, no judge model is called)
  with 1,000 bootstrap resamples, by split × (sub-type, main category, difficulty, dialogue);
  and the same with all six metrics at once.
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso
from ._mock import MockServerProcess
from .run import harness_row

LEXICAL_GOAL_S = 1.0
JUDGE_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The five judge levels (spec/metrics.md §2)."""
ANSWER_CONCURRENCY = 64

COLUMNS = [
    ("what", "what"),
    ("questions", "questions"),
    ("load_s", "read predictions s"),
    ("lexical_s", "lexical s"),
    ("lexical_us_per_answer", "µs/answer"),
    ("aggregate_judge_s", "aggregate judge s"),
    ("aggregate_all_s", "aggregate 6 metrics s"),
    ("n_boot", "bootstrap"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def score_step(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: predictions (path of a predictions.jsonl), limit (None = all), n_boot."""
    from h2hmem.metrics import aggregate, lexical_scores
    from h2hmem.records import read_predictions

    lexical_scores("warm up", "warm up")  # loads NLTK and the stopword list: not per-answer work
    t0 = time.perf_counter()
    preds = read_predictions(Path(spec["predictions"]))
    if spec.get("limit") is not None:
        preds = preds[: spec["limit"]]
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores = [lexical_scores(p.answer or "", p.gold) for p in preds]
    lexical_s = time.perf_counter() - t0

    records = []
    for p, s in zip(preds, scores):
        judge = JUDGE_LEVELS[zlib.crc32(p.question_id.encode("utf-8")) % len(JUDGE_LEVELS)]
        records.append(
            {
                "question_id": p.question_id,
                "split": p.split,
                "dialogue": p.dialogue,
                "task_type": p.task_type,
                "main_category": p.main_category,
                "difficulty": p.difficulty,
                "failed": p.failed,
                "judge": 0.0 if p.failed else judge,
                **s.model_dump(),
            }
        )
    n_boot = spec.get("n_boot", 1000)
    t0 = time.perf_counter()
    agg = aggregate(records, ["judge"], n_boot=n_boot, seed=0)
    aggregate_judge_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    aggregate(records, ["precision", "recall", "f1", "bleu1", "exact_match", "judge"], n_boot=n_boot, seed=0)
    aggregate_all_s = time.perf_counter() - t0
    overall = agg["splits"]["all"]["overall"]["metrics"]["judge"]
    return {
        "questions": len(preds),
        "load_s": round(load_s, 3),
        "lexical_s": round(lexical_s, 4),
        "lexical_us_per_answer": round(lexical_s / max(len(preds), 1) * 1e6, 1),
        "aggregate_judge_s": round(aggregate_judge_s, 3),
        "aggregate_all_s": round(aggregate_all_s, 3),
        "n_boot": n_boot,
        "judge_mean": overall["mean"],
        "judge_ci": overall["ci"],
        "mean_f1": round(sum(s.f1 for s in scores) / max(len(scores), 1), 4),
    }


def predictions_for(b: Bench, root: Path) -> str:
    """Answer every question of ``root`` once (no latency) and return the predictions path."""
    with MockServerProcess(0.0) as srv:
        row = harness_row(
            b,
            srv,
            root,
            "naive-rag",
            ANSWER_CONCURRENCY,
            None,
            tag="answers (L=0)",
            cache=False,
            run_id=f"answers-{root.name}",
        )
    return str(Path(row["run_dir"]) / "predictions.jsonl")


def score_row(b: Bench, root: Path, limit: int | None) -> dict[str, Any]:
    spec = {"predictions": predictions_for(b, root), "limit": limit, "n_boot": b.profile.n_boot}
    res = b.step(
        f"score {root.name} ({limit or 'all'} answers)",
        "bench.score:score_step",
        spec,
        key=f"score|{root.name}|{limit}|{b.profile.n_boot}",
    )
    return {"what": f"answers of {root.name}", **res}


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    res = WorkloadResult("score", f"score: lexical scoring and judge aggregation — {p.name}", COLUMNS)
    res.settings = {
        "answers": f"naive-rag predictions (mock, L=0, C={ANSWER_CONCURRENCY})",
        "judge_scores": "deterministic levels by CRC-32 of the question id",
        "n_boot": p.n_boot,
        "groups": "split × (task_type, main_category, difficulty, dialogue)",
    }
    row = score_row(b, root, p.score_questions)
    res.rows.append(row)
    goal = LEXICAL_GOAL_S * row["questions"] / 2236  # stated for the full 2,236 answers
    res.targets.append(
        Target(
            f"lexical scoring of {row['questions']:,} answers",
            f"< {goal:.2f} s",
            row["lexical_s"],
            "s",
            row["lexical_s"] < goal,
        )
    )
    res.notes.append(f"judge mean {row['judge_mean']:.3f} (95% CI {row['judge_ci']}); mean F1 {row['mean_f1']}")
    b.write(res, started)
    return res
