"""The workload registry and the driver behind ``python -m bench``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from . import cpu, embed, index, run, scale, score, transcripts, warm
from ._core import Bench, Workload, WorkloadResult, fmt, now_iso
from ._profile import Profile

WORKLOADS: dict[str, Workload] = {
    "run": run.measure,
    "warm": warm.measure,
    "index": index.measure,
    "embed": embed.measure,
    "score": score.measure,
    "scale": scale.measure,
    "transcripts": transcripts.measure,
    "cpu": cpu.measure,
}
"""Name → function, in the order ``all`` runs them."""

RSS_GOAL_MIB = 2.5e9 / 2**20
"""Peak RSS goal 2.5 GB (decimal) in MiB: 2,384 MiB."""


def run_workloads(
    names: list[str],
    profile: Profile,
    *,
    results_dir: Path,
    data_dir: Path | None = None,
    console: Console | None = None,
) -> list[WorkloadResult]:
    """Run the named workloads in order with ``profile`` and write ``results_dir/<name>.json`` each,
    then ``results_dir/all.json``: every target of every results file in ``results_dir`` of this
    profile (so a workload rerun on its own joins the others), shown as one table."""
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)} or 'all'")
    kwargs: dict[str, Any] = {"results_dir": results_dir, "console": console}
    if data_dir is not None:
        kwargs["data_dir"] = data_dir
    b = Bench(profile, **kwargs)
    started = now_iso()
    out = []
    for name in names:
        b.console.rule(f"[bold]{name}[/] ({profile.name})")
        result = WORKLOADS[name](b)
        out.append(result)
    _write_summary(b, started)
    return out


def peak_rss(rows: list[dict[str, Any]]) -> float | None:
    values = [v for r in rows for k, v in r.items() if k in ("peak_rss_mb", "x10_rss_mb") and v is not None]
    return max(values) if values else None


def _write_summary(b: Bench, started: str) -> None:
    targets, names = [], []
    for name in WORKLOADS:
        path = b.results_dir / f"{name}.json"
        if not path.is_file():
            continue
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("profile") != b.profile.name:
            continue
        names.append(name)
        targets.extend({"workload": name, **t} for t in saved["targets"])
        rss = peak_rss(saved["rows"])
        if rss is not None:
            targets.append(
                {
                    "workload": name,
                    "name": f"{name}: peak RSS (max over steps)",
                    "goal": "< 2.5 GB",
                    "value": rss,
                    "unit": "MiB",
                    "met": rss < RSS_GOAL_MIB,
                }
            )
    payload = {
        "profile": b.profile.name,
        "started_at": started,
        "finished_at": now_iso(),
        "machine": b.machine,
        "workloads": names,
        "targets": targets,
    }
    b.results_dir.mkdir(parents=True, exist_ok=True)
    (b.results_dir / "all.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    table = Table(title=f"all targets ({b.profile.name})", title_justify="left")
    for h in ("workload", "target", "goal", "measured", "met"):
        table.add_column(h)
    for t in targets:
        met = "—" if t["met"] is None else ("[green]yes[/]" if t["met"] else "[red]no[/]")
        table.add_row(t["workload"], t["name"], t["goal"], f"{fmt(t['value'])} {t['unit']}".strip(), met)
    b.console.print(table)
