"""The report's score tables: runs, leaderboard comparison (with the published reference rows),
per-run metric tables (same layout as :func:`h2hmem.metrics.summary_tables`), difficulty and
evidence recall@5 / hit@5."""

from __future__ import annotations

from typing import Any

from ..data import MainCategory, TaskType
from ..metrics import SPLIT_KEYS, judge_caption, judge_title, other_sections, section_title
from ..records import Cell, MetricCell
from ._published import paper_method_name, published_quality, published_source
from ._runs import RunResult, safe_name
from ._scores import (
    EVIDENCE_DEFAULT,
    LEXICAL_TITLES,
    ScoreMetric,
    cell_metric,
    comparable_with_published,
    run_aggregate,
)
from ._table import Column, ReportTable

DIFFICULTIES = ("easy", "medium", "hard")
EVIDENCE_HIT = "hit@5"


def _score(row: dict[str, Any], key: str, m: MetricCell | None, *, macro: bool = False) -> None:
    if m is None:
        row[key] = None
        return
    row[key] = m.macro if macro else m.mean
    ci = m.macro_ci if macro else m.ci
    if ci is not None:
        row[f"{key}_ci"] = ci


def _count(row: dict[str, Any], key: str, cell: Cell | None, m: MetricCell | None) -> None:
    row[key] = m.n if m else 0
    row[f"{key}_total"] = cell.n_total if cell else 0
    row[f"{key}_failed"] = cell.failed if cell else 0


def _when(iso: str | None) -> str | None:
    """``2026-11-30T07:00:00+00:00`` → ``2026-11-30 07:00:00 UTC`` (other offsets kept)."""
    if not iso:
        return None
    text = str(iso).replace("T", " ", 1)
    return text[:-6] + " UTC" if text.endswith("+00:00") else text


def runs_table(runs: list[RunResult]) -> ReportTable:
    """One row per run: what was run, on what, and how complete it is."""
    cols = [
        Column("run", "run"),
        Column("run_id", "run id"),
        Column("method", "method"),
        Column("model", "model"),
        Column("protocol", "protocol"),
        Column("split", "split"),
        Column("questions", "questions", "count"),
        Column("judge", "judge"),
        Column("started_at", "started"),
        Column("finished_at", "finished"),
    ]
    rows = []
    for r in runs:
        j = r.summary.metrics.judge
        counts = r.manifest.counts
        rows.append(
            {
                "kind": "run",
                "run": r.label,
                "run_id": r.run_id,
                "method": r.method,
                "model": r.model,
                "protocol": r.protocol,
                "split": r.manifest.split or "?",
                "questions": len(r.predictions),
                "questions_total": counts.questions if counts is not None else len(r.predictions),
                "questions_failed": sum(p.failed for p in r.predictions),
                "judge": f"{j.model} ({j.mode} mode)" if j else "none (not judged)",
                "started_at": _when(r.manifest.started_at),
                "finished_at": _when(r.manifest.finished_at),
                "dir": str(r.dir),
            }
        )
    return ReportTable(
        "runs",
        "Runs",
        cols,
        rows,
        caption="questions = predictions recorded (/ questions selected by the run); "
        "failed answers count as 0 in every score.",
    )


def comparison_table(runs: list[RunResult], metric: ScoreMetric) -> ReportTable:
    """Leaderboard: one row per run (best micro average first), then the paper's published rows."""
    cols = [
        Column("rank", "#", "int"),
        Column("run", "run"),
        Column("method", "method"),
        Column("model", "model"),
        Column("protocol", "protocol"),
        Column("source", "source"),
    ]
    cols += [Column(c.value, c.value, "score") for c in MainCategory]
    cols += [
        Column("micro", "weighted avg (micro)", "score"),
        Column("macro", "macro avg", "score"),
        Column("n", "n", "count"),
        Column("coverage", "coverage", "float"),
    ]
    rows = []
    for r in runs:
        agg = run_aggregate(r, metric.source)
        row: dict[str, Any] = {
            "kind": "run",
            "run": r.label,
            "method": paper_method_name(r.method) or r.method,
            "model": r.model,
            "source": "this report",
            "protocol": r.protocol,
            "metric": metric.name,
        }
        for c in MainCategory:
            _score(row, c.value, cell_metric(agg, metric.field, "main_category", c.value)[1])
        cell, m = cell_metric(agg, metric.field, None, None)
        _score(row, "micro", m)
        _score(row, "macro", m, macro=True)
        _count(row, "n", cell, m)
        row["coverage"] = m.coverage if m else None
        rows.append(row)
    rows.sort(key=lambda x: (-(x["micro"] if x["micro"] is not None else -1.0), x["run"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    src = published_source()
    same = comparable_with_published(metric)
    label = "published" + ("" if same else " · not comparable")
    for p in published_quality():
        row = {
            "kind": "published",
            "run": f"{p.method} [published]",
            "method": p.method,
            "model": "paper",
            "protocol": "full",
            "source": label,
            "metric": f"LLM judge ({src['judge']}), {label}",
        }
        row.update({c.value: p.scores.get(c) for c in MainCategory})
        rows.append(row)
    if same:
        note = (
            "Published rows use the same judge model; the paper's answer models, captions and dataset "
            "version may still differ."
        )
    elif metric.source == "judge":
        note = (
            f"Published rows were scored by {src['judge']}; these runs by {', '.join(metric.judge_models)}: "
            "not comparable with published numbers."
        )
    else:
        note = (
            "Published rows are LLM-judge scores; these runs are ranked by the official F1 (no judge scores "
            "for every run): not comparable with published numbers."
        )
    caption = (
        f"Runs ranked by the weighted average (micro: mean over all questions) of the {metric.name}; macro = "
        f"mean of the sub-type means; 95% bootstrap CIs. Published: {src['quality_metric']} — source: "
        f"{src['source']}. {note}"
    )
    return ReportTable("comparison", f"Comparison — {metric.name}", cols, rows, caption=caption)


def metric_table(run: RunResult, source: str, field: str, title: str) -> ReportTable | None:
    """One metric of one run: sub-types grouped by main category, category rows, micro and macro
    averages; columns dyadic / multi-party / all, each with its n (layout of
    :func:`h2hmem.metrics.metric_table`)."""
    agg = run_aggregate(run, source)
    if agg is None:
        return None
    cols = [Column("label", "sub-type")]
    for split in SPLIT_KEYS:
        cols += [Column(split, split, "score"), Column(f"{split}_n", "n", "count")]
    rows = []

    def add(label: str, kind: str, group: str | None, key: str | None, *, macro: bool = False) -> None:
        row: dict[str, Any] = {"kind": kind, "label": label}
        for split in SPLIT_KEYS:
            cell, m = cell_metric(agg, field, group, key, split)
            _score(row, split, m, macro=macro)
            _count(row, f"{split}_n", cell, m)
        rows.append(row)

    for cat in MainCategory:
        for tt in TaskType:
            if tt.main_category is cat:
                add(f"{tt.abbr}  {tt.value}", "subtype", "task_type", tt.abbr)
        add(cat.value, "category", "main_category", cat.value)
    add("Weighted average (micro)", "average", None, None)
    add("Macro average (mean of sub-types)", "average", None, None, macro=True)
    return ReportTable(f"run/{safe_name(run.label)}/{source}/{field}", f"{title} — {run.label}", cols, rows)


def run_metric_tables(run: RunResult) -> list[ReportTable]:
    """The judge score (titled with its model and label) when there is one, F1, BLEU-1, exact
    match, evidence recall@5 and every field of any other scorer's section (a plugin's) — the tables
    of :func:`h2hmem.metrics.summary_tables`, for one run."""
    out = [metric_table(run, "lexical", f, t) for f, t in LEXICAL_TITLES.items()]
    j = run.summary.metrics.judge
    if j:
        t = metric_table(run, "judge", "score", judge_title(j))
        if t is not None:
            t.caption = judge_caption(j)
        out.insert(0, t)  # the paper's metric first
    ev = run.summary.metrics.evidence
    if ev and ev.status == "ok":
        t = metric_table(run, "evidence", EVIDENCE_DEFAULT, f"Evidence {EVIDENCE_DEFAULT}")
        if t is not None:
            excluded = ", ".join(f"{n} {k}" for k, n in ev.excluded.items()) or "none"
            t.caption = f"excluded questions: {excluded}"
        out.append(t)
    for name, section in other_sections(run.summary).items():  # plugin scorers: every field they aggregate
        out += [metric_table(run, name, f, section_title(name, f)) for f in section.fields]
    return [t for t in out if t is not None]


def difficulty_table(runs: list[RunResult], metric: ScoreMetric) -> ReportTable:
    """Runs × difficulty (easy / medium / hard) of the headline metric."""
    cols = [Column("run", "run")]
    for d in DIFFICULTIES:
        cols += [Column(d, d, "score"), Column(f"{d}_n", "n", "count")]
    rows = []
    for r in runs:
        agg = run_aggregate(r, metric.source)
        row: dict[str, Any] = {"kind": "run", "run": r.label}
        for d in DIFFICULTIES:
            cell, m = cell_metric(agg, metric.field, "difficulty", d)
            _score(row, d, m)
            _count(row, f"{d}_n", cell, m)
        rows.append(row)
    return ReportTable(
        "difficulty",
        f"By difficulty — {metric.name}",
        cols,
        rows,
        caption="Mean over the questions of each difficulty label, 95% bootstrap CIs.",
    )


def evidence_table(runs: list[RunResult]) -> ReportTable:
    """Runs × sub-type evidence recall@5 and hit@5 (docs/metric-definitions.md §4); n/a runs are listed."""
    cols = [Column("run", "run"), Column("metric", "metric")]
    cols += [Column(t.abbr, t.abbr, "score") for t in TaskType]
    cols += [Column("all", "all", "score"), Column("n", "n", "count")]
    rows = []
    for r in runs:
        ev = r.summary.metrics.evidence
        agg = run_aggregate(r, "evidence") if ev and ev.status == "ok" else None
        if agg is None:
            reason = (ev.reason if ev else None) or "not scored"
            rows.append({"kind": "run", "run": r.label, "metric": f"n/a: {reason}"})
            continue
        for field in (EVIDENCE_DEFAULT, EVIDENCE_HIT):
            row: dict[str, Any] = {"kind": "run", "run": r.label, "metric": field}
            for t in TaskType:
                _score(row, t.abbr, cell_metric(agg, field, "task_type", t.abbr)[1])
            cell, m = cell_metric(agg, field, None, None)
            _score(row, "all", m)
            _count(row, "n", cell, m)
            rows.append(row)
    return ReportTable(
        "evidence",
        "Evidence recall@5 and hit@5 per sub-type",
        cols,
        rows,
        caption="Did the method's top-5 evidence units come from the gold sessions? recall@5 = fraction of "
        "gold sessions covered, hit@5 = at least one; session0 (cross-session pool) questions "
        "name no gold session and are excluded. No LLM involved.",
    )


def subtype_table(runs: list[RunResult], metric: ScoreMetric) -> ReportTable:
    """Runs × sub-type (UPR … AR) of the headline metric, with 95% CIs and n."""
    cols = [Column("run", "run")] + [Column(t.abbr, t.abbr, "score") for t in TaskType] + [Column("n", "n", "count")]
    rows = []
    for r in runs:
        agg = run_aggregate(r, metric.source)
        row: dict[str, Any] = {"kind": "run", "run": r.label}
        for t in TaskType:
            _score(row, t.abbr, cell_metric(agg, metric.field, "task_type", t.abbr)[1])
        cell, m = cell_metric(agg, metric.field, None, None)
        _count(row, "n", cell, m)
        rows.append(row)
    groups = "; ".join(
        f"{c.value}: " + ", ".join(t.abbr for t in TaskType if t.main_category is c) for c in MainCategory
    )
    return ReportTable(
        "subtypes",
        f"Per sub-type — {metric.name}",
        cols,
        rows,
        caption=f"Mean per sub-type with 95% bootstrap CIs. {groups}. "
        + "; ".join(f"{t.abbr} = {t.value}" for t in TaskType)
        + ".",
    )
