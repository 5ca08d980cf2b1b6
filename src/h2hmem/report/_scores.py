"""Which score the report compares runs on, and how to read it out of a scores summary.

The headline score is the LLM judge (the paper's metric) when every run has judge scores,
otherwise the official set-based F1 for all runs: one table never mixes the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..metrics import DEFAULT_JUDGE_SPEC, EVIDENCE_DEFAULT, LEXICAL_TITLES
from ._runs import RunResult

__all__ = [
    "EVIDENCE_DEFAULT",
    "LEXICAL_TITLES",
    "ScoreMetric",
    "cell_metric",
    "comparable_with_published",
    "primary_metric",
    "run_aggregate",
]


@dataclass(frozen=True)
class ScoreMetric:
    """A metric of ``scores/summary.json``: ``source`` ("lexical", "judge", "evidence") and the
    field in its aggregate ("f1", "score", "recall@5"…); ``name`` is for titles and axes."""

    source: str
    field: str
    name: str
    judge_models: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return "LLM judge score" if self.source == "judge" else "F1" if self.field == "f1" else self.field


def primary_metric(runs: list[RunResult]) -> ScoreMetric:
    """The LLM judge score when every run was judged, else the official F1."""
    if runs and all(r.has_judge for r in runs):
        models = tuple(sorted({r.summary["metrics"]["judge"]["model"] for r in runs}))
        return ScoreMetric("judge", "score", f"LLM judge score ({', '.join(models)})", models)
    return ScoreMetric("lexical", "f1", LEXICAL_TITLES["f1"])


def comparable_with_published(metric: ScoreMetric) -> bool:
    """True only for judge scores given by the published judge (``openai:gpt-4o-mini``)."""
    return metric.source == "judge" and metric.judge_models == (DEFAULT_JUDGE_SPEC,)


def run_aggregate(run: RunResult, source: str) -> dict[str, Any] | None:
    """The :func:`~h2hmem.metrics.aggregate` output of ``source`` in the run's summary (None if
    absent, or evidence with status n/a)."""
    m = run.summary.get("metrics", {}).get(source)
    return m.get("aggregate") if m else None


def cell_metric(
    agg: dict[str, Any] | None, field: str, group: str | None, key: str | None, split: str = "all"
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(cell, cell["metrics"][field])`` of a group cell (``group=None``: the overall cell)."""
    if agg is None:
        return None, None
    s = agg["splits"][split]
    cell = s["overall"] if group is None else s.get(group, {}).get(key)
    return cell, (cell["metrics"].get(field) if cell else None)
