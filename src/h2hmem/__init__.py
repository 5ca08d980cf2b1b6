"""h2hmem: the reference implementation of the H2HMem multimodal-memory benchmark.

The long entry points are importable from here, each with its async twin for notebooks and async
code (``await h2hmem.aevaluate_run(...)``; the sync one refuses to run inside a running event loop
with :class:`InRunningLoopError`). They are loaded on first use, so ``import h2hmem`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

_LAZY: dict[str, str] = {
    "InRunningLoopError": "h2hmem._aio",
    "LocalIOError": "h2hmem._localio",
    "RunConfig": "h2hmem.run",
    "run_benchmark": "h2hmem.run",
    "arun_benchmark": "h2hmem.run",
    "estimate_run": "h2hmem.run",
    "aestimate_run": "h2hmem.run",
    "evaluate_run": "h2hmem.metrics",
    "aevaluate_run": "h2hmem.metrics",
    "estimate_judge": "h2hmem.metrics",
    "aestimate_judge": "h2hmem.metrics",
    "label_evidence": "h2hmem.metrics",
    "alabel_evidence": "h2hmem.metrics",
    "caption_dataset": "h2hmem.caption",
    "acaption_dataset": "h2hmem.caption",
    "run_sweep": "h2hmem.sweep",
    "arun_sweep": "h2hmem.sweep",
    "estimate_sweep": "h2hmem.sweep",
    "aestimate_sweep": "h2hmem.sweep",
}
"""Public name → the package whose public face defines it."""

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """Import ``h2hmem.<name>`` from its package on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'h2hmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
