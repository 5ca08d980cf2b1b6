"""Printing a cost estimate (``run --dry-run``, ``evaluate --dry-run``) as one rich table."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ._app import console, err_console

_STAGE_ORDER = ("caption", "memory_build", "answer", "judge", "other")


def _usd(v: float | None) -> str:
    return "n/a" if v is None else f"${v:,.4f}"


def print_estimate(estimate: Any, title: str) -> None:
    """One row per stage and a total: calls, prompt tokens, estimated/maximum completion tokens,
    cost, and the cached share (requests the request cache answers for free)."""
    table = Table(title=title, title_justify="left")
    for col in ("stage", "calls", "prompt tok", "compl. est", "cost est", "cost max", "cached", "cached worth"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    stages = sorted(estimate.stages, key=lambda s: (_STAGE_ORDER.index(s) if s in _STAGE_ORDER else 99, s))
    rows = [(s, estimate.stages[s]) for s in stages] + ([("total", estimate.total)] if len(stages) > 1 else [])
    for name, s in rows:
        table.add_row(
            name,
            f"{s.calls:,}",
            f"{s.prompt_tokens + s.format_tokens:,}",
            f"{s.completion_tokens:,}",
            _usd(s.cost_usd),
            _usd(s.cost_usd_max),
            f"{s.cached_calls:,}",
            _usd(s.cached_cost_usd),
            style="bold" if name == "total" else None,
        )
    console.print(table)
    console.print("models: " + ", ".join(f"{k} {v.model}" for k, v in estimate.stages.items()), highlight=False)
    console.print(
        f"{estimate.questions:,} questions selected, {estimate.already_recorded:,} already done (not "
        "counted). Prompt tokens include 3 chat-format tokens per message and per request; completion "
        "tokens are an estimate; 'cost max' assumes every call uses its whole max_tokens; 'cached' calls are "
        "answered by the request cache (free), 'cached worth' is what they would cost if sent again.",
        highlight=False,
        soft_wrap=True,
    )
    if estimate.unpriced:
        err_console.print(
            f"[yellow]no price known for {', '.join(sorted(set(estimate.unpriced)))}[/]: add "
            "--price MODEL=IN/OUT (USD per million input/output tokens)",
            highlight=False,
            soft_wrap=True,
        )
    for note in estimate.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
