"""One run as the report sees it: manifest, predictions, scores summary and per-question scores.

A run without ``scores/summary.json`` is scored first with the offline metrics only (lexical +
evidence recall@k, :func:`h2hmem.metrics.evaluate_run`); the LLM judge is never called here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import defaults
from ..metrics import aggregate, evaluate_run, question_order, read_score_file
from ..records import Aggregate, Manifest, Prediction, RunStore, ScoresSummary, read_predictions, read_scores_summary

SUMMARY = Path("scores") / "summary.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class RunResult:
    """Everything the report needs about one run directory."""

    dir: Path
    manifest: Manifest
    """``manifest.json`` (an empty :class:`~h2hmem.records.Manifest` when the run has none; a
    JSON object given here is validated into one)."""
    summary: ScoresSummary
    """``scores/summary.json`` (a JSON object given here is validated into one)."""
    predictions: list[Prediction]
    """In question order (split, dialogue, session, index)."""
    f1: dict[str, float | None] = field(default_factory=dict)
    """Question id → official F1 (``scores/lexical.jsonl``)."""
    judge: dict[str, float | None] = field(default_factory=dict)
    """Question id → judge score (``scores/judge.jsonl``; None = unjudged)."""
    label: str = ""
    """Display name, unique within a report (set by :func:`label_runs`)."""
    notes: list[str] = field(default_factory=list)
    """Warnings worth printing in the report (stale scores…)."""

    def __post_init__(self) -> None:
        # plain JSON objects (a test's or a notebook's hand-made run) are read as the records they stand for
        if not isinstance(self.manifest, Manifest):
            self.manifest = Manifest.model_validate(self.manifest or {})
        if not isinstance(self.summary, ScoresSummary):
            self.summary = ScoresSummary.model_validate(self.summary or {"metrics": {}})

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.dir.name

    @property
    def method(self) -> str:
        return (
            self.manifest.method
            or self.summary.run.method
            or (self.predictions[0].method if self.predictions else "")
            or "?"
        )

    @property
    def model(self) -> str:
        return self.manifest.model or self.summary.run.model or "?"

    @property
    def protocol(self) -> str:
        return self.manifest.protocol or "?"

    @property
    def has_judge(self) -> bool:
        """Judge scores that describe the current predictions (a stale judge section — kept from an
        earlier evaluation after the answers changed — never counts: it is shown, marked, only)."""
        j = self.summary.metrics.judge
        return j is not None and j.stale is None


def _score_map(path: Path, field_name: str) -> dict[str, float | None]:
    if not path.is_file():
        return {}
    return {r["question_id"]: r.get(field_name) for r in read_score_file(path)}


def load_run(run_dir: str | Path, *, n_boot: int = defaults.N_BOOT, selection: Any = None) -> RunResult:
    """Read ``run_dir``; score it (lexical + evidence, never the judge) when it has no summary or
    its summary lacks the lexical scores.

    Args:
        run_dir: a run directory holding ``predictions.jsonl`` (``manifest.json`` optional).
        n_boot: bootstrap resamples when scoring is needed (default 1,000, docs/metric-definitions.md §3).
        selection: a :class:`~h2hmem.run.Selection`: keep only those questions (their scores are
            aggregated again from ``scores/*.jsonl``).

    Raises:
        FileNotFoundError: not a directory, or no ``predictions.jsonl``.
        ValueError: a bad predictions/scores/manifest file (the message names the file).
    """
    d = Path(run_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"{d}: not a run directory")
    if not (d / "predictions.jsonl").is_file():
        raise FileNotFoundError(f"{d}: no predictions.jsonl (is this a run directory?)")
    manifest = RunStore(d).read_manifest() or Manifest()
    summary_path = d / SUMMARY
    notes = []
    summary = read_scores_summary(d)
    changed = summary is not None and (d / "predictions.jsonl").stat().st_mtime > summary_path.stat().st_mtime
    if summary is None or summary.metrics.lexical is None or changed:
        # offline metrics only; judge lines of changed answers are dropped (the judge section is then
        # marked stale and never the headline), the judge is never called
        summary = ScoresSummary.model_validate(evaluate_run(d, ("lexical", "evidence"), n_boot=n_boot))
        if changed:
            notes.append(
                "predictions.jsonl changed after the last `h2hmem evaluate`: lexical and evidence scores "
                "were recomputed for this report."
            )
    judge = summary.metrics.judge
    if judge is not None and judge.stale is not None:
        notes.append(f"The judge scores are STALE and not used as the headline: {judge.stale.reason}.")
    preds = sorted(read_predictions(d), key=lambda p: question_order(p.question_id))
    run = RunResult(
        dir=d,
        manifest=manifest,
        summary=summary,
        predictions=preds,
        f1=_score_map(d / "scores" / "lexical.jsonl", "f1"),
        judge=_score_map(d / "scores" / "judge.jsonl", "score"),
        notes=notes,
    )
    if selection is not None and not selection.is_empty:
        _restrict(run, selection, n_boot)
    if summary.label and summary.metrics.judge is not None:
        run.notes.append(f"Judge scores are {summary.label} (judge {summary.metrics.judge.model}).")
    return run


def _restrict(run: RunResult, selection: Any, n_boot: int) -> None:
    """Narrow ``run`` to the selected questions and aggregate each metric again over them."""
    keep = {p.question_id for p in selection.apply(run.predictions, strict=False)}
    if not keep:
        raise ValueError(f"{run.dir}: no question of the run matches the selection {selection.recorded()}")
    run.predictions = [p for p in run.predictions if p.question_id in keep]
    run.f1 = {q: v for q, v in run.f1.items() if q in keep}
    run.judge = {q: v for q, v in run.judge.items() if q in keep}
    run.summary = run.summary.model_copy(deep=True)  # a copy: scores/summary.json is not changed
    for source, m in run.summary.metrics.sections().items():
        path = run.dir / "scores" / f"{source}.jsonl"  # every scorer writes scores/<name>.jsonl
        if m.aggregate is None or not path.is_file():
            continue
        recs = [r for r in read_score_file(path) if r["question_id"] in keep and not r.get("excluded")]
        m.aggregate = Aggregate.model_validate(aggregate(recs, m.fields, n_boot=n_boot, seed=m.aggregate.seed))
    run.summary.run.n_predictions = len(run.predictions)
    run.notes.append(f"Restricted to {len(run.predictions)} questions by the selection {selection.recorded()}.")


def label_runs(runs: list[RunResult]) -> None:
    """Give each run the shortest unique display label: method, then "method · model", then
    "method · model · run id", then the directory path."""
    for make in (
        lambda r: r.method,
        lambda r: f"{r.method} · {r.model}",
        lambda r: f"{r.method} · {r.model} · {r.run_id}",
        lambda r: f"{r.method} · {r.dir}",
    ):
        labels = [make(r) for r in runs]
        if len(set(labels)) == len(labels):
            break
    for r, lab in zip(runs, labels):
        r.label = lab


def safe_name(text: str) -> str:
    """A file-system-safe version of ``text`` (letters, digits, ``._-``)."""
    return _SAFE.sub("_", text).strip("._") or "run"
