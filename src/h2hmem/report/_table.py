"""The report's table model: columns with a kind, rows as dicts; one formatter for Markdown, HTML
and the terminal, and a JSON form for ``summary.json``.

Cell conventions (a row is ``{column key: value}``):

- ``score`` columns hold a float in [0, 1] (or None); a sibling ``"<key>_ci"`` holds the 95% CI
  ``[low, high]`` when there is one;
- ``count`` columns hold ``n`` (questions with a value); siblings ``"<key>_total"`` (questions in
  the cell) and ``"<key>_failed"`` (failed answers, scored 0) are shown as ``n/total`` and
  ``(k failed)`` when they differ from ``n`` / are non-zero;
- ``kind`` (optional row key) is ``"run"``, ``"published"``, ``"subtype"``, ``"category"``,
  ``"average"`` or ``"group"`` (a main category's row under a comparison's overall row, plain);
  renderers emphasise categories and averages and set published rows apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["text", "score", "count", "int", "float", "seconds", "usd", "tokens"]


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: Kind = "text"
    digits: int = 3
    """Decimals of ``float`` columns."""


@dataclass
class ReportTable:
    """One table of the report."""

    id: str
    """Stable key in ``summary.json`` (e.g. ``"comparison"``)."""
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    caption: str = ""
    """What the numbers are (units, sources, labels such as "not comparable")."""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"title", "caption", "notes", "columns": [{"key", "label", "kind"}], "rows": [...]}``;
        numbers are unrounded."""
        return {
            "title": self.title,
            "caption": self.caption,
            "notes": list(self.notes),
            "columns": [{"key": c.key, "label": c.label, "kind": c.kind} for c in self.columns],
            "rows": [dict(r) for r in self.rows],
        }


def _seconds(v: float) -> str:
    if v == 0:
        return "0 s"
    if abs(v) < 0.01:
        return f"{v:.4f} s"
    return f"{v:.2f} s" if abs(v) < 100 else f"{v:,.0f} s"


def _usd(v: float) -> str:
    if v == 0:
        return "$0"
    return f"${v:.4f}" if abs(v) < 1 else f"${v:,.2f}"


def format_cell(col: Column, row: dict[str, Any]) -> tuple[str, str | None]:
    """``(main text, secondary text or None)`` of one cell; the secondary text is the CI of a
    score or the failure count of a count. Missing values are shown as ``"–"``."""
    v = row.get(col.key)
    if v is None or v == "":
        return ("–" if col.kind != "text" else "", None)
    if col.kind == "score":
        ci = row.get(f"{col.key}_ci")
        return f"{v:.3f}", (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else None)
    if col.kind == "count":
        total = row.get(f"{col.key}_total")
        failed = row.get(f"{col.key}_failed") or 0
        text = f"{v:,}" if total is None or total == v else f"{v:,}/{total:,}"
        return text, (f"{failed} failed" if failed else None)
    if col.kind == "int":
        return f"{int(v):,}", None
    if col.kind == "float":
        return f"{v:,.{col.digits}f}", None
    if col.kind == "tokens":
        return f"{v:,.0f}", None
    if col.kind == "seconds":
        return _seconds(float(v)), None
    if col.kind == "usd":
        return _usd(float(v)), None
    return str(v), None


def is_numeric(col: Column) -> bool:
    return col.kind != "text"
