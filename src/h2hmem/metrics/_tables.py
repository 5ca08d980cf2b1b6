"""Rich tables of a scores summary (``scores/summary.json``), for the CLI and the report.

One table per metric: rows = the sub-types grouped by main category (abbreviation + name), each
main category's row, then the micro average (the paper's "weighted average") and the macro
average (mean of the sub-type means); columns = dyadic, multi-party, all, each with its ``n``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from ..data import MainCategory, TaskType
from ..records import Aggregate, Cell, JudgeCoverage, JudgeSection, MetricSection, ScoresSummary
from ._aggregate import SPLIT_KEYS
from ._scorer_lexical import LEXICAL_TITLES
from ._scorer_registry import BUILTIN_SCORERS, available_scorers

EVIDENCE_DEFAULT = "recall@5"
TURN_EVIDENCE_DEFAULT = ("turn_recall@5", "turn_ndcg@5")


def _fmt(value: float | None, ci: list[float] | None, show_ci: bool) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}"
    if show_ci and ci is not None:
        text += f" [dim][{ci[0]:.3f}, {ci[1]:.3f}][/]"
    return text


def _n(cell: Cell | None, field: str, coverage: bool) -> str:
    if not cell or not cell.n_total:
        return "0"
    m = cell.metrics[field]
    text = str(m.n) if not coverage or m.n == cell.n_total else f"{m.n}/{cell.n_total}"
    if cell.failed:
        text += f" [red]({cell.failed}✗)[/]"
    return text


def metric_table(
    agg: Aggregate | Mapping[str, Any],
    field: str,
    title: str,
    *,
    coverage: bool = False,
    show_ci: bool = True,
    caption: str | None = None,
) -> Table:
    """One metric of one :func:`~h2hmem.metrics.aggregate` output (or its :class:`~h2hmem.records.Aggregate`)
    as a table.

    ``coverage``: show ``n/total`` where some questions have no value (judge coverage).
    The ``n`` column marks failed answers (scored 0) as ``(k✗)``.
    """
    agg = Aggregate.model_validate(agg)
    t = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    t.add_column("sub-type")
    for split in SPLIT_KEYS:
        t.add_column(split, justify="right")
        t.add_column("n", justify="right", style="dim")

    def row(label: str, group: str | None, key: str | None, *, macro: bool = False, style: str | None = None) -> None:
        cells = []
        for split in SPLIT_KEYS:
            cell = agg.splits[split].cell(group, key)
            m = cell.metrics[field] if cell else None
            if macro and m is not None:
                cells += [_fmt(m.macro, m.macro_ci, show_ci), f"{m.macro_types or 0} types"]
            else:
                cells += [_fmt(m.mean if m else None, m.ci if m else None, show_ci), _n(cell, field, coverage)]
        t.add_row(label, *cells, style=style)

    for cat in MainCategory:
        for tt in TaskType:
            if tt.main_category is cat:
                row(f"{tt.abbr}  {tt.value}", "task_type", tt.abbr)
        row(cat.value, "main_category", cat.value, style="bold")
        t.add_section()
    row("Weighted average (micro)", None, None, style="bold")
    row("Macro average (mean of sub-types)", None, None, macro=True, style="bold")
    return t


def summary_tables(summary: ScoresSummary | Mapping[str, Any], *, show_ci: bool = True) -> list[Table]:
    """Tables for every metric in ``summary`` (a :class:`~h2hmem.records.ScoresSummary` or the dict
    :func:`~h2hmem.metrics.evaluate_run` returns): F1, BLEU-1 and exact match (lexical); the judge
    score with coverage (titled with the judge model and, for a ``local:`` judge, "not comparable
    with published numbers"); evidence recall@5 (or a note when the method reports no evidence); turn recall@5 and nDCG@5
    when supporting-turn labels were used; then one table per field of every other scorer's section (plugins)."""
    summary = ScoresSummary.model_validate(summary)
    tables: list[Table] = []
    metrics = summary.metrics
    who = " · ".join(str(x) for x in (summary.run.method, summary.run.model) if x)
    suffix = f" — {who}" if who else ""
    if metrics.lexical is not None and metrics.lexical.aggregate is not None:
        for field, title in LEXICAL_TITLES.items():
            tables.append(metric_table(metrics.lexical.aggregate, field, f"{title}{suffix}", show_ci=show_ci))
    j = metrics.judge
    if j is not None and j.aggregate is not None:
        tables.append(
            metric_table(
                j.aggregate,
                "score",
                judge_title(j) + suffix,
                coverage=True,
                show_ci=show_ci,
                caption=judge_caption(j),
            )
        )
    if metrics.evidence is not None:
        ev = metrics.evidence
        excluded = ", ".join(f"{n} {k}" for k, n in ev.excluded.items()) or "none"
        if ev.status == "ok" and ev.aggregate is not None:
            tables.append(
                metric_table(
                    ev.aggregate,
                    EVIDENCE_DEFAULT,
                    f"Evidence {EVIDENCE_DEFAULT}{suffix}",
                    show_ci=show_ci,
                    caption=f"excluded questions: {excluded}",
                )
            )
        else:
            t = Table(title=f"Evidence {EVIDENCE_DEFAULT}{suffix}", title_justify="left")
            t.add_column("status")
            t.add_row(f"n/a: {ev.reason or 'no evidence'}")
            tables.append(t)
    if metrics.turn_evidence is not None:
        tv = metrics.turn_evidence
        excluded = ", ".join(f"{n} {k}" for k, n in tv.excluded.items()) or "none"
        if tv.status == "ok" and tv.aggregate is not None:
            for field in TURN_EVIDENCE_DEFAULT:
                tables.append(
                    metric_table(
                        tv.aggregate,
                        field,
                        f"Turn evidence {field}{suffix}",
                        show_ci=show_ci,
                        caption=f"labels: {tv.labels}; excluded questions: {excluded}",
                    )
                )
        else:
            t = Table(title=f"Turn evidence{suffix}", title_justify="left")
            t.add_column("status")
            t.add_row(f"n/a: {tv.reason or 'no labelled question'}")
            tables.append(t)
    for name, section in other_sections(summary).items():
        for field in section.fields:
            agg = section.aggregate
            if agg is not None:  # always: other_sections keeps sections with an aggregate
                tables.append(metric_table(agg, field, f"{section_title(name, field)}{suffix}", show_ci=show_ci))
    return tables


def other_sections(summary: ScoresSummary) -> dict[str, MetricSection]:
    """The sections of scorers other than the built-in ones (plugins) that have an aggregate, by name."""
    return {
        name: section
        for name, section in summary.metrics.sections().items()
        if name not in BUILTIN_SCORERS and section.aggregate is not None
    }


def section_title(name: str, field: str) -> str:
    """A field's display title: the registered scorer's :meth:`~h2hmem.metrics.Scorer.title`, else
    ``"<name> <field>"`` (a summary read without the plugin that wrote it)."""
    try:
        cls = available_scorers().get(name)
    except ValueError:  # a broken plugin elsewhere must not stop a table
        cls = None
    return cls().title(field) if cls is not None else f"{name} {field}"


def judge_title(j: JudgeSection) -> str:
    """``"LLM judge score (openai:gpt-4o-mini, session mode)"``, with the comparability label and
    ``— STALE`` when the section is kept from an earlier evaluation (``j.stale``)."""
    title = f"LLM judge score ({j.model}, {j.mode} mode)"
    if j.label:
        title += f" — {j.label.upper()}"
    if j.stale is not None:
        title += " — STALE"
    return title


def judge_caption(j: JudgeSection) -> str:
    """Coverage (judged / total, unjudged by reason, failed answers) and the stale note."""
    cov = j.coverage or JudgeCoverage(judged=0, total=0)
    why = f" ({', '.join(f'{k}: {n}' for k, n in cov.reasons.items())})" if cov.reasons else ""
    caption = (
        f"coverage {cov.judged}/{cov.total} judged"
        + (f", {cov.errors} unjudged{why or ' (errors)'}" if cov.errors else "")
        + (f"; {cov.failed_answers} failed answers scored 0" if cov.failed_answers else "")
        + (f"; judge preset {j.preset}" if j.preset not in ("", "None") else "")
    )
    if j.stale is not None:
        caption += f"; STALE: {j.stale.reason}"
    return caption
