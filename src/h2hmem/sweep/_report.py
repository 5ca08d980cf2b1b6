"""The sweep report: the paper's grid (methods × task types per backbone), main-category and
weighted averages with 95% CIs, the published values beside ours, and the status of every run.

Written to ``<out>/report/``: ``sweep.md``, a self-contained ``sweep.html`` and ``sweep.json``
(the same numbers, JSON). The score is the LLM judge when every run of a table was judged, else
the official F1 (one table never mixes the two, as in :mod:`h2hmem.report`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape

from .._atomic import atomic_write_text
from ..data import MainCategory, TaskType
from ..records import now_iso
from ..report import (
    cell_metric,
    comparable_with_published,
    load_run,
    paper_method_name,
    primary_metric,
    published_quality,
    published_source,
    run_aggregate,
)
from ._grid import SweepRun
from ._spec import SweepSpec
from ._status import CellStatus

TASK_COLUMNS = [t.abbr for t in TaskType]
CATEGORY_COLUMNS = [c.value for c in MainCategory]


def _cell(agg: Any, field: str, group: str | None, key: str | None, split: str) -> dict[str, Any] | None:
    _, m = cell_metric(agg, field, group, key, split)
    if m is None or m.mean is None:
        return None
    return {"mean": m.mean, "ci": m.ci, "n": m.n}


def _grid_row(cell: SweepRun, split: str, field: str, source: str, run: Any) -> dict[str, Any]:
    agg = run_aggregate(run, source)
    overall = cell_metric(agg, field, None, None, split)[1]
    return {
        "method": cell.method.display,
        "kind": "measured",
        "run_id": cell.run_id,
        "task_type": {t: _cell(agg, field, "task_type", t, split) for t in TASK_COLUMNS},
        "main_category": {c: _cell(agg, field, "main_category", c, split) for c in CATEGORY_COLUMNS},
        "overall": _cell(agg, field, None, None, split),
        "macro": (
            {"mean": overall.macro, "ci": overall.macro_ci}
            if overall is not None and overall.macro is not None
            else None
        ),
    }


def build_sweep_report(
    spec: SweepSpec, cells: list[SweepRun], status: list[CellStatus], out_dir: Path | None = None
) -> dict[str, Any]:
    """Write ``sweep.md``, ``sweep.html`` and ``sweep.json`` and return the JSON object.

    Runs that have no recorded answer are listed in the status table only. Published rows (the
    paper's LLM-judge weighted averages per main category) are added below the measured rows of a
    table whose runs are baselines, labelled ``[published]``; they are comparable only when the
    table's score is the published judge (the table's note says so either way).
    """
    out_dir = Path(out_dir or spec.out / "report")
    groups: dict[tuple[str, str, str, str], list[SweepRun]] = defaultdict(list)
    for c in cells:
        groups[(c.model.display, c.preset, c.protocol, c.split)].append(c)
    by_id = {s.run_id: s for s in status}
    published = {p.method: p for p in published_quality()}
    tables = []
    for (model, preset, protocol, split), members in groups.items():
        loaded = [(c, load_run(c.config.run_dir)) for c in members if by_id[c.run_id].recorded > 0]
        if not loaded:
            continue
        metric = primary_metric([r for _, r in loaded])
        rows = [_grid_row(c, "all" if split == "all" else split, metric.field, metric.source, r) for c, r in loaded]
        for c, _ in loaded:
            paper = paper_method_name(c.method.name)
            if paper in published:
                rows.append(
                    {
                        "method": f"{paper} [published]",
                        "kind": "published",
                        "run_id": None,
                        "task_type": {t: None for t in TASK_COLUMNS},
                        "main_category": {
                            cat.value: {"mean": v, "published": True} for cat, v in published[paper].scores.items()
                        },
                        "overall": None,
                        "macro": None,
                    }
                )
        comparable = comparable_with_published(metric)
        tables.append(
            {
                "model": model,
                "preset": preset,
                "protocol": protocol,
                "split": split,
                "metric": metric.name,
                "comparable_with_published": comparable,
                "rows": rows,
                "note": (
                    "Published rows: "
                    + published_source()["source"]
                    + "; the paper's backbones and judge "
                    + published_source()["judge"]
                    + (
                        ". Same judge as here."
                        if comparable
                        else ". Not comparable: this table's score is " + metric.short + "."
                    )
                ),
            }
        )
    data = {
        "schema": "h2hmem.sweep_report/1",
        "name": spec.name,
        "created_at": now_iso(),
        "task_columns": TASK_COLUMNS,
        "category_columns": CATEGORY_COLUMNS,
        "status": [s.as_dict() for s in status],
        "tables": tables,
        "totals": {
            "runs": len(status),
            "done": sum(s.state == "done" for s in status),
            "cost_usd": round(sum(s.cost_usd for s in status), 6),
        },
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "sweep.json", json.dumps(data, ensure_ascii=False, indent=1))
    atomic_write_text(out_dir / "sweep.md", render_markdown(data))
    atomic_write_text(out_dir / "sweep.html", render_html(data))
    return data


def fmt(c: dict[str, Any] | None, ci: bool = True) -> str:
    """``0.512 [0.431, 0.590]`` (3 decimals, 0–1 scale), ``0.60`` for published values, ``–`` when absent."""
    if not c:
        return "–"
    if c.get("published"):  # the paper reports 2 decimals
        return f"{c['mean']:.2f}"
    s = f"{c['mean']:.3f}"
    if ci and c.get("ci"):
        s += f" [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}]"
    return s


def render_markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# Sweep `{data['name']}`",
        "",
        f"Generated {data['created_at']}.",
        "",
        "## Runs",
        "",
        "| method | model | preset | protocol | split | state | answered | failed | evaluated | cost (USD) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in data["status"]:
        lines.append(
            f"| {s['method']} | {s['model']} | {s['preset']} | {s['protocol']} | {s['split']} | {s['state']} "
            f"| {s['recorded']}/{s['questions']} | {s['failed']} | {'yes' if s['evaluated'] else 'no'} "
            f"| {s['cost_usd']:.4f} |"
        )
    cols = (
        data["task_columns"]
        + [c.removeprefix("Memory ") for c in data["category_columns"]]
        + ["weighted avg", "macro avg"]
    )
    for t in data["tables"]:
        lines += [
            "",
            f"## {t['model']} · preset {t['preset']} · protocol {t['protocol']} · split {t['split']}",
            "",
            f"Score: {t['metric']} (0–1, 95% bootstrap CIs in brackets).",
            "",
            "| method | " + " | ".join(cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        for r in t["rows"]:
            vals = (
                [fmt(r["task_type"][c], ci=False) for c in data["task_columns"]]
                + [fmt(r["main_category"][c]) for c in data["category_columns"]]
                + [fmt(r["overall"]), fmt(r["macro"])]
            )
            lines.append(f"| {r['method']} | " + " | ".join(vals) + " |")
        lines += ["", t["note"]]
    return "\n".join(lines) + "\n"


def _fmt_html(c: dict[str, Any] | None, ci: bool = True) -> Markup:
    """:func:`fmt` with the interval on a second, smaller line (keeps the grid narrow)."""
    mean, _, interval = fmt(c, ci).partition(" ")
    return Markup(escape(mean) + (Markup("<br><small>") + escape(interval) + Markup("</small>") if interval else ""))


def render_html(data: dict[str, Any]) -> str:
    env = Environment(autoescape=select_autoescape(["html"]))
    env.filters["fmt"] = _fmt_html
    template = env.from_string(
        resources.files(__package__).joinpath("templates/sweep.html").read_text(encoding="utf-8")
    )
    return template.render(d=data)
