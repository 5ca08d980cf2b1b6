"""Measured efficiency per run (the paper's efficiency table, from what a run records).

Sources and meaning of each number:

- **memory build, per session**: the manifest's ``usage["memory_build"]`` (model calls made while
  observing sessions: A-Mem's note writer…) divided by the sessions observed. Its time is the
  manifest's ``timing.memory_build_s_per_session`` (wall time of ``observe()``: model calls,
  embedding and indexing — the paper's meaning) when the run recorded it; for older runs, the
  summed wall time of the build model calls over the sessions with turns in the run's dialogues.
- **retrieval, per query**: mean of ``details["retrieval_s"]`` for methods that time retrieval.
- **answer, per query**: mean over the answered (not failed) predictions of the prediction's
  ``latency_s`` (wall time of ``MemoryMethod.answer``: retrieval + answer call, measured at the
  run's concurrency) and of its usage (tokens, cost).
- **judge, per query**: the judge usage in ``scores/summary.json`` (or the manifest's
  ``usage["judge"]``) divided by the questions judged.
- **caption**: the manifest's ``usage["caption"]`` in total (captions are made once per dataset).
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import Any

from ..data import load_dataset
from ..records import Usage
from ._published import published_efficiency, published_source
from ._runs import RunResult
from ._table import Column, ReportTable

_SESSIONS_CACHE: dict[tuple[str, str], dict[str, int]] = {}


def _usage(u: Usage | None) -> dict[str, float]:
    u = u or Usage()
    return {
        k: float(getattr(u, k))
        for k in ("prompt_tokens", "completion_tokens", "calls", "cached_calls", "cost_usd", "latency_s")
    }


def _sessions_per_dialogue(root: str, split: str) -> dict[str, int]:
    key = (root, split)
    if key not in _SESSIONS_CACHE:
        ds = load_dataset(Path(root), split if split in ("dyadic", "multi-party") else "all", strict=False)
        _SESSIONS_CACHE[key] = {d.id: sum(1 for s in d.sessions if s.turns and not s.absent) for d in ds.dialogues}
    return _SESSIONS_CACHE[key]


def sessions_observed(run: RunResult) -> int | None:
    """Sessions with turns in the dialogues the run answered; None when the dataset is not on disk."""
    root = run.summary.run.data_root or run.manifest.data_root
    if not root or not Path(root).is_dir():
        return None
    try:
        per = _sessions_per_dialogue(str(root), run.manifest.split or "all")
    except Exception:  # a dataset that no longer loads: the count is unknown, not fatal to a report
        return None
    dialogues = {f"{p.split}/{p.dialogue}" for p in run.predictions}
    return sum(per.get(d, 0) for d in dialogues)


def efficiency(run: RunResult) -> dict[str, Any]:
    """The efficiency row of one run (keys = the columns of :func:`efficiency_table`)."""
    usage = run.manifest.usage
    build = _usage(usage.get("memory_build"))
    timing = run.manifest.timing
    sessions = (timing.sessions_observed if timing else 0) or sessions_observed(run)
    ok = [p for p in run.predictions if not p.failed]
    judge = run.summary.metrics.judge
    judge_usage = _usage((judge.usage if judge else None) or usage.get("judge"))
    judged = (judge.coverage.judged if judge and judge.coverage else 0) or 0
    caption = _usage(usage.get("caption"))
    retrieval = [float(p.details["retrieval_s"]) for p in ok if isinstance(p.details.get("retrieval_s"), (int, float))]
    per_s = (lambda x: x / sessions) if sessions else (lambda x: None)
    per_j = (
        (lambda x: x / judged) if judged and (judge_usage["calls"] or judge_usage["cached_calls"]) else (lambda x: None)
    )
    return {
        "kind": "run",
        "run": run.label,
        "sessions": sessions,
        "build_calls": int(build["calls"]),
        "build_tokens": per_s(build["prompt_tokens"] + build["completion_tokens"]),
        "build_time": (
            timing.memory_build_s / timing.sessions_observed
            if timing and timing.sessions_observed
            else per_s(build["latency_s"])
        ),
        "build_cost": per_s(build["cost_usd"]),
        "retrieval_time": fmean(retrieval) if retrieval else None,
        "queries": len(ok),
        "answer_tokens": fmean(p.usage.total_tokens for p in ok) if ok else None,
        "answer_time": fmean(p.latency_s for p in ok) if ok else None,
        "answer_cost": fmean(p.usage.cost_usd for p in ok) if ok else None,
        "cached": sum(p.cached for p in ok),
        "judge_tokens": per_j(judge_usage["prompt_tokens"] + judge_usage["completion_tokens"]),
        "judge_cost": per_j(judge_usage["cost_usd"]),
        "caption_tokens": caption["prompt_tokens"] + caption["completion_tokens"] or None,
        "caption_cost": caption["cost_usd"] or None,
        "concurrency": run.manifest.config.concurrency,
    }


_ALWAYS = {
    "run",
    "sessions",
    "build_calls",
    "build_tokens",
    "build_time",
    "build_cost",
    "queries",
    "answer_tokens",
    "answer_time",
    "answer_cost",
}
COLUMNS = [
    Column("run", "run"),
    Column("sessions", "sessions", "int"),
    Column("build_calls", "build calls", "int"),
    Column("build_tokens", "build tokens /session", "tokens"),
    Column("build_time", "build time /session", "seconds"),
    Column("build_cost", "build cost /session", "usd"),
    Column("queries", "queries", "int"),
    Column("answer_tokens", "answer tokens /query", "tokens"),
    Column("retrieval_time", "retrieval time /query", "seconds"),
    Column("answer_time", "retrieval+answer time /query", "seconds"),
    Column("answer_cost", "answer cost /query", "usd"),
    Column("cached", "cached answers", "int"),
    Column("judge_tokens", "judge tokens /query", "tokens"),
    Column("judge_cost", "judge cost /query", "usd"),
    Column("caption_tokens", "caption tokens (total)", "tokens"),
    Column("caption_cost", "caption cost (total)", "usd"),
    Column("concurrency", "concurrency", "int"),
]


def efficiency_table(runs: list[RunResult]) -> ReportTable:
    """Measured rows (one per run) followed by the paper's published efficiency rows."""
    rows = [efficiency(r) for r in runs]
    for p in published_efficiency():
        rows.append(
            {
                "kind": "published",
                "run": f"{p.method} [published]",
                "build_time": p.memory_build_per_session_s,
                "retrieval_time": p.retrieval_per_query_s,
                "answer_time": p.retrieval_per_query_s + p.answer_per_query_s,
            }
        )
    caption = (
        "Measured. build = work done while observing sessions, per session observed: tokens and cost of its "
        "model calls (e.g. A-Mem's note writer); time = wall time of observe() (embedding and indexing "
        "included) when the run recorded it. retrieval = the method's own retrieval time, when it reports "
        "one. retrieval+answer = mean wall time of answer() per answered question, at the run's "
        "concurrency; tokens and cost per answered question. judge = judge usage per judged question. "
        "Published rows (" + published_source()["source"] + "): total wall time of memory build per session and "
        "of retrieval + answer per query, on the paper's hardware and models — for orientation only."
    )
    # judge and caption columns only when some run has them: the table stays readable
    cols = [c for c in COLUMNS if c.key in _ALWAYS or any(r.get(c.key) is not None for r in rows)]
    return ReportTable("efficiency", "Efficiency per stage (tokens, time, cost)", cols, rows, caption=caption)
