"""What every workload shares: the step runner with its progress display, results files and tables."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ._data import DATA_DIR, ensure_dataset
from ._env import machine_info
from ._procs import run_step
from ._profile import Profile

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class Target:
    """A goal from the brief and what was measured (``met`` None = not measured in this mode)."""

    name: str
    goal: str
    value: float | None
    unit: str
    met: bool | None


@dataclass
class WorkloadResult:
    name: str
    title: str
    columns: list[tuple[str, str]]
    """(row key, table header) of the rows shown in the table."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


class Bench:
    """One ``python -m bench`` invocation: profile, console, step runner (results memoised by key,
    so ``all`` runs a step that two workloads need only once)."""

    def __init__(
        self,
        profile: Profile,
        console: Console | None = None,
        results_dir: Path = RESULTS_DIR,
        data_dir: Path = DATA_DIR,
    ):
        self.profile = profile
        self.console = console or Console()
        self.results_dir = results_dir
        self.data_dir = data_dir
        self.machine = machine_info()
        self._memo: dict[str, dict[str, Any]] = {}

    def dataset(self, scale: str) -> Path:
        with self.console.status(f"synthesising dataset ({scale}) if missing…"):
            root, seconds = ensure_dataset(scale)
        if seconds is not None:
            self.console.print(f"  generated synthetic {scale} dataset in {seconds:.1f} s → {root}")
        return root

    def work_dir(self, *parts: str) -> Path:
        path = self.data_dir.joinpath("work", self.profile.name, *parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def step(self, label: str, target: str, spec: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
        """Run one step in a child process (peak RSS measured), showing a spinner; memoised by ``key``."""
        if key is not None and key in self._memo:
            return self._memo[key]
        load0 = os.getloadavg()[0]
        with self.console.status(f"[bold]{label}[/] …"):
            result = run_step(target, spec)
        result["load_avg_1m"] = round((load0 + os.getloadavg()[0]) / 2, 2)
        self.console.print(f"  [green]✓[/] {label}: {_short(result)}")
        if key is not None:
            self._memo[key] = result
        return result

    def write(self, result: WorkloadResult, started_at: str) -> Path:
        """Write ``results/<name>.json`` (atomic) and print the tables."""
        self.results_dir.mkdir(parents=True, exist_ok=True)
        payload = {
            "workload": result.name,
            "title": result.title,
            "profile": self.profile.name,
            "started_at": started_at,
            "finished_at": now_iso(),
            "machine": self.machine,
            "settings": result.settings,
            "rows": result.rows,
            "targets": [asdict(t) for t in result.targets],
            "notes": result.notes,
        }
        path = self.results_dir / f"{result.name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        print_result(self.console, result)
        return path


def print_result(console: Console, result: WorkloadResult) -> None:
    table = Table(title=result.title, title_justify="left")
    for _, header in result.columns:
        table.add_column(header, justify="right" if header not in ("method", "step", "what") else "left")
    for row in result.rows:
        table.add_row(*(fmt(row.get(k)) for k, _ in result.columns))
    console.print(table)
    if result.targets:
        t = Table(title=f"{result.name}: targets", title_justify="left")
        for h in ("target", "goal", "measured", "met"):
            t.add_column(h)
        for tg in result.targets:
            met = "—" if tg.met is None else ("[green]yes[/]" if tg.met else "[red]no[/]")
            t.add_row(tg.name, tg.goal, f"{fmt(tg.value)} {tg.unit}".strip(), met)
        console.print(t)
    for note in result.notes:
        console.print(f"  [dim]• {note}[/]")


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _short(result: dict[str, Any]) -> str:
    keys = ("wall_s", "build_s", "score_s", "questions", "calls", "peak_rss_mb")
    return ", ".join(f"{k}={result[k]}" for k in keys if k in result)


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def percentile(values: list[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default method), ``p`` in [0, 100]."""
    if not values:
        raise ValueError("no values")
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


Workload = Callable[[Bench], WorkloadResult]
