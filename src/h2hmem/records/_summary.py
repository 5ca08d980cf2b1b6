"""The scores summary, ``runs/<run-id>/scores/summary.json``, written by :func:`h2hmem.metrics.evaluate_run`.

One section per metric present in ``scores/`` (``lexical``, ``evidence``, ``turn_evidence``,
``judge``), each with the fields it aggregates and their :class:`Aggregate`.
JSON Schema: ``docs/schemas/scores-summary.schema.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ._aggregate import Aggregate
from ._base import Record
from ._jsonfile import read_record, write_record
from ._usage import Usage
from ._versioned import Versioned

SCORES_SUMMARY = Path("scores") / "summary.json"


def _absent() -> Any:
    """An optional key left out of the file when unset (not written as null)."""
    return Field(None, exclude_if=lambda v: v is None)


class SummaryRun(Record):
    """The run that was scored."""

    dir: str | None = None
    method: str | None = None
    model: str | None = None
    n_predictions: int = 0
    """Predictions scored (after the selection, when there is one)."""
    failed: int = 0
    data_root: str | None = None
    gold_source: Literal["dataset", "predictions"] | None = None
    """Where gold answers and labels came from (the dataset, joined by question id, is preferred)."""
    gold_mismatches: int = 0
    """Predictions whose recorded gold differs from the dataset's."""
    retrieval_only: bool = False


class MetricSection(Record):
    """A metric's section: the fields aggregated and their aggregate (None when the metric is n/a)."""

    model_config = ConfigDict(extra="allow")
    fields: list[str] = []
    aggregate: Aggregate | None = None


class LexicalSection(MetricSection):
    pass


class EvidenceSection(MetricSection):
    """Session evidence hit@k / recall@k."""

    status: Literal["ok", "n/a"] = "ok"
    reason: str | None = None
    """Why the metric is n/a (the method reports no evidence)."""
    excluded: dict[str, int] = {}
    """Exclusion reason → questions."""
    gold_source: str | None = None


class TurnEvidenceSection(MetricSection):
    """Turn-level evidence metrics against supporting-turn labels."""

    status: Literal["ok", "n/a"] = "ok"
    reason: str | None = None
    excluded: dict[str, int] = {}
    labelled: int | None = None
    """Questions scored (a usable label)."""
    labels: str | None = None
    """Source of the labels (file or folder)."""
    labels_meta: dict[str, Any] = {}


class JudgeCoverage(Record):
    judged: int
    total: int
    errors: int = 0
    """Items the judge gave no valid score."""
    failed_answers: int = 0
    reasons: dict[str, int] = {}
    """Why items are unjudged → count."""


class JudgeStale(Record):
    """The judge section was kept from an earlier evaluation but some predictions changed since."""

    missing: int
    dropped: int = 0
    reason: str = ""


class JudgeSection(MetricSection):
    """The LLM judge's scores."""

    model: str
    mode: str = ""
    preset: str = ""
    options: dict[str, str] | Literal["mixed"] = {}
    label: str | None = None
    """``"not comparable with published numbers"`` for a ``local:`` judge."""
    coverage: JudgeCoverage | None = None
    stale: JudgeStale | None = None
    usage: Usage | None = None


class SummaryMetrics(Record):
    """The metric sections present (a metric whose ``scores/*.jsonl`` is absent has none)."""

    lexical: LexicalSection | None = _absent()
    evidence: EvidenceSection | None = _absent()
    turn_evidence: TurnEvidenceSection | None = _absent()
    judge: JudgeSection | None = _absent()

    def sections(self) -> dict[str, MetricSection]:
        """Name → section of the metrics present, in file order."""
        return {k: v for k in type(self).model_fields if (v := getattr(self, k)) is not None}


class ScoresSummary(Versioned):
    """``scores/summary.json``."""

    KIND = "scores-summary"
    schema_: Literal["h2hmem.scores-summary/1"] = Field("h2hmem.scores-summary/1", alias="schema")
    created_at: str | None = None
    preset: str | None = None
    """The judge preset evaluated under (``paper`` / ``harmonized``)."""
    run: SummaryRun = SummaryRun()
    label: str | None = None
    """The judge's comparability label (copied from its section)."""
    selection: dict[str, Any] | None = _absent()
    """The selection scored (``evaluate --select…``); absent for every prediction."""
    metrics: SummaryMetrics


def read_scores_summary(run_dir: str | Path) -> ScoresSummary | None:
    """``run_dir/scores/summary.json`` (or that file's path); None when there is none.

    Raises:
        ValueError: not valid JSON, a field missing or of the wrong type (``metrics``…), or a newer
            schema version (names the file and the field).
    """
    p = Path(run_dir)
    path = p if p.suffix == ".json" and not p.is_dir() else p / SCORES_SUMMARY
    if not path.is_file():
        return None
    return read_record(path, ScoresSummary, "scores summary", bad_json="not valid JSON")


def write_scores_summary(run_dir: str | Path, summary: ScoresSummary) -> None:
    """Write ``run_dir/scores/summary.json`` atomically."""
    write_record(Path(run_dir) / SCORES_SUMMARY, summary, fsync=False)
