"""Printing a cost estimate (``run --dry-run``, ``evaluate --dry-run``) as one rich table."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ._app import console, err_console

_STAGE_ORDER = ("caption", "memory_build", "answer", "judge", "other")


def _usd(v: float | None) -> str:
    return "n/a (no price)" if v is None else f"${v:,.4f}"


def print_estimate(estimate: Any, title: str) -> None:
    """One row per stage and a total: calls, prompt tokens, estimated/maximum completion tokens,
    cost, and the cached share (requests the request cache answers for free)."""
    table = Table(title=title, title_justify="left")
    for col, justify in (("stage", "left"), ("model", "left"), ("calls", "right"), ("prompt tokens", "right"),
                         ("completion est. (max)", "right"), ("cost est. (max)", "right"),
                         ("cached calls", "right"), ("cached prompt tokens", "right"), ("cached share worth", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    stages = sorted(estimate.stages, key=lambda s: (_STAGE_ORDER.index(s) if s in _STAGE_ORDER else 99, s))
    rows = [(s, estimate.stages[s]) for s in stages] + ([("total", estimate.total)] if len(stages) > 1 else [])
    for name, s in rows:
        table.add_row(name, s.model, f"{s.calls:,}", f"{s.prompt_tokens + s.format_tokens:,}",
                      f"{s.completion_tokens:,} ({s.completion_tokens_max:,})",
                      f"{_usd(s.cost_usd)} ({_usd(s.cost_usd_max)})", f"{s.cached_calls:,}",
                      f"{s.cached_prompt_tokens:,}", _usd(s.cached_cost_usd),
                      style="bold" if name == "total" else None)
    console.print(table)
    console.print(f"{estimate.questions:,} questions selected, {estimate.already_recorded:,} already done (not "
                  "counted). Prompt tokens include 3 chat-format tokens per message and per request; completion "
                  "tokens are an estimate, the maximum assumes every call uses its whole max_tokens.",
                  highlight=False, soft_wrap=True)
    if estimate.unpriced:
        err_console.print(f"[yellow]no price known for {', '.join(sorted(set(estimate.unpriced)))}[/]: add "
                          "--price MODEL=IN/OUT (USD per million input/output tokens)", highlight=False, soft_wrap=True)
    for note in estimate.notes:
        console.print(f"note: {note}", highlight=False, soft_wrap=True)
