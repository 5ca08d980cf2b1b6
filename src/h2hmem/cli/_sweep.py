"""``h2hmem sweep SPEC`` (run a grid of runs), ``h2hmem sweep status SPEC``, ``h2hmem sweep schema``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ._app import app, console, err_console, fail, sigterm_as_interrupt

_ACTIONS = ("run", "status", "schema")


@app.command("sweep")
def sweep_cmd(
    action_or_spec: str = typer.Argument(
        ...,
        metavar="[run|status|schema] SPEC",
        help="A sweep file (.toml/.yaml/.json) to run; or 'status SPEC' to show its "
        "progress; or 'schema' to print the file format's JSON Schema.",
    ),
    spec_path: Path | None = typer.Argument(None, hidden=True),
    executor: str | None = typer.Option(None, "--executor", help="local or ray (default: the spec's executor.kind)."),
    address: str | None = typer.Option(
        None,
        "--address",
        help="Ray cluster address (auto, ray://host:10001); default: the spec's, else a local Ray instance.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="The grid's runs, their state and what the unfinished ones "
        "will cost (real prompts counted, nothing sent); runs nothing.",
    ),
    as_json: bool = typer.Option(False, "--json", help="status/dry-run: print JSON."),
) -> None:
    """Run a grid of runs (methods × models × presets × protocols × splits), evaluate them and write one
    sweep report. Runs what is not finished, resumes what was interrupted; exit 1 while any run is not
    done and evaluated."""
    from ..sweep import SweepSpecError, load_spec

    action, path = (action_or_spec, spec_path) if action_or_spec in _ACTIONS else ("run", Path(action_or_spec))
    if action == "schema":
        from ..sweep import sweep_json_schema

        typer.echo(json.dumps(sweep_json_schema(), indent=1))
        return
    if path is None:
        raise fail(f"sweep {action}: give the sweep file (SPEC)")
    try:
        spec, _ = load_spec(path)
        if executor or address:
            spec = spec.model_copy(
                update={
                    "executor": spec.executor.model_copy(
                        update={k: v for k, v in (("kind", executor), ("address", address)) if v}
                    )
                }
            )
            if spec.executor.kind not in ("local", "ray"):
                raise fail(f"--executor must be local or ray, not {spec.executor.kind!r}")
        from ..sweep import expand_grid, sweep_status

        cells = expand_grid(spec)
    except (SweepSpecError, ValueError) as e:
        raise fail(str(e))
    if action == "status":
        _print_status(sweep_status(cells), as_json, title=f"sweep {spec.name}")
        return
    if dry_run:
        _print_status(sweep_status(cells), as_json, title=f"sweep {spec.name} (dry run)")
        _print_estimates(spec, as_json)
        return
    from ..sweep import run_sweep

    try:
        with sigterm_as_interrupt():
            result = run_sweep(spec, on_event=lambda line: err_console.print(line, highlight=False, soft_wrap=True))
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]: run the same command again to resume")
        raise typer.Exit(130)
    except (RuntimeError, SweepSpecError) as e:  # another sweep in the folder; a dataset root that is not there
        raise fail(str(e))
    _print_status(result.status, as_json, title=f"sweep {spec.name}")
    console.print(f"Report: {result.out / 'report' / 'sweep.html'} (and sweep.md, sweep.json)")
    if not result.ok:
        raise typer.Exit(1)


def _print_status(status, as_json: bool, title: str) -> None:
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in status], indent=1))
        return
    from rich.table import Table

    t = Table(title=title)
    for col in ("method", "model", "preset", "protocol", "split", "state", "answered", "failed", "evaluated", "cost $"):
        t.add_column(col, justify="right" if col in ("answered", "failed", "cost $") else "left")
    for s in status:
        t.add_row(
            s.method,
            s.model,
            s.preset,
            s.protocol,
            s.split,
            s.state,
            f"{s.recorded}/{'?' if s.questions is None else s.questions}",
            str(s.failed),
            "yes" if s.evaluated else "no",
            f"{s.cost_usd:.4f}",
        )
    console.print(t)
    done = sum(s.state == "done" for s in status)
    console.print(f"{done}/{len(status)} runs done, {sum(s.evaluated for s in status)} evaluated")


def _print_estimates(spec, as_json: bool) -> None:
    from ..data import DatasetError
    from ..sweep import estimate_sweep

    try:
        estimates = estimate_sweep(spec)
    except (DatasetError, ValueError, FileNotFoundError) as e:
        raise fail(str(e))
    if as_json:
        typer.echo(
            json.dumps(
                [{"run_id": c.run_id, **e.model_dump(), "total": e.total.model_dump()} for c, e in estimates], indent=1
            )
        )
        return
    from rich.table import Table

    t = Table(title="cost of the unfinished runs (nothing was sent; the judge pass is estimated after the runs)")
    for col in ("run", "calls", "prompt tokens", "est. cost $", "max cost $", "cached calls"):
        t.add_column(col, justify="left" if col == "run" else "right")
    total_cost, total_max, unpriced = 0.0, 0.0, set()
    for c, est in estimates:
        s = est.total
        unpriced.update(est.unpriced)
        total_cost += s.cost_usd or 0.0
        total_max += s.cost_usd_max or 0.0
        t.add_row(
            c.run_id,
            f"{s.calls:,}",
            f"{s.prompt_tokens:,}",
            "?" if s.cost_usd is None else f"{s.cost_usd:.4f}",
            "?" if s.cost_usd_max is None else f"{s.cost_usd_max:.4f}",
            f"{s.cached_calls:,}",
        )
    console.print(t)
    console.print(
        f"total: ${total_cost:.4f} estimated, ${total_max:.4f} at most"
        + (f"; no price for {', '.join(sorted(unpriced))} (counted as ?)" if unpriced else "")
    )
