"""``h2hmem report``: Markdown + self-contained HTML report, figures and summary.json of one or several runs."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import defaults
from .._localio import LOCAL_IO_EXIT_CODE, disk_error
from . import _select as sel
from ._app import app, console, fail

_SHORT = {
    "Memory Recall": "Recall",
    "Memory Reasoning": "Reasoning",
    "Memory Application": "Application",
    "micro": "micro",
    "macro": "macro",
}


@app.command("report")
def report_cmd(
    run_dirs: list[Path] = typer.Argument(
        ..., help="Run directories (each holds predictions.jsonl), in display order."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Output folder (default: the run directory for one run, reports/<run ids> for several)."
    ),
    worst: int = typer.Option(15, "--worst", help="Worst-scored questions to show."),
    bootstrap: int = typer.Option(
        defaults.N_BOOT,
        "--bootstrap",
        help="Bootstrap resamples when a run must be scored first (spec: at least 1,000).",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress display and no table."),
    group: bool = typer.Option(
        False,
        "--group",
        help="Pool repeated runs of one configuration (same settings apart "
        "from the question selection): mean ± sd across runs and the "
        "CI of the pooled questions.",
    ),
    task_type: list[str] | None = sel.TASK_TYPE,
    dialogue: list[str] | None = sel.DIALOGUE,
    question_id: list[str] | None = sel.QUESTION_ID,
    difficulty: list[str] | None = sel.DIFFICULTY,
    sample: int | None = sel.SAMPLE,
    seed: int = sel.SEED,
) -> None:
    """Build report.md, report.html (figures embedded), figures/*.png and summary.json.

    Runs without scores/summary.json are scored first with the offline metrics (lexical and evidence recall); the LLM judge is never called here (use `h2hmem evaluate --metrics judge`).
    With several runs, every pair is compared on the questions both scored (paired bootstrap CI and sign-flip p-value)."""
    from ..data import DatasetError
    from ..report import build_report, rich_table

    if worst < 0:
        raise fail(f"--worst must be >= 0, got {worst}")
    if bootstrap < 0:
        raise fail(f"--bootstrap must be >= 0, got {bootstrap}")
    try:
        selection = sel.selection_from_options(task_type, dialogue, question_id, difficulty, sample, seed)
    except ValueError as e:
        raise fail(str(e))
    for d in run_dirs:
        if not d.is_dir():
            raise fail(f"{d}: not a directory")
        if not (d / "predictions.jsonl").is_file():
            raise fail(f"{d}: no predictions.jsonl (is this a run directory?)")
    try:
        if quiet:
            paths = build_report(run_dirs, out, worst=worst, n_boot=bootstrap, group=group, selection=selection)
        else:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            # steps: load (and score, if needed) each run, then tables, figures, writing
            with Progress(
                TextColumn("[bold]report[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[step]}", markup=False),
                console=console,
                transient=True,
            ) as bar:
                task = bar.add_task("report", total=len(run_dirs) + 3, step="")
                seen: list[str] = []

                def on_step(name: str) -> None:
                    if seen:
                        bar.advance(task)
                    seen.append(name)
                    bar.update(task, step=name)

                paths = build_report(
                    run_dirs, out, worst=worst, n_boot=bootstrap, on_step=on_step, group=group, selection=selection
                )
                bar.update(task, completed=len(run_dirs) + 3)
    except (FileNotFoundError, ValueError, DatasetError) as e:
        raise fail(str(e))
    except OSError as e:
        where = getattr(e, "filename", None) or out or run_dirs[0]
        local = disk_error(e, where)  # a full disk, a read-only file system: exit 4, as run and evaluate
        if local is not None:
            raise fail(f"cannot write the report: {local}", LOCAL_IO_EXIT_CODE)
        raise fail(f"cannot write the report: {e}")  # an --out under a file, no permission…
    if not quiet:
        # the compact view; report.html has CIs, model and protocol
        table = paths.tables["comparison"]
        console.print(
            rich_table(
                table, ["rank", "run", *_SHORT, "micro", "macro", "n"], show_ci=False, caption=False, labels=_SHORT
            )
        )
        published = next((r["source"] for r in table.rows if r.get("kind") == "published"), None)
        if published:
            console.print(
                f"Rows marked [published]: the paper's LLM-judge numbers ({published}).",
                style="dim",
                highlight=False,
                markup=False,
            )
    if not quiet and "paired" in paths.tables:
        for row in paths.tables["paired"].rows:
            if row["group"] == "overall":
                ci = row.get("diff_ci") or [float("nan")] * 2
                console.print(
                    f"{row['pair']}: difference {row['diff']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}], "
                    f"p = {row['p']:.3g} (n = {row['n']})",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
    if not quiet and "groups" in paths.tables:
        for row in paths.tables["groups"].rows:
            if row["group"] == "overall":
                sd = "n/a" if row["sd"] is None else f"{row['sd']:.3f}"
                ci = row.get("pooled_ci") or [float("nan")] * 2
                console.print(
                    f"{row['config']}: {row['mean']:.3f} ± {sd} (sd over {row['runs']} runs); pooled "
                    f"{row['pooled']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] over {row['pooled_n']} questions",
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
    console.print(f"Report written to {paths.out_dir}/ (report.md, report.html, summary.json, figures/)")
