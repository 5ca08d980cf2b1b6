"""The ``aggregate`` object of a scores summary: splits × groups of cells, micro/macro means and CIs.

Produced by :func:`h2hmem.metrics.aggregate` (definitions there and in docs/metric-definitions.md §3).
"""

from __future__ import annotations

from pydantic import Field

from ._base import Record


class MetricCell(Record):
    """One metric in one cell. ``mean``/``ci`` are None when no question of the cell has a value."""

    n: int
    """Questions with a value (unscored items, e.g. unjudged, are left out)."""
    coverage: float
    """``n / n_total``."""
    mean: float | None = None
    """Micro average (the paper's "weighted average") over the cell's questions."""
    ci: list[float] | None = None
    """95% percentile-bootstrap interval ``[low, high]`` (None without bootstrap)."""
    macro: float | None = Field(None, exclude_if=lambda v: v is None)
    """Overall cells only: mean of the sub-type means (left out of group cells)."""
    macro_ci: list[float] | None = Field(None, exclude_if=lambda v: v is None)
    macro_types: int | None = Field(None, exclude_if=lambda v: v is None)
    """Overall cells only: sub-types the macro average covers."""


class Cell(Record):
    """A group of questions: a split's overall cell, or one sub-type, category, difficulty, dialogue."""

    n_total: int
    failed: int = 0
    metrics: dict[str, MetricCell] = {}
    """Metric name (``f1``, ``hit@5``, ``score``…) → its values."""


class SplitAggregate(Record):
    """One split (``dyadic``, ``multi-party`` or ``all``): the overall cell and the groups, keyed
    by label in paper order (sub-types UPR … AR, categories, difficulties, ``"<split>/dialogueN"``)."""

    overall: Cell
    task_type: dict[str, Cell] = {}
    main_category: dict[str, Cell] = {}
    difficulty: dict[str, Cell] = {}
    dialogue: dict[str, Cell] = {}

    def cell(self, group: str | None = None, key: str | None = None) -> Cell | None:
        """The overall cell (``group=None``), else the cell of ``key`` in ``group``; None when absent."""
        if group is None:
            return self.overall
        return getattr(self, group, {}).get(key)


class Aggregate(Record):
    """Aggregated per-question scores (:func:`h2hmem.metrics.aggregate`)."""

    metrics: list[str]
    n_boot: int
    seed: int = 0
    ci_level: float = 0.95
    ci_method: str = "percentile bootstrap over questions"
    splits: dict[str, SplitAggregate]
    """``dyadic``, ``multi-party`` and ``all``."""

    def overall(self, field: str, split: str = "all") -> MetricCell | None:
        """``splits[split].overall.metrics[field]``, None when absent."""
        s = self.splits.get(split)
        return s.overall.metrics.get(field) if s is not None else None
