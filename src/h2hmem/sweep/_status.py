"""The state of every cell of a sweep, read from its run directory (also while the sweep runs)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..records import RunStore
from ._grid import SweepRun

RunState = Literal["pending", "running", "partial", "failed", "done"]


@dataclass
class CellStatus:
    """One run of the grid as its directory shows it now."""

    method: str
    model: str
    preset: str
    protocol: str
    split: str
    run_id: str
    state: RunState
    """``pending`` (no run directory yet), ``running`` (a process holds its lock), ``partial`` (interrupted:
    fewer answers recorded than questions), ``failed`` (finished with failed questions), ``done``."""
    questions: int | None
    """Questions the run selects, from its manifest's counts (None while its first invocation runs or
    after it was killed: the counts are written when an invocation ends)."""
    recorded: int
    failed: int
    """Recorded answers that failed (from ``predictions.jsonl``: the last complete line of each question)."""
    evaluated: bool
    """``scores/summary.json`` covers every recorded answer."""
    cost_usd: float
    """Model cost recorded in the manifest so far (every stage, every invocation)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cell_status(cell: SweepRun) -> CellStatus:
    """Read ``cell``'s run directory (never writes to it, apart from taking its lock for an instant)."""
    store = RunStore(cell.config.run_dir)
    manifest = store.read_manifest() if store.exists else None
    counts = manifest.counts if manifest is not None else None
    recorded, failed = _recorded(store) if store.predictions_path.is_file() else (0, 0)
    questions = counts.questions if counts is not None else None
    if not store.dir.is_dir():
        state: RunState = "pending"
    elif _locked(store):
        state = "running"
    elif manifest is None or manifest.status != "complete" or questions is None or recorded < questions:
        state = "partial"
    else:
        state = "failed" if failed else "done"
    cost = sum(u.cost_usd for u in manifest.usage.values()) if manifest is not None else 0.0
    return CellStatus(
        cell.method.display,
        cell.model.display,
        cell.preset,
        cell.protocol,
        cell.split,
        cell.run_id,
        state,
        questions,
        recorded,
        failed,
        _evaluated(store, recorded),
        round(cost, 6),
    )


def sweep_status(cells: list[SweepRun]) -> list[CellStatus]:
    """:func:`cell_status` of every cell, in grid order."""
    return [cell_status(c) for c in cells]


def _locked(store: RunStore) -> bool:
    with store.locked() as holder:
        return holder is not None


def _recorded(store: RunStore) -> tuple[int, int]:
    """``(recorded, failed)``: distinct question ids with a complete line, and those whose last
    complete line (its record: a retried answer replaces the failure) holds an error."""
    failed: dict[str, bool] = {}
    with open(store.predictions_path, "rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                continue  # a torn last line (a killed writer) is not a record
            try:
                rec = json.loads(line)
                failed[rec["question_id"]] = rec.get("error") is not None
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
    return len(failed), sum(failed.values())


def _evaluated(store: RunStore, recorded: int) -> bool:
    path = store.dir / "scores" / "summary.json"
    if not path.is_file() or recorded == 0:
        return False
    try:
        n = json.loads(path.read_text(encoding="utf-8"))["run"]["n_predictions"]
    except (ValueError, KeyError, TypeError):
        return False
    return n == recorded and path.stat().st_mtime >= store.predictions_path.stat().st_mtime
