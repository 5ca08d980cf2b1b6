"""``h2hmem view`` (the run viewer in the browser) and ``h2hmem runs list``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ._app import app, console, fail

runs_app = typer.Typer(help="Runs in a folder: list them.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")


@app.command("view")
def view_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="Run directories (each holds predictions.jsonl)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default: this machine only)."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port."),
    data: Path | None = typer.Option(
        None, "--data", help="Dataset root for evidence turns and images (default: each run's manifest data_root)."
    ),
) -> None:
    """Browse runs in a local web viewer: questions with filters, evidence turns, prompts and replies."""
    from ..view import create_viewer_app

    for d in run_dirs:
        if not (d / "predictions.jsonl").is_file():
            raise fail(f"{d}: no predictions.jsonl (is this a run directory?)")
    try:
        viewer = create_viewer_app(run_dirs, data_root=data)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    import uvicorn

    console.print(
        f"viewer on http://{host}:{port}/ ({len(run_dirs)} run{'s' if len(run_dirs) != 1 else ''}); Ctrl-C stops it",
        highlight=False,
    )
    uvicorn.run(viewer, host=host, port=port, log_level="warning")


@runs_app.command("list")
def runs_list_cmd(
    out: Path = typer.Option(Path("runs"), "--out", help="Folder holding run directories."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (one object per run) instead of a table."),
) -> None:
    """Table of the runs in a folder: folder name (and the manifest's run id when it differs), method,
    model, preset, status (with damaged lines of predictions.jsonl), answered/failed, headline score."""
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    from ..view import find_runs, run_info

    try:
        infos = [run_info(d) for d in find_runs(out)]
    except FileNotFoundError as e:
        raise fail(str(e))
    if as_json:
        typer.echo(json.dumps([i.as_json() for i in infos], ensure_ascii=False, indent=1))
        return
    rows = []
    for i in infos:
        total = f"/{i.questions}" if i.questions is not None else ""
        score = "not scored" if i.score is None else f"{i.metric} {i.score:.3f}" + (" (stale)" if i.stale else "")
        answered = f"{i.recorded}{total} retrieved" if i.retrieval_only else f"{i.answered}{total}"
        name = i.name if i.run_id == i.name else f"{i.name} (run {i.run_id})"  # a copied or renamed folder
        status = i.status
        if i.damaged_lines:  # every other command refuses the file: say so here too
            n = len(i.damaged_lines)
            status += f", {n} damaged line{'s' if n > 1 else ''} (line {i.damaged_lines[0]})"
        rows.append((name, i.method, i.model, i.preset or "–", status, answered, str(i.failed), score))
    table = Table(title=f"Runs in {out}", title_justify="left")
    for name, justify in (
        ("id", "left"),
        ("method", "left"),
        ("model", "left"),
        ("preset", "left"),
        ("status", "left"),
        ("answered", "right"),
        ("failed", "right"),
        ("headline", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*(Text(x) for x in row))
    if Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width:
        console.print(table)
    else:  # a narrow terminal: each run id whole on its own line (never wrapped), its facts below it
        console.print(Text(f"Runs in {out}", style="italic"))
        for run_id, method, model, preset, status, answered, failed, score in rows:
            console.print(Text(run_id, style="bold"), no_wrap=True, crop=False, soft_wrap=True)
            done = answered if answered.endswith("retrieved") else f"{answered} answered"
            facts = f"  {method} · {model} · {preset} · {status} · {done} · {failed} failed · {score}"
            console.print(Text(facts), highlight=False)
    if not infos:
        console.print(f"no runs in {out}", style="dim", highlight=False)
