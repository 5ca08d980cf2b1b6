"""Markdown and self-contained HTML renderings of a report.

HTML: one file, figures embedded as base64 PNG data URIs, inline CSS, no scripts; every string
that comes from a run (answers, questions, method names…) is escaped by Jinja2's autoescaping.
Each worst-scored question links to its ``h2hmem view`` pages (``/runs/<run>/q/<id>``,
``/compare/<id>``): hidden in the static file (no broken links), shown when the viewer serves the
report at ``/runs/<run>/report``.
Markdown: the same tables as pipe tables; ``<``, ``>``, ``&`` and ``|`` in cells are escaped so
that a renderer shows an answer such as ``<script>`` as text.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape

from ._table import ReportTable, format_cell, is_numeric


@dataclass
class Section:
    """One section of the report: text, tables and figures, in that order."""

    id: str
    title: str
    text: list[str] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    figures: list[tuple[Path, str]] = field(default_factory=list)
    """(PNG path, alt text / caption)."""
    worst: ReportTable | None = None
    """Rendered as one card per question (question, gold, answers side by side)."""
    fold: bool = False
    """HTML: each table in a ``<details>`` element (only the first open) — long per-run detail."""


@dataclass
class Report:
    title: str
    notes: list[str]
    sections: list[Section]


def _cell_text(main: str, sub: str | None) -> str:
    return main if not sub else f"{main} ({sub})" if not sub.startswith("[") else f"{main} {sub}"


_ENTITY = re.compile(r"&(?=#?\w+;)")
"""An ``&`` that would start an HTML entity (``&lt;``, ``&#60;``): escaped; any other ``&`` stays as it
reads ("Reference & Evolution Tracking" in the raw Markdown, not "Reference &amp; …")."""


def _md_escape(text: str) -> str:
    return (
        _ENTITY.sub("&amp;", text)
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("\r", " ")
        .replace("\n", " ")
    )


def table_markdown(t: ReportTable) -> str:
    lines = [f"**{_md_escape(t.title)}**", ""]
    lines.append("| " + " | ".join(_md_escape(c.label) for c in t.columns) + " |")
    lines.append("|" + "|".join("---:" if is_numeric(c) else "---" for c in t.columns) + "|")
    for row in t.rows:
        cells = [_md_escape(_cell_text(*format_cell(c, row))) for c in t.columns]
        if row.get("kind") in ("category", "average"):
            cells = [f"**{c}**" if c else c for c in cells]
        elif row.get("kind") == "published":
            cells = [f"*{c}*" if c and c != "–" else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    if t.caption:
        lines += ["", f"*{_md_escape(t.caption)}*"]
    for n in t.notes:
        lines += ["", _md_escape(n)]
    return "\n".join(lines)


def render_markdown(report: Report, out_dir: Path) -> str:
    """Markdown text; figures are linked relative to ``out_dir``."""
    parts = [f"# {_md_escape(report.title)}", ""]
    for n in report.notes:
        parts += [f"> **Note:** {_md_escape(n)}", ""]
    for s in report.sections:
        parts += [f"## {_md_escape(s.title)}", ""]
        for t in s.text:
            parts += [_md_escape(t), ""]
        for tbl in s.tables:
            parts += [table_markdown(tbl), ""]
        if s.worst is not None:
            parts += [table_markdown(s.worst), ""]
        for path, alt in s.figures:
            rel = Path(path).relative_to(out_dir).as_posix() if Path(path).is_relative_to(out_dir) else str(path)
            parts += [f"![{_md_escape(alt)}]({rel})", ""]
    return "\n".join(parts).rstrip() + "\n"


def _view(t: ReportTable) -> dict[str, Any]:
    rows = []
    for row in t.rows:
        cells = []
        for c in t.columns:
            main, sub = format_cell(c, row)
            cells.append({"main": main, "sub": sub, "num": is_numeric(c)})
        rows.append({"kind": row.get("kind") or "", "cells": cells})
    return {
        "id": t.id,
        "title": t.title,
        "caption": t.caption,
        "notes": t.notes,
        "headers": [{"label": c.label, "num": is_numeric(c)} for c in t.columns],
        "rows": rows,
    }


def _worst_view(t: ReportTable) -> dict[str, Any]:
    runs = [
        (c.key.removeprefix("answer_"), c.label.removesuffix(": answer"))
        for c in t.columns
        if c.key.startswith("answer_")
    ]
    score_label = next((c.label for c in t.columns if c.key.startswith("score_")), "score")
    items = []
    for row in t.rows:
        answers = []
        for i, label in runs:
            s = row.get(f"score_{i}")
            answers.append(
                {
                    "run": label,
                    "text": row.get(f"answer_{i}") or "",
                    "score": "–" if s is None else f"{s:.2f}",
                    "failed": str(row.get(f"answer_{i}") or "").startswith("[failed]"),
                    "view": f"/runs/{quote(str(row.get(f'run_{i}') or ''))}/q/{quote(row['question_id'])}",
                }
            )
        items.append(
            {
                "id": row["question_id"],
                "compare": f"/compare/{quote(row['question_id'])}",
                "task_type": row["task_type"],
                "question": row["question"],
                "gold": row["gold"],
                "mean": f"{row['mean']:.2f}",
                "answers": answers,
            }
        )
    return {"title": t.title, "caption": t.caption, "score_label": score_label, "questions": items, "n_runs": len(runs)}


def _figure(path: Path, alt: str) -> dict[str, Any]:
    """``src`` (base64 data URI), ``alt`` and the CSS width: the PNG's pixel width / 1.5, i.e. the
    figures are saved at 150 dpi and shown at 100 CSS px per inch (sharp on high-density screens)."""
    data = Path(path).read_bytes()
    width = int.from_bytes(data[16:20], "big")  # PNG IHDR: width is the first field after the signature
    return {
        "src": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
        "alt": alt,
        "width": round(width / 1.5),
    }


def render_html(report: Report) -> str:
    """One self-contained HTML page (UTF-8): inline CSS, base64 PNG figures, no scripts."""
    env = Environment(
        loader=PackageLoader("h2hmem.report", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    sections = [
        {
            "id": s.id,
            "title": s.title,
            "text": s.text,
            "tables": [_view(t) for t in s.tables],
            "fold": s.fold,
            "figures": [_figure(p, alt) for p, alt in s.figures],
            "worst": _worst_view(s.worst) if s.worst is not None else None,
        }
        for s in report.sections
    ]
    return env.get_template("report.html").render(title=report.title, notes=report.notes, sections=sections)


def rich_table(
    t: ReportTable,
    columns: list[str] | None = None,
    *,
    show_ci: bool = True,
    caption: bool = True,
    labels: dict[str, str] | None = None,
) -> Any:
    """The table as a :class:`rich.table.Table` (for the terminal); cell text is not read as markup.

    ``columns``: keys of the columns to show (default all); ``show_ci``: print CIs under scores;
    ``labels``: column key → header to use instead of the table's."""
    from rich.table import Table
    from rich.text import Text

    cols = [c for c in t.columns if columns is None or c.key in columns]
    out = Table(
        title=t.title, title_justify="left", caption=(t.caption or None) if caption else None, caption_justify="left"
    )
    for c in cols:
        out.add_column(
            (labels or {}).get(c.key, c.label), justify="right" if is_numeric(c) else "left", overflow="fold"
        )
    styles = {"category": "bold", "average": "bold", "published": "italic dim"}
    for row in t.rows:
        cells = []
        for c in cols:
            main, sub = format_cell(c, row)
            cells.append(Text(_cell_text(main, sub) if sub and (show_ci or not sub.startswith("[")) else main))
        out.add_row(*cells, style=styles.get(row.get("kind") or ""))
    return out
