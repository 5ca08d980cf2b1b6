"""``h2hmem run`` and ``h2hmem export``: answer the benchmark's questions with a memory method."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .. import defaults
from .._localio import LOCAL_IO_EXIT_CODE, LocalIOError
from ..presets import DEFAULT_PRESET, check_preset
from . import _select as sel
from ._app import app, console, err_console, fail, fail_os, sigterm_as_interrupt

UNREACHABLE_EXIT_CODE = 5
"""Exit code of ``h2hmem run`` when it stops because the model server cannot be reached
(:class:`h2hmem.run.ModelUnreachableError`)."""

if TYPE_CHECKING:
    from pydantic import ValidationError


def parse_params(items: list[str]) -> dict[str, Any]:
    """``["top_k=5", "follow_links=true"]`` → ``{"top_k": 5, "follow_links": True}`` (values parsed as JSON
    when they are JSON, else kept as strings); the method's constructor validates them."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {item!r}: expected KEY=VALUE")
        try:
            out[key.strip().replace("-", "_")] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip().replace("-", "_")] = raw
    return out


# RunConfig fields whose command-line option has another name
_OPTION_OF_FIELD = {
    "answer_temperature": "--temperature",
    "out_dir": "--out",
    "timeout_s": "--timeout",
    "method_params": "--param",
    "use_cache": "--no-cache",
}


def config_error_message(error: ValidationError) -> str:
    """A RunConfig validation error as ``--split: Input should be 'dyadic', …`` lines, one per field,
    named by the command-line option (no pydantic boilerplate)."""
    lines = []
    from ..run import RunConfig

    for err in error.errors():
        field = RunConfig.flat_name(tuple(err["loc"]))
        option = _OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))
        msg = err["msg"].removeprefix("Value error, ")
        got = repr(err.get("input"))
        lines.append(f"{option}: {msg}" + ("" if got in msg else f" (got {got})"))
    return "; ".join(lines)


@app.command("run")
def run_cmd(
    data: Path = typer.Option(..., "--data", help="Dataset root (holds dyadic/ and multi-party/)."),
    split: str = typer.Option(defaults.SPLIT, help="dyadic, multi-party or all."),
    method: str = typer.Option(
        defaults.METHOD, help="Method name (see `h2hmem methods`) or plugin 'pkg.module:Class'."
    ),
    model: str = typer.Option(defaults.ANSWER_MODEL, help="Answer model: openai:<model> or local:smollm2."),
    base_url: list[str] | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible server URL (repeat for round-robin); default $OPENAI_BASE_URL."
    ),
    build_model: str | None = typer.Option(None, help="Separate memory-construction model (A-Mem notes)."),
    embedder: str = typer.Option(defaults.EMBEDDER, help="Text embedder: minilm or openai:<model>."),
    top_k: int | None = typer.Option(
        None,
        "--top-k",
        min=1,
        help="Same as --param top_k=N: memory units retrieved per question (default 5), for every method with "
        "a top_k option (h2hmem methods list).",
    ),
    param: list[str] | None = typer.Option(
        None, "--param", help="Method parameter or preset option KEY=VALUE (repeatable), e.g. truncation=recent."
    ),
    preset: str = typer.Option(
        DEFAULT_PRESET,
        "--preset",
        help="paper (the official scripts' requests, default) or harmonized (one shared prompt, no head truncation); see docs/protocol.md.",
    ),
    protocol: str = typer.Option(defaults.PROTOCOL, help="full (observe all, then ask; official) or online."),
    answer_max_tokens: int = typer.Option(
        defaults.ANSWER_MAX_TOKENS, help="Answer new-token limit (published: 1,024)."
    ),
    temperature: float = typer.Option(defaults.ANSWER_TEMPERATURE, help="Answer temperature (published: 0.1)."),
    out: Path = typer.Option(defaults.RUNS_DIR, "--out", help="Folder holding run directories."),
    run_id: str | None = typer.Option(None, help="Run directory name (default: derived from the settings)."),
    limit: int | None = typer.Option(None, help=sel.LIMIT_HELP),
    task_type: list[str] | None = sel.TASK_TYPE,
    dialogue: list[str] | None = sel.DIALOGUE,
    question_id: list[str] | None = sel.QUESTION_ID,
    difficulty: list[str] | None = sel.DIFFICULTY,
    sample: int | None = sel.SAMPLE,
    seed: int = sel.SEED,
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Count calls, prompt tokens and cost per stage without calling any model (nothing is written).",
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        min=0,
        help="Stop cleanly (resumable) before this invocation's model calls would cost more than USD.",
    ),
    price: list[str] | None = typer.Option(
        None,
        "--price",
        help="MODEL=IN/OUT: USD per million input/output tokens of a model not in the built-in table; repeatable.",
    ),
    caption_model: str | None = typer.Option(
        None,
        "--caption-model",
        help="With --dry-run: also count the calls "
        "`h2hmem caption --model MODEL` would make "
        "for images without a caption.",
    ),
    concurrency: int = typer.Option(
        defaults.CONCURRENCY, help="Calls to the answer model in flight (as many questions again are prepared ahead)."
    ),
    captions_dir: Path | None = typer.Option(
        None, help="Folder of captions written by `h2hmem caption --captions-dir`."
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Do not read or write the request cache nor the embedding cache."
    ),
    refresh_cache: bool = typer.Option(False, "--refresh-cache", help="Ignore cached replies (still store new ones)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Redo only the questions recorded with an error."),
    cache_path: Path | None = typer.Option(
        None, help="Request cache file (default ~/.cache/h2hmem/requests.sqlite or $H2HMEM_CACHE_DIR)."
    ),
    max_retries: int = typer.Option(
        defaults.MAX_RETRIES,
        "--max-retries",
        min=0,
        help="Retries of a failed model call (429, 5xx, timeouts, broken replies).",
    ),
    timeout: float = typer.Option(
        defaults.TIMEOUT_S, "--timeout", min=0.001, help="Seconds one model call may take before it is retried."
    ),
    retrieval_only: bool = typer.Option(
        False,
        "--retrieval-only",
        help="Record each question's ranked evidence without calling the answer "
        "model (memory is still built); score with `evaluate --metrics evidence`.",
    ),
    no_transcripts: bool = typer.Option(
        False,
        "--no-transcripts",
        help="Do not keep each model call (prompt, reply, usage) in RUN_DIR/transcripts.jsonl.gz.",
    ),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Answer every question with a memory method; resumes when the run directory exists."""
    from pydantic import ValidationError

    from ..data import DatasetError, UnknownLabelError
    from ..llm import check_model_spec
    from ..memory import MethodOptionsError, UnknownMethodError, method_options, resolve_method
    from ..run import ModelUnreachableError, RunConfig, RunConflictError, SelectionError, run_benchmark

    try:
        selection = sel.selection_from_options(task_type, dialogue, question_id, difficulty, sample, seed)
        prices = parse_prices(price or [])
        params = parse_params(param or [])
        if top_k is not None:
            if "top_k" in params and params["top_k"] != top_k:
                raise ValueError(f"--top-k {top_k} and --param top_k={params['top_k']} disagree; give one")
            params["top_k"] = top_k
        config = RunConfig(
            data_root=data,
            split=split,
            method=method,
            method_params=params,
            preset=check_preset(preset),
            models={"model": model, "base_url": base_url or None, "build_model": build_model, "embedder": embedder},
            protocol=protocol,
            generation={"max_tokens": answer_max_tokens, "temperature": temperature},
            out_dir=out,
            run_id=run_id,
            limit=limit,
            captions_dir=captions_dir,
            execution={
                "concurrency": concurrency,
                "use_cache": not no_cache,
                "refresh_cache": refresh_cache,
                "retry_failed": retry_failed,
                "cache_path": cache_path,
                "max_retries": max_retries,
                "timeout_s": timeout,
                "max_cost_usd": max_cost,
                "prices": prices,
                "transcripts": not no_transcripts,
            },
            selection=selection,
            retrieval_only=retrieval_only,
        )
    except ValidationError as e:
        raise fail(config_error_message(e))
    except ValueError as e:
        raise fail(str(e))
    if dry_run:
        _dry_run(config, quiet, caption_model)
        return
    try:  # a misspelt method or option is refused before the run line names a run that will not exist
        method_options(config.method, resolve_method(config.method).Options, config.method_params, config.preset)
    except (UnknownMethodError, MethodOptionsError) as e:
        raise fail(str(e))
    if not config.data_root.is_dir():
        raise fail(f"--data: dataset root {config.data_root} does not exist (it holds dyadic/ and multi-party/)")
    for option, spec in (("--model", config.models.model), ("--build-model", config.models.build_model)):
        try:
            if spec is not None:
                check_model_spec(spec)
        except ValueError as e:
            raise fail(f"{option}: {e}")
    console.print(f"run [bold]{config.resolved_run_id}[/] → {config.run_dir}")
    try:
        with sigterm_as_interrupt():
            summary = run_benchmark(config, progress=not quiet)
    except LocalIOError as e:  # the run's own files: nothing recorded as failed for it, rerun resumes
        raise fail(str(e), LOCAL_IO_EXIT_CODE)
    except ModelUnreachableError as e:  # a dead server or a refused key: stopped instead of failing everything
        raise fail(str(e), UNREACHABLE_EXIT_CODE)
    except (
        DatasetError,
        RunConflictError,
        UnknownMethodError,
        FileNotFoundError,
        SelectionError,
        UnknownLabelError,
    ) as e:
        raise fail(str(e))
    except ValueError as e:  # e.g. a damaged manifest or predictions line: the message names file and line
        raise fail(str(e))
    except OSError as e:  # --out under a file, a full disk before the runner's own checks (the lock file), …
        raise fail_os(e, config.run_dir, f"{e.filename or config.run_dir}: {e.strerror or e}")
    except KeyboardInterrupt:
        err_console.print(
            f"[yellow]interrupted[/]: the answers recorded so far are kept in "
            f"{config.run_dir / 'predictions.jsonl'}; rerun the same command to resume.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130)
    tokens = sum(u.total_tokens for u in summary.usage.values())
    calls = sum(u.calls for u in summary.usage.values())
    console.print(
        f"{summary.questions} questions: {summary.answered_now} answered now, {summary.skipped} already "
        f"recorded, {summary.failed} failed · {calls} model calls · {tokens:,} tokens (whole run)"
    )
    console.print(f"predictions: {summary.run_dir / 'predictions.jsonl'}\nnext: h2hmem evaluate {summary.run_dir}")
    stats_line = _method_stats_line(config.method, summary.method_stats)
    if stats_line:
        failures = sum(v for k, v in summary.method_stats.items() if "fail" in k)
        console.print(
            stats_line + (" (manifest.json: method_stats)" if failures else ""),
            style="yellow" if failures else None,
            highlight=False,
            soft_wrap=True,
        )
    _warn_uncaptioned(summary.images_without_caption)
    _warn_caption_mix(summary.caption_sources, summary.captions_changed)
    if summary.stopped:
        err_console.print(
            f"[yellow]stopped before the budget:[/] {summary.stopped}. The answers recorded so far are "
            "kept; rerun the same command (with a higher --max-cost, or none) to resume.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(3)
    if summary.failed:
        console.print(f"[yellow]{summary.failed} failed questions[/] (answer recorded as failed, scored 0):")
        for qid, error in list(summary.failed_questions.items())[:10]:
            console.print(f"  {qid}: {error}", highlight=False, markup=False, soft_wrap=True)
        if summary.failed > 10:
            console.print(f"  … {summary.failed - 10} more (manifest.json: failed_questions)")
        console.print("fix the cause, then rerun the same command with --retry-failed")
        raise typer.Exit(1)  # like `caption`: the run is complete, but scripts must notice the failures


def _method_stats_line(method: str, stats: dict[str, Any]) -> str | None:
    """``"a-mem (all dialogues): analysis_failures 152 · evolutions 40 …"``, failures first, or None."""
    if not stats:
        return None
    keys = sorted(stats, key=lambda k: ("fail" not in k, k))
    return f"{method} (all dialogues): " + " · ".join(f"{k} {stats[k]:,}" for k in keys)


def parse_prices(items: list[str]) -> dict[str, tuple[float, float]]:
    """``["my-model=0.5/1.5"]`` → ``{"my-model": (0.5, 1.5)}`` (USD per million input/output tokens).

    Raises:
        ValueError: an item not of the form MODEL=IN/OUT with two finite non-negative numbers.
    """
    from ..llm import valid_price

    out: dict[str, tuple[float, float]] = {}
    for item in items:
        name, sep, rest = item.partition("=")
        inp, slash, outp = rest.partition("/")
        try:
            pair = (float(inp), float(outp))
        except ValueError:
            pair = (-1.0, -1.0)
        if not sep or not slash or not name.strip() or not valid_price(pair):
            raise ValueError(
                f"--price {item!r}: expected MODEL=IN/OUT, USD per million input/output tokens "
                "(e.g. gpt-4.1-nano=0.10/0.40)"
            )
        out[name.strip().removeprefix("openai:")] = pair
    return out


def dry_run_notice(config: Any) -> str:
    """What ``--dry-run`` does on this machine, said before it starts: it runs the method for real
    (memories built, retrieval included) with counting models in place of the chat models."""
    reuse = (
        "vectors already in the embedding cache are reused" if config.execution.use_cache else "--no-cache: none reused"
    )
    embeds = (
        f"a method that retrieves embeds every turn with the local embedder {config.models.embedder} (minutes on a "
        f"laptop CPU and about 1 GB of memory for a few dozen questions; {reuse})"
    )
    return (
        "dry run: the memories are built on this machine to count the real prompts, and "
        f"{embeds}; no model is called and {config.run_dir} is not written."
    )


def _dry_run(config: Any, quiet: bool, caption_model: str | None = None) -> None:
    from ..data import DatasetError
    from ..memory import UnknownMethodError
    from ..run import estimate_run
    from ._cost import print_estimate

    if not quiet:
        err_console.print(dry_run_notice(config), highlight=False, soft_wrap=True)
    try:
        estimate = estimate_run(config, progress=not quiet, caption_model=caption_model)
    except (DatasetError, UnknownMethodError, FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    print_estimate(estimate, f"dry run of {config.resolved_run_id} (nothing was sent)")


def _warn_uncaptioned(missing: int) -> None:
    """Say so when images reached the method without a caption (no `h2hmem caption` run, or a wrong
    --captions-dir): caption-based methods then see only the image's file name. ``missing`` is the
    runner's count of distinct images looked up without a caption (manifest ``images_without_caption``)."""
    if missing:
        err_console.print(
            f"[yellow]note:[/] {missing} images had no caption (shown by file name only); caption them "
            "with `h2hmem caption <dataset>` (add --captions-dir DIR and pass the same DIR to run)",
            highlight=False,
            soft_wrap=True,
        )


def _warn_caption_mix(sources: dict[str, int], changed: dict[str, list[str]]) -> None:
    """Say so when the captions a run's memories were given came from more than one captioner, or
    changed since an earlier invocation (manifest ``caption_sources``, ``invocations[].captions_changed``)."""
    if len(sources) > 1:
        listed = ", ".join(f"{s} ({n} images)" for s, n in sorted(sources.items(), key=lambda kv: -kv[1]))
        err_console.print(
            f"[yellow]note:[/] the captions came from more than one captioner: {listed} "
            "(manifest.json: caption_sources)",
            highlight=False,
            soft_wrap=True,
        )
    if changed:
        err_console.print(
            f"[yellow]note:[/] {sum(len(v) for v in changed.values())} captions of {len(changed)} dialogue(s) "
            "changed since an earlier invocation of this run, so its answers were made with two caption "
            "states (manifest.json: invocations[].captions_changed); for one state, start a new run "
            "(another --run-id)",
            highlight=False,
            soft_wrap=True,
        )


@app.command("methods")
def methods_cmd() -> None:
    """List the memory methods (built-in baselines and installed plugins)."""
    from ..memory import available_methods

    for name, target in available_methods().items():
        console.print(f"{name:12s} {target}", highlight=False)


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory (runs/<run-id>)."),
    format: str = typer.Option("official", "--format", help="official: per-session results_<method>.json files."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default RUN_DIR/official)."),
    results_folder: str = typer.Option(
        "evaluation_results",
        "--results-folder",
        help="Folder name inside each session folder: evaluation_results (the baselines', read by the "
        "official judge) or evaluation_results_qwen_3B (the only one the official lexical scorer reads).",
    ),
) -> None:
    """Export predictions as the official baselines' per-session results files, for the official
    judge and lexical scorers (give them OUT/<split> as base path); docs/records.md."""
    from ..run import export_official

    if format != "official":
        raise fail(
            f"unknown format {format!r}; supported: official (for leaderboard files use `h2hmem submission export`)"
        )
    if not (run_dir / "predictions.jsonl").is_file():
        raise fail(f"{run_dir}: no predictions.jsonl (is this a run directory?)")
    try:
        paths = export_official(run_dir, out, results_folder=results_folder)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    except OSError as e:  # a full or read-only disk is a local I/O error (exit 4), as in run, evaluate, report
        raise fail_os(e, out or run_dir / "official", f"cannot write the export: {e}")
    where = paths[0].parents[5] if paths else (out or run_dir / "official")
    console.print(
        f"wrote {len(paths)} per-session results files under {where} (official evaluators: base path {where}/<split>)",
        highlight=False,
    )
