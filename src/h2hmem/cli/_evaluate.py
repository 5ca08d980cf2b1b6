"""``h2hmem evaluate``: score a run directory (lexical, evidence recall@k, LLM judge) and print tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ._app import app, console, err_console, fail


@app.command("evaluate")
def evaluate_cmd(
    run_dir: Path = typer.Argument(..., help="Run directory (holds predictions.jsonl)."),
    metrics: str = typer.Option("lexical,evidence", "--metrics", help="Comma-separated: lexical, evidence, judge."),
    # the literal is h2hmem.metrics.DEFAULT_JUDGE_SPEC (kept literal so the CLI starts without numpy; tested)
    judge_model: str = typer.Option("openai:gpt-4o-mini", "--judge-model",
                                    help="Judge model spec (official: openai:gpt-4o-mini; local:* is labelled "
                                         "'not comparable with published numbers')."),
    judge_mode: str = typer.Option("session", "--judge-mode",
                                   help="session (one call per session, official) or question (one call each)."),
    judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url",
                                                 help="OpenAI-compatible server URL for the judge; default $OPENAI_BASE_URL."),
    data: Optional[Path] = typer.Option(None, "--data", help="Dataset root for gold answers and gold sessions "
                                                             "(default: the manifest's data_root, else the prediction records)."),
    evidence_labels: Optional[Path] = typer.Option(
        None, "--evidence-labels", help="Supporting-turn labels (*.jsonl file or folder) for turn recall/precision/"
                                        "nDCG@k and MRR; default: ROOT/evidence-labels/ or ROOT-labels/ beside the dataset."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (spec: at least 1,000; 0 = none)."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    refresh_judge: bool = typer.Option(False, "--refresh-judge", help="Re-judge questions already judged."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the request cache for judge calls."),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Judge calls in flight."),
    no_ci: bool = typer.Option(False, "--no-ci", help="Hide confidence intervals in the tables."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Score RUN_DIR: writes scores/*.jsonl and scores/summary.json, prints one table per metric."""
    from ..data import DatasetError
    from ..metrics import METRICS, evaluate_run, summary_tables

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in names if m not in METRICS]
    if unknown or not names:
        raise fail(f"--metrics: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(METRICS)}")
    if bootstrap < 0:
        raise fail(f"--bootstrap must be >= 0, got {bootstrap}")
    if judge_mode not in ("session", "question"):
        raise fail(f"--judge-mode must be 'session' or 'question', not {judge_mode!r}")
    if not (run_dir / "predictions.jsonl").is_file():
        raise fail(f"{run_dir}: no predictions.jsonl (is this a run directory?)")
    model = None
    if "judge" in names:
        from ..llm import default_cache_path, load_chat_model

        try:
            model = load_chat_model(judge_model, base_url=judge_base_url,
                                    cache=None if no_cache else default_cache_path(), concurrency=concurrency)
        except (ValueError, RuntimeError) as e:
            raise fail(f"--judge-model {judge_model}: {e}")
    try:
        summary = evaluate_run(run_dir, names, data_root=data, judge_model=model, judge_mode=judge_mode,  # type: ignore[arg-type]
                               n_boot=bootstrap, seed=seed, refresh=refresh_judge, show_progress=not quiet,
                               evidence_labels=evidence_labels)
    except (FileNotFoundError, ValueError, DatasetError) as e:
        raise fail(str(e))
    for table in summary_tables(summary, show_ci=not no_ci):
        console.print(table)
    if summary.get("label"):
        console.print(f"[bold yellow]Judge scores are {summary['label']}[/] (judge {judge_model}).")
    console.print(f"Scores written to {run_dir / 'scores'}/ (summary.json, "
                  + ", ".join(f"{m}.jsonl" for m in summary["metrics"]) + ")")
    unfinished = _unfinished(run_dir, summary["run"]["n_predictions"])
    if unfinished:
        err_console.print(f"[yellow]warning:[/] {unfinished}", highlight=False, soft_wrap=True)


def _unfinished(run_dir: Path, n_predictions: int) -> str | None:
    """A warning when the run's manifest selected more questions than were recorded (an interrupted
    or still running `h2hmem run`): its scores cover the recorded questions only."""
    try:
        counts = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8")).get("counts") or {}
        selected = int(counts.get("questions") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if selected <= n_predictions:
        return None
    return (f"the run is unfinished: {n_predictions} of {selected} questions have a recorded answer, and these "
            "scores cover only those; rerun the same `h2hmem run` command to finish it, then evaluate again")
