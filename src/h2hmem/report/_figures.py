"""The report's figures (matplotlib, Agg backend, PNG): one style, the Okabe–Ito colour-blind-safe
palette, the benchmark's names on titles and axes, one bar per run in every group.

Each ``*_figure`` function draws from the report's tables (so the figure and ``summary.json``
show the same numbers), writes ``path`` and returns it (None when there is nothing to draw).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # headless: reports are built on servers and in CI

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from ..data import MainCategory, TaskType
from ._table import ReportTable

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
"""Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour-vision deficiencies."""
HATCHES = ("", "//", "..", "xx")
STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.fontsize": 8.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.family": "DejaVu Sans",
    "axes.edgecolor": "#555555",
}
ERR: dict[str, Any] = {"ecolor": "#333333", "elinewidth": 0.8, "capsize": 2}


def _bar_style(i: int) -> dict[str, Any]:
    return {
        "facecolor": OKABE_ITO[i % len(OKABE_ITO)],
        "hatch": HATCHES[(i // len(OKABE_ITO)) % len(HATCHES)],
        "edgecolor": "white",
        "linewidth": 0.4,
    }


def _grouped(
    ax: Axes, xs: Sequence[float], series: list[tuple[str, list[float | None], list[Any]]], width: float = 0.8
) -> None:
    """Bars of each series at ``xs`` (one group per x), with CI error bars where given."""
    n = max(len(series), 1)
    w = width / n
    for i, (_label, values, cis) in enumerate(series):
        for j, (x, v) in enumerate(zip(xs, values)):
            pos = x - width / 2 + w * (i + 0.5)
            if v is None or v == 0:
                # say "missing" or "zero": an absent bar is ambiguous
                ax.text(
                    pos,
                    0.01,
                    "n/a" if v is None else "0",
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    color="#777777",
                    rotation=90 if v is None else 0,
                    transform=ax.get_xaxis_transform(),
                )
                continue
            ax.bar(pos, v, w, **_bar_style(i))
            ci = cis[j]
            if ci:
                ax.errorbar(pos, v, yerr=[[max(v - ci[0], 0)], [max(ci[1] - v, 0)]], fmt="none", **ERR)
    ax.set_xlim(min(xs) - 0.55, max(xs) + 0.55)


def _legend(fig: plt.Figure, labels: Sequence[str]) -> None:
    """One legend entry per run (in run order), below the axes; drawn from patches so that a run
    with no bar at all still gets its colour."""
    if labels:
        handles = [Patch(label=lab, **_bar_style(i)) for i, lab in enumerate(labels)]
        fig.legend(
            handles=handles, loc="lower center", ncol=min(len(labels), 4), frameon=False, bbox_to_anchor=(0.5, 0.0)
        )


def _save(fig: plt.Figure, path: Path, n_legend_rows: int) -> Path:
    fig.tight_layout(rect=(0, 0.05 + 0.04 * n_legend_rows, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def _legend_rows(n: int) -> int:
    return math.ceil(n / 4)


def _score_axis(ax: Axes, ylabel: str) -> None:
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(ylabel)


def subtype_figure(table: ReportTable, metric_name: str, path: Path, ylabel: str | None = None) -> Path:
    """Bars per sub-type (UPR … AR, grouped by main category), one bar per run (rows of
    ``table``: keys ``run`` and ``UPR`` … ``AR`` with ``*_ci``)."""
    runs = [r for r in table.rows if r.get("kind") == "run"]
    xs, labels, spans, x = [], [], [], 0.0
    for cat in MainCategory:
        start = x
        for t in TaskType:
            if t.main_category is cat:
                xs.append(x)
                labels.append(t.abbr)
                x += 1
        spans.append((cat, start - 0.5, x - 0.5))
        x += 0.6
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(9.5, 4.0))
        series = [
            (r["run"], [r.get(t.abbr) for t in TaskType], [r.get(f"{t.abbr}_ci") for t in TaskType]) for r in runs
        ]
        _grouped(ax, xs, series)
        for i, (cat, lo, hi) in enumerate(spans):
            if i % 2 == 0:
                ax.axvspan(lo, hi, color="#f3f3f3", zorder=0)
            ax.text(
                (lo + hi) / 2,
                -0.13,
                cat.value,
                ha="center",
                va="top",
                fontsize=9,
                fontweight="bold",
                color="#333333",
                transform=ax.get_xaxis_transform(),
            )
        ax.set_xticks(xs, labels)
        _score_axis(ax, ylabel or metric_name)
        ax.set_title(f"{metric_name} per sub-type")
        _legend(fig, [r["run"] for r in runs])
        return _save(fig, path, _legend_rows(len(runs)))


def category_figure(table: ReportTable, metric_name: str, path: Path, ylabel: str | None = None) -> Path:
    """Memory Recall / Reasoning / Application and the weighted average (micro), one bar per run,
    95% CIs as error bars (rows of the comparison table)."""
    runs = [r for r in table.rows if r.get("kind") == "run"]
    keys = [c.value for c in MainCategory] + ["micro"]
    names = [c.value for c in MainCategory] + ["Weighted average\n(micro)"]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 3.8))
        _grouped(
            ax,
            list(range(len(keys))),
            [(r["run"], [r.get(k) for k in keys], [r.get(f"{k}_ci") for k in keys]) for r in runs],
        )
        ax.set_xticks(range(len(keys)), names)
        _score_axis(ax, ylabel or metric_name)
        ax.set_title(f"{metric_name} per main category (95% CI)")
        _legend(fig, [r["run"] for r in runs])
        return _save(fig, path, _legend_rows(len(runs)))


def difficulty_figure(table: ReportTable, metric_name: str, path: Path, ylabel: str | None = None) -> Path:
    """Easy / medium / hard, one bar per run, 95% CIs (rows of the difficulty table)."""
    runs = [r for r in table.rows if r.get("kind") == "run"]
    keys = ("easy", "medium", "hard")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.0, 3.6))
        _grouped(
            ax, list(range(3)), [(r["run"], [r.get(k) for k in keys], [r.get(f"{k}_ci") for k in keys]) for r in runs]
        )
        ax.set_xticks(range(3), [f"{k}" for k in keys])
        ax.set_xlabel("difficulty (dataset label)")
        _score_axis(ax, ylabel or metric_name)
        ax.set_title(f"{metric_name} by difficulty (95% CI)")
        _legend(fig, [r["run"] for r in runs])
        return _save(fig, path, _legend_rows(len(runs)))


def evidence_figure(table: ReportTable, path: Path) -> Path | None:
    """Two panels, recall@5 and hit@5 per sub-type; None when no run reports evidence."""
    fields = ("recall@5", "hit@5")
    by_field = {f: [r for r in table.rows if r.get("metric") == f] for f in fields}
    if not by_field["recall@5"]:
        return None
    n = len(by_field["recall@5"])
    types = [t.abbr for t in TaskType]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
        for ax, f in zip(axes, fields):
            _grouped(
                ax,
                list(range(len(types))),
                [(r["run"], [r.get(t) for t in types], [r.get(f"{t}_ci") for t in types]) for r in by_field[f]],
            )
            ax.set_xticks(range(len(types)), types)
            _score_axis(ax, f"evidence {f}" if ax is axes[0] else "")
            ax.set_title(f"Evidence {f} per sub-type")
        na = [r["run"] for r in table.rows if str(r.get("metric", "")).startswith("n/a")]
        if na:
            fig.text(0.99, 0.01, "no evidence reported: " + ", ".join(na), ha="right", fontsize=7.5, color="#555555")
        _legend(fig, [r["run"] for r in by_field["recall@5"]])
        return _save(fig, path, _legend_rows(n))


def _fmt_value(v: float, unit: str) -> str:
    if unit == "$":
        return f"${v:.2g}" if v < 1 else f"${v:,.2f}"
    if unit == "s":
        return f"{v:.2g} s" if v < 10 else f"{v:,.0f} s"
    return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"


def _efficiency_panel(
    ax: Axes, rows: list[dict[str, Any]], stages: list[tuple[str, str]], unit: str, title: str
) -> None:
    positives = [r[k] for r in rows for k, _ in stages if r.get(k)]
    if not positives:
        ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes, color="#777777")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(title)
        return
    log = max(positives) / min(positives) > 50
    series = [(r["run"], [r.get(k) for k, _ in stages], [None] * len(stages)) for r in rows]
    _grouped(ax, list(range(len(stages))), series)
    n = len(rows)
    for i, (_, values, _) in enumerate(series):
        for j, v in enumerate(values):
            if v:
                ax.text(
                    j - 0.4 + 0.8 / n * (i + 0.5),
                    v,
                    _fmt_value(v, unit),
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    rotation=90 if n > 2 else 0,
                )
    if log:
        ax.set_yscale("log")
        ax.set_ylim(min(positives) / 3, max(positives) * 30)
    else:
        ax.set_ylim(0, max(positives) * 1.3)
    ax.set_xticks(range(len(stages)), [s for _, s in stages])
    ax.set_title(title + (" (log scale)" if log else ""))


def efficiency_figure(table: ReportTable, path: Path) -> Path:
    """Three panels — tokens, time (s), cost (USD) — for memory build per session, retrieval +
    answer per query and judge per query, one bar per run (rows of the efficiency table)."""
    rows = [r for r in table.rows if r.get("kind") == "run"]
    judged = any(r.get("judge_tokens") is not None for r in rows)

    def stages(kind: str) -> list[tuple[str, str]]:
        out = [
            (f"build_{kind}", "memory build\n/ session"),
            (f"answer_{kind}", "retrieval + answer\n/ query" if kind == "time" else "answer\n/ query"),
        ]
        return out + ([(f"judge_{kind}", "judge\n/ query")] if judged and kind != "time" else [])

    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.8))
        _efficiency_panel(axes[0], rows, stages("tokens"), "", "Tokens")
        _efficiency_panel(axes[1], rows, stages("time"), "s", "Time (s)")
        _efficiency_panel(axes[2], rows, stages("cost"), "$", "Cost (USD)")
        _legend(fig, [r["run"] for r in rows])
        return _save(fig, path, _legend_rows(len(rows)))
