"""``h2hmem evaluate``: score a run directory with registered scorers (lexical, evidence recall@k,
LLM judge, plugins) and print tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer
from rich.markup import escape

from .. import defaults
from .._localio import LOCAL_IO_EXIT_CODE, LocalIOError
from ..records import ScoresSummary, read_manifest
from . import _select as sel
from ._app import app, console, err_console, fail, fail_os, sigterm_as_interrupt

if TYPE_CHECKING:
    from ..metrics import JudgeMode


@app.command("evaluate")
def evaluate_cmd(
    run_dir: Path = typer.Argument(..., help="Run directory (holds predictions.jsonl)."),
    metrics: str = typer.Option(
        "lexical,evidence",
        "--metrics",
        help="Comma-separated scorer names: lexical, evidence (with turn_evidence), judge, or a plugin's "
        "(entry-point group h2hmem.scorers).",
    ),
    judge_model: str = typer.Option(
        defaults.JUDGE_MODEL,
        "--judge-model",
        help="Judge model spec (official: openai:gpt-4o-mini; local:* is labelled "
        "'not comparable with published numbers').",
    ),
    judge_mode: str | None = typer.Option(
        None,
        "--judge-mode",
        help="Batching: session (one call per session, official; both presets) or question (one call each).",
    ),
    preset: str = typer.Option(
        "paper",
        "--preset",
        help="paper (the official judge: its prompt in one user message, JSON array reply, "
        "scores snapped to the nearest level) or harmonized (our rubric as system "
        "message, JSON object, strict levels).",
    ),
    judge_format: str | None = typer.Option(
        None, "--judge-format", help="Override the preset: user_array (official) or system_object."
    ),
    score_levels: str | None = typer.Option(
        None, "--score-levels", help="Override the preset: snap (official) or strict."
    ),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible server URL for the judge; default $OPENAI_BASE_URL."
    ),
    data: Path | None = typer.Option(
        None,
        "--data",
        help="Dataset root for gold answers and gold sessions "
        "(default: the manifest's data_root, else the prediction records).",
    ),
    evidence_labels: Path | None = typer.Option(
        None,
        "--evidence-labels",
        help="Supporting-turn labels (*.jsonl file or folder) for turn recall/precision/"
        "nDCG@k and MRR; default: ROOT/evidence-labels/ or ROOT-labels/ beside the dataset.",
    ),
    bootstrap: int = typer.Option(
        defaults.N_BOOT, "--bootstrap", help="Bootstrap resamples for 95% CIs (spec: at least 1,000; 0 = none)."
    ),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
    refresh_judge: bool = typer.Option(False, "--refresh-judge", help="Re-judge questions already judged."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the request cache for judge calls."),
    concurrency: int = typer.Option(defaults.CONCURRENCY, "--concurrency", min=1, help="Judge calls in flight."),
    no_ci: bool = typer.Option(False, "--no-ci", help="Hide confidence intervals in the tables."),
    no_transcripts: bool = typer.Option(
        False, "--no-transcripts", help="Do not keep each judge call in RUN_DIR/transcripts-judge.jsonl.gz."
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    task_type: list[str] | None = sel.TASK_TYPE,
    dialogue: list[str] | None = sel.DIALOGUE,
    question_id: list[str] | None = sel.QUESTION_ID,
    difficulty: list[str] | None = sel.DIFFICULTY,
    sample: int | None = sel.SAMPLE,
    sample_seed: int = typer.Option(0, "--sample-seed", help="Seed of --sample (--seed is the bootstrap's here)."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Count the judge calls, prompt tokens and cost without calling the judge (nothing is written).",
    ),
    price: list[str] | None = typer.Option(
        None, "--price", help="MODEL=IN/OUT: USD per million input/output tokens of a judge not in the built-in table."
    ),
) -> None:
    """Score RUN_DIR: writes scores/*.jsonl and scores/summary.json, prints one table per metric.

    Exit codes (as `h2hmem run`): 0 done; 1 the judge left questions unjudged (for reasons other than
    failed answers, which are scored 0): the closing line counts the reasons; 2 bad input, or another
    evaluate of the same run is running (its process is named; rerun once it ends, nothing it judged
    is paid again); 4 local I/O error (a file of the run could not be written: free space and rerun;
    scores/ keeps the previous evaluation's files); 130 interrupted.
    """
    from ..data import DatasetError
    from ..metrics import JudgeOptions, evaluate_run, resolve_scorers, summary_tables
    from ..presets import PRESETS

    names = [m.strip() for m in metrics.split(",") if m.strip()]
    if not names:
        raise fail("--metrics: empty; name at least one scorer (lexical, evidence, judge, or a plugin's)")
    try:
        needs_model = any(s.needs_model for s in resolve_scorers(names))
    except ValueError as e:  # an unknown name (with did-you-mean), or a plugin that does not load
        raise fail(f"--metrics: {e}")
    if bootstrap < 0:
        raise fail(f"--bootstrap must be >= 0, got {bootstrap}")
    for flag, value, allowed in (
        ("--judge-mode", judge_mode, ("session", "question")),
        ("--preset", preset, PRESETS),
        ("--judge-format", judge_format, ("user_array", "system_object")),
        ("--score-levels", score_levels, ("snap", "strict")),
    ):
        if value is not None and value not in allowed:
            raise fail(f"{flag} must be one of {', '.join(allowed)}, not {value!r}")
    mode = cast("JudgeMode | None", judge_mode)  # checked just above
    options = {k: v for k, v in (("judge_format", judge_format), ("score_levels", score_levels)) if v is not None}
    if not (run_dir / "predictions.jsonl").is_file():
        raise fail(f"{run_dir}: no predictions.jsonl (is this a run directory?)")
    from ._run import parse_prices

    try:
        selection = sel.selection_from_options(task_type, dialogue, question_id, difficulty, sample, sample_seed)
        prices = parse_prices(price or [])
    except ValueError as e:
        raise fail(str(e))
    if dry_run:
        if "judge" not in names:
            raise fail("--dry-run estimates the judge's calls: add --metrics judge (lexical and evidence cost nothing)")
        _judge_dry_run(
            run_dir,
            judge_model,
            mode,
            judge_base_url,
            data,
            selection,
            no_cache,
            refresh_judge,
            prices,
            JudgeOptions.model_validate({"preset": preset, **options}),
        )
        return
    model = None
    if needs_model:
        from ..llm import default_cache_path, load_chat_model

        try:
            model = load_chat_model(
                judge_model,
                base_url=judge_base_url,
                prices=prices or None,
                cache=None if no_cache else default_cache_path(),
                concurrency=concurrency,
            )
        except (ValueError, RuntimeError) as e:
            raise fail(f"--judge-model {judge_model}: {e}")
        except OSError as e:  # the request cache cannot be opened: one line, as `h2hmem run` says it
            message = f"--judge-model {judge_model}: {e} (or judge without the cache: --no-cache)"
            raise fail_os(e, default_cache_path(), message)  # a full or read-only disk: exit 4, as run maps it
    try:
        with sigterm_as_interrupt():
            raw_summary = evaluate_run(
                run_dir,
                names,
                data_root=data,
                judge_model=model,
                judge_mode=mode,
                n_boot=bootstrap,
                seed=seed,
                refresh=refresh_judge,
                show_progress=not quiet,
                selection=selection,
                transcripts=not no_transcripts,
                preset=preset,
                judge_options=options,
                evidence_labels=evidence_labels,
            )
    except LocalIOError as e:
        raise fail(str(e), LOCAL_IO_EXIT_CODE)
    except (FileNotFoundError, ValueError, DatasetError) as e:
        raise fail(str(e))
    except (OSError, sqlite3.OperationalError) as e:  # writing scores/ (disk full, file-size limit, I/O error)
        where = getattr(e, "filename", None) or run_dir / "scores"
        raise fail(str(LocalIOError(where, e)), LOCAL_IO_EXIT_CODE)
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]interrupted[/]: the judgments made so far are kept in scores/judge.jsonl; rerun "
            "the same command to judge the rest.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130)
    summary = ScoresSummary.model_validate(raw_summary)
    for table in summary_tables(summary, show_ci=not no_ci):
        console.print(table)
    if summary.label:
        console.print(f"[bold yellow]Judge scores are {summary.label}[/] (judge {judge_model}).")
    console.print(
        f"Scores written to {run_dir / 'scores'}/ (summary.json, "
        + ", ".join(f"{m}.jsonl" for m in summary.metrics.sections())
        + ")"
    )
    unfinished = None if summary.selection else _unfinished(run_dir, summary.run.n_predictions)
    if unfinished:
        err_console.print(f"[yellow]warning:[/] {unfinished}", highlight=False, soft_wrap=True)
    judge = summary.metrics.judge
    if judge and judge.stale is not None:
        err_console.print(
            f"[yellow]warning:[/] the judge scores are stale (not used as the headline): {judge.stale.reason}",
            highlight=False,
            soft_wrap=True,
        )
    if "judge" in names and judge:
        from ..metrics import coverage_line

        line = coverage_line(judge.coverage)
        if line:  # say it loudly: a score over part of the questions is not the run's score
            err_console.print(f"[bold red]{escape(line)}[/]", highlight=False, soft_wrap=True)
            raise typer.Exit(1)


def _judge_dry_run(
    run_dir: Path,
    judge_model: str,
    mode: JudgeMode | None,
    base_url: str | None,
    data: Path | None,
    selection,
    no_cache: bool,
    refresh: bool,
    prices: dict,
    options,
) -> None:
    from ..data import DatasetError
    from ..metrics import estimate_judge
    from ._cost import print_estimate

    try:
        estimate = estimate_judge(
            run_dir,
            judge_model,
            mode=mode,
            data_root=data,
            selection=selection,
            base_url=base_url,
            use_cache=not no_cache,
            refresh=refresh,
            prices=prices or None,
            options=options,
        )
    except (FileNotFoundError, ValueError, DatasetError) as e:
        raise fail(str(e))
    print_estimate(estimate, f"dry run of the judge {judge_model} on {run_dir} (nothing was sent)")


def _unfinished(run_dir: Path, n_predictions: int) -> str | None:
    """A warning when the scores cover part of the run: a run another process is still writing (it
    holds the run's lock), a run whose manifest selected more questions than were recorded (an
    interrupted `h2hmem run`), or one whose first invocation never recorded an end (killed)."""
    from ..records import RunStore

    holder = RunStore(run_dir).writer()
    if holder is not None:
        return (
            f"the run is still being written ({holder}); answers recorded so far: {n_predictions}, and these "
            "scores cover only those; evaluate again when the run has finished"
        )
    try:
        manifest = read_manifest(run_dir)
    except (OSError, ValueError):
        return None
    if manifest is None:
        return None
    if manifest.counts is None and manifest.finished_at is None:
        return (
            f"the run never finished (its process ended without recording an end); answers recorded: "
            f"{n_predictions}, and these scores cover only those; rerun the same `h2hmem run` command to finish "
            "it, then evaluate again"
        )
    selected = manifest.counts.questions if manifest.counts is not None else 0
    if selected <= n_predictions:
        return None
    return (
        f"the run is unfinished: {n_predictions} of {selected} questions have a recorded answer, and these "
        "scores cover only those; rerun the same `h2hmem run` command to finish it, then evaluate again"
    )
