"""The scores summary, ``runs/<run-id>/scores/summary.json``, written by :func:`h2hmem.metrics.evaluate_run`.

One section per scorer whose ``scores/<name>.jsonl`` is present (built in: ``lexical``,
``evidence``, ``turn_evidence``, ``judge``; a plugin scorer's section under its name), each with
the fields it aggregates and their :class:`Aggregate`; the scorers (and the judge model) as
:class:`~h2hmem.records.ComponentSpec` and the evaluation's :class:`~h2hmem.records.Environment`.
JSON Schema: ``docs/schemas/scores-summary.schema.json``.

Versions: ``/1`` had no ``components``/``environment`` and only the four built-in sections; it
reads as ``/2`` unchanged (both are optional).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from ._aggregate import Aggregate
from ._base import Record
from ._jsonfile import read_record, write_record
from ._provenance import ComponentSpec, Environment
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
    """The metric sections present (a scorer whose ``scores/<name>.jsonl`` is absent has none).

    The built-in scorers' sections are typed fields; any other scorer's (a plugin's) is kept under
    its name as a :class:`MetricSection` (with its extra keys), so a summary written with a plugin
    reads without it."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, MetricSection] = Field(init=False)
    lexical: LexicalSection | None = _absent()
    evidence: EvidenceSection | None = _absent()
    turn_evidence: TurnEvidenceSection | None = _absent()
    judge: JudgeSection | None = _absent()

    def sections(self) -> dict[str, MetricSection]:
        """Name → section of the metrics present: the built-in ones in file order, then the others."""
        out = {k: v for k in type(self).model_fields if (v := getattr(self, k)) is not None}
        return {**out, **(self.__pydantic_extra__ or {})}

    def set_section(self, name: str, section: MetricSection) -> None:
        """Put ``section`` under ``name`` (a built-in name takes its own section type)."""
        setattr(self, name, section)  # extra="allow": another name joins the extra sections


class ScoresSummary(Versioned):
    """``scores/summary.json``."""

    KIND = "scores-summary"
    VERSION = 2
    schema_: Literal["h2hmem.scores-summary/2"] = Field("h2hmem.scores-summary/2", alias="schema")
    created_at: str | None = None
    preset: str | None = None
    """The judge preset evaluated under (``paper`` / ``harmonized``)."""
    run: SummaryRun = SummaryRun()
    label: str | None = None
    """The judge's comparability label (copied from its section)."""
    selection: dict[str, Any] | None = _absent()
    """The selection scored (``evaluate --select…``); absent for every prediction."""
    metrics: SummaryMetrics
    components: list[ComponentSpec] = []
    """The scorers that wrote the sections (``kind: "scorer"``, one each, with their distribution)
    and the judge model (``kind: "judge"``, its resolved options) when the judge ran in this pass.
    Empty in ``/1`` summaries."""
    environment: Environment | None = None
    """The software this evaluation ran on (None in ``/1`` summaries)."""


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
