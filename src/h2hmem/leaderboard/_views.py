"""What the pages show, computed from stored summaries: ranking rows, sorting, CSV, bar chart."""

from __future__ import annotations

import csv
import io
from typing import Any

from ..data import TaskType
from ._db import Entry
from ._scoring import GROUP_ORDER, METRICS, group_label

METRIC_LABELS = {
    "f1": "F1",
    "bleu1": "BLEU-1",
    "exact_match": "Exact match",
    "precision": "Precision",
    "recall": "Recall",
    "judge": "LLM judge",
}
"""Metrics a ranking can show; F1 is the default column (the official lexical headline)."""

INFO_COLUMNS = (("method", "Method"), ("organisation", "Organisation"), ("submitted", "Submitted"))


def ranking_columns() -> list[tuple[str, str]]:
    """``(key, label)`` of the score columns: macro, every group, coverage."""
    return [("macro", "Macro"), *((g, group_label(g)) for g in GROUP_ORDER), ("coverage", "Coverage")]


def column_titles() -> dict[str, str]:
    """A description of each score column of :func:`ranking_columns` (header tooltips)."""
    titles = {
        "macro": "Macro: mean of the nine sub-type means",
        "all": "All questions (micro average)",
        "coverage": "Coverage: share of questions answered",
    }
    for g in GROUP_ORDER:
        kind, _, name = g.partition(":")
        if kind == "split":
            titles[g] = f"{name.capitalize()} split"
        elif kind == "main":
            titles[g] = name
        elif kind == "sub":
            titles[g] = f"{name}: {next(t.value for t in TaskType if t.abbr == name)}"
    return titles


def judged_preset(e: Entry) -> str | None:
    """The judge preset of ``e``'s judge scores (``paper`` or ``harmonized``); None when it was never
    sent to the judge."""
    return e.judge_preset if e.judge_status != "none" else None


def entry_public(e: Entry) -> dict[str, Any]:
    """The public JSON of an entry (metadata and aggregated scores; no review details)."""
    return {
        "id": e.id,
        "method": e.method,
        "organisation": e.organisation,
        "description": e.description,
        "submitted": e.created_at.isoformat(timespec="seconds") + "Z",
        "approved": e.reviewed_at.isoformat(timespec="seconds") + "Z" if e.reviewed_at else None,
        "judge_model": e.judge_model,
        "judge_preset": judged_preset(e),
        "judge_status": e.judge_status,
        "duplicate_of": e.duplicate_of,
        "scores": {g: e.summary[g] for g in GROUP_ORDER if g in e.summary},
    }


def ranking(
    entries: list[Entry], metric: str = "f1", sort: str = "all", descending: bool = True
) -> list[dict[str, Any]]:
    """One row per entry: ``{"id", "rank", "method", "organisation", "submitted", "duplicate_of",
    "judge_preset", "values": {col: float|None}}`` (``duplicate_of``: the earlier entry with the same
    predictions, or None; ``judge_preset``: see :func:`judged_preset`).

    ``values`` holds ``metric`` for every group of :func:`ranking_columns` (``macro`` = mean of
    the sub-type means, ``coverage`` = answered / questions). Rows are sorted by ``sort`` (a
    score column or an info column); entries without a value sort last either way; ``rank`` is
    the position after sorting by the overall score, ties sharing a rank.

    Raises:
        ValueError: unknown ``metric`` or ``sort`` column.
    """
    if metric not in METRIC_LABELS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRIC_LABELS)}")
    keys = [k for k, _ in ranking_columns()]
    if sort not in keys and sort not in dict(INFO_COLUMNS):
        raise ValueError(f"unknown sort column {sort!r}")
    rows: list[dict[str, Any]] = []
    for e in entries:
        s = e.summary
        values: dict[str, float | None] = {"macro": s.get("all", {}).get(f"{metric}_macro")}
        for g in GROUP_ORDER:
            values[g] = s.get(g, {}).get(metric)
        values["coverage"] = s.get("all", {}).get("coverage")
        rows.append(
            {
                "id": e.id,
                "method": e.method,
                "organisation": e.organisation,
                "submitted": e.created_at.date().isoformat(),
                "duplicate_of": e.duplicate_of,
                "judge_preset": judged_preset(e),
                "values": values,
            }
        )
    overall = sorted((r["values"]["all"] for r in rows if r["values"]["all"] is not None), reverse=True)
    for r in rows:
        v = r["values"]["all"]
        r["rank"] = overall.index(v) + 1 if v is not None else None
    if sort in dict(INFO_COLUMNS):
        rows.sort(key=lambda r: str(r[sort]).casefold(), reverse=descending)
    else:
        present = [r for r in rows if r["values"][sort] is not None]
        absent = [r for r in rows if r["values"][sort] is None]
        present.sort(key=lambda r: (r["values"][sort], -r["id"]), reverse=descending)
        rows = present + absent
    return rows


def _csv_safe(value: object) -> object:
    # A cell starting with = + - @ is a formula in spreadsheet programs (CSV injection).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def ranking_csv(entries: list[Entry]) -> str:
    """CSV of every entry: metadata, then ``<group>/<metric>`` for each group, with n and coverages."""
    fields = [*METRICS, "judge", "n", "coverage", "judged", "judge_coverage"]
    header = ["id", "method", "organisation", "submitted", "judge_model", "judge_preset"]
    header += [f"{g}/{f}" for g in GROUP_ORDER for f in fields]
    header += [f"all/{m}_macro" for m in (*METRICS, "judge")]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for e in entries:
        row: list[object] = [
            e.id,
            e.method,
            e.organisation,
            e.created_at.isoformat(timespec="seconds") + "Z",
            e.judge_model or "",
            judged_preset(e) or "",
        ]
        for g in GROUP_ORDER:
            st = e.summary.get(g, {})
            row += [st.get(f, "") if st.get(f) is not None else "" for f in fields]
        row += [e.summary.get("all", {}).get(f"{m}_macro", "") for m in (*METRICS, "judge")]
        w.writerow([_csv_safe(v) for v in row])
    return buf.getvalue()


def questions_csv(entry: Entry) -> str:
    """Per-question scores of one entry."""
    cols = ["question_id", "split", "task_type", "main_category", "answered", *METRICS, "judge_score", "system_answer"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for q in entry.questions:
        w.writerow([_csv_safe(getattr(q, c)) if getattr(q, c) is not None else "" for c in cols])
    return buf.getvalue()


def subtype_chart(summary: dict[str, dict], metrics: tuple[str, ...] = ("f1", "judge")) -> dict[str, Any]:
    """Geometry of a grouped bar chart (one group per sub-type), drawn as inline SVG by the template.

    Returns ``{"width", "height", "bars": [{x, y, w, h, value, metric, color}], "labels": [{x, text}],
    "legend": [{metric, label, color}], "ticks": [{y, text}]}``; values are fractions in [0, 1].
    """
    colors = {"f1": "#3b6ea8", "judge": "#d9822b", "bleu1": "#5a9e4b", "exact_match": "#8e5ea2"}
    shown = [m for m in metrics if any(summary.get(f"sub:{t.abbr}", {}).get(m) is not None for t in TaskType)]
    left, top, plot_h, group_w = 40, 24, 200, 64
    bar_w = (group_w - 16) / max(len(shown), 1)
    bars, labels = [], []
    for i, t in enumerate(TaskType):
        x0 = left + i * group_w + 8
        labels.append({"x": x0 + (group_w - 16) / 2, "text": t.abbr})
        for j, m in enumerate(shown):
            v = summary.get(f"sub:{t.abbr}", {}).get(m)
            if v is None:
                continue
            h = plot_h * max(0.0, min(1.0, v))
            bars.append(
                {
                    "x": x0 + j * bar_w,
                    "y": top + plot_h - h,
                    "w": bar_w - 2,
                    "h": h,
                    "value": v,
                    "metric": METRIC_LABELS[m],
                    "task": t.value,
                    "color": colors.get(m, "#777"),
                }
            )
    ticks = [
        {"y": top + plot_h * (1 - f), "text": f"{f:.2f}".rstrip("0").rstrip(".") if f else "0"}
        for f in (0, 0.25, 0.5, 0.75, 1)
    ]
    legend = [{"metric": m, "label": METRIC_LABELS[m], "color": colors.get(m, "#777")} for m in shown]
    return {
        "width": left + len(TaskType) * group_w + 10,
        "height": top + plot_h + 30,
        "plot_top": top,
        "plot_bottom": top + plot_h,
        "left": left,
        "bars": bars,
        "labels": labels,
        "ticks": ticks,
        "legend": legend,
    }
