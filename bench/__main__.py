"""``python -m bench all [--quick]`` or ``python -m bench <workload>… [--quick]``."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from ._core import RESULTS_DIR
from ._procs import StepError
from ._profile import PROFILES, with_overrides
from ._workloads import WORKLOADS, run_workloads

app = typer.Typer(add_completion=False, help="h2hmem performance benchmarks (see bench/README.md).")


@app.command()
def main(
    workload: list[str] | None = typer.Argument(None, help=f"all (default), or one or more of: {', '.join(WORKLOADS)}"),
    quick: bool = typer.Option(False, "--quick", help="reduced version (a few minutes on 2 cores)"),
    profile: str | None = typer.Option(None, "--profile", help="full | quick | tiny (overrides --quick)"),
    results_dir: Path | None = typer.Option(
        None,
        "--results-dir",
        help="default: bench/results (full), bench/results/<profile> (others, and any profile with a size replaced)",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="datasets and run dirs (default bench/.data)"),
    concurrency: list[int] | None = typer.Option(
        None, "--concurrency", "-C", help="replace the profile's concurrencies (repeat the option for several)"
    ),
    repeats: int | None = typer.Option(None, "--repeats", help="replace the profile's runs per median step"),
    reference_questions: int | None = typer.Option(
        None, "--reference-questions", help="replace the profile's questions at C = 1 and for the sequential reference"
    ),
) -> None:
    name = profile or ("quick" if quick else "full")
    if name not in PROFILES:
        raise typer.BadParameter(f"unknown profile {name!r}; choose from {', '.join(PROFILES)}", param_hint="--profile")
    names = list(WORKLOADS) if not workload or workload == ["all"] else list(dict.fromkeys(workload))
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise typer.BadParameter(
            f"unknown workload(s) {', '.join(unknown)}; choose all or from {', '.join(WORKLOADS)}",
            param_hint="WORKLOAD",
        )
    try:
        chosen = with_overrides(
            PROFILES[name],
            concurrencies=tuple(concurrency) if concurrency else None,
            repeats=repeats,
            reference_questions=reference_questions,
        )
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    out = results_dir or (RESULTS_DIR if chosen.name == "full" else RESULTS_DIR / chosen.name)
    # wide tables when the output is a file or a pipe (the log of a benchmark run)
    console = Console() if sys.stdout.isatty() else Console(width=220)
    try:
        run_workloads(names, chosen, results_dir=out, data_dir=data_dir, console=console)
    except StepError as e:
        typer.echo(f"error: a benchmark step failed: {e}", err=True)
        raise typer.Exit(1) from None


if __name__ == "__main__":
    app()
