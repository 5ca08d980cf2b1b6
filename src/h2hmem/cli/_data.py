"""``h2hmem data …``: validate, describe, download and synthesise datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from .. import defaults
from ..data import SPLITS, TaskType, validate_dataset
from ._app import app, console, fail

if TYPE_CHECKING:
    from ..llm import ModelClient

data_app = typer.Typer(help="Validate, describe, download and synthesise H2HMem datasets.", no_args_is_help=True)
app.add_typer(data_app, name="data")

SplitOpt = typer.Option("all", "--split", help="dyadic, multi-party or all.")


@data_app.command("validate")
def validate_cmd(
    root: Path = typer.Argument(..., help="Dataset root (holds dyadic/ and multi-party/)."),
    split: str = SplitOpt,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
    show: int = typer.Option(20, help="How many issues of each severity to list."),
) -> None:
    """Check a dataset: errors and warnings with counts; exit 1 only when there are errors."""
    try:
        log, stats = validate_dataset(root, split)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    n_err, n_warn = len(log.errors), len(log.warnings)
    if as_json:
        print(
            json.dumps(
                {
                    "root": str(root),
                    "ok": n_err == 0,
                    "errors": n_err,
                    "warnings": n_warn,
                    "counts": log.counts(),
                    "stats": stats,
                    "issues": [i.model_dump() for i in log.issues],
                },
                ensure_ascii=False,
                indent=1,
            )
        )
    else:
        for sev, items in (("error", log.errors), ("warning", log.warnings)):
            counts = log.counts()[sev]
            if not counts:
                continue
            t = Table(title=f"{sev}s ({len(items)})", title_justify="left")
            t.add_column("code")
            t.add_column("n", justify="right")
            for code, n in counts.items():
                t.add_row(code, str(n))
            console.print(t)
            for i in items[:show]:
                console.print(f"  {i}", highlight=False, markup=False, soft_wrap=True)
            if len(items) > show:
                console.print(f"  … {len(items) - show} more (use --json for all)")
        verdict = "[green]OK[/]" if n_err == 0 else "[red]INVALID[/]"
        console.print(
            f"{verdict}: {n_err} error(s), {n_warn} warning(s); "
            f"{stats['splits']['all']['questions']} questions, "
            f"{stats['unvalidated_questions']} marked validated=false"
        )
    raise typer.Exit(1 if n_err else 0)


@data_app.command("stats")
def stats_cmd(
    root: Path = typer.Argument(..., help="Dataset root."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Dataset overview: dialogues, sessions, turns, image turns, questions; counts per task type."""
    try:
        log, stats = validate_dataset(root)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    if as_json:
        stats["errors"] = len(log.errors)
        stats["warnings"] = len(log.warnings)
        print(json.dumps(stats, ensure_ascii=False, indent=1))
        return
    t = Table(title="H2HMem dataset", title_justify="left")
    t.add_column("split")
    cols = ["dialogues", "sessions", "absent_sessions", "turns", "image_turns", "questions"]
    for c in cols:
        t.add_column(c.replace("_", " "), justify="right")
    for sp in (*SPLITS, "all"):
        t.add_row(sp, *(str(stats["splits"][sp][c]) for c in cols))
    console.print(t)
    q = Table(title="Questions per task type", title_justify="left")
    for c in ("main category", "abbr", "sub-type", *SPLITS, "all"):
        q.add_column(c, justify="right" if c in (*SPLITS, "all") else "left")
    for tt in TaskType:
        q.add_row(
            tt.main_category.value,
            tt.abbr,
            tt.value,
            *(str(stats["task_types_by_split"][sp][tt.abbr]) for sp in SPLITS),
            str(stats["task_types"][tt.abbr]),
        )
    console.print(q)
    console.print("By main category: " + ", ".join(f"{k} {v}" for k, v in stats["main_categories"].items()))
    console.print("By difficulty: " + ", ".join(f"{k} {v}" for k, v in stats["difficulty"].items()))
    if log.errors:
        console.print(f"[red]{len(log.errors)} error(s)[/]: run `h2hmem data validate {root}`")


@data_app.command("synth")
def synth_cmd(
    out: Path = typer.Argument(
        ..., help="Folder to create (must be empty, or an interrupted run of the same scale/seed)."
    ),
    scale: str = typer.Option(
        "small", "--scale", help="small (8 sessions, 60 questions), full (published size) or xN."
    ),
    seed: int = typer.Option(0, "--seed", help="Same seed → byte-identical files."),
) -> None:
    """Generate a synthetic H2HMem-shaped dataset (real PNG/JPEG images, all nine task types)."""
    from ..data import synthesize_dataset

    try:
        res = synthesize_dataset(out, scale=scale, seed=seed, progress=True)
    except (ValueError, FileExistsError, OSError) as e:
        raise fail(str(e))
    t = Table(title=f"synthetic dataset in {out} (scale {scale}, seed {seed})", title_justify="left")
    cols = ["dialogues", "sessions", "turns", "image_turns", "questions"]
    t.add_column("split")
    for c in cols:
        t.add_column(c.replace("_", " "), justify="right")
    for sp, row in res["splits"].items():
        t.add_row(sp, *(str(row[c]) for c in cols))
    console.print(t)
    console.print("Task types: " + ", ".join(f"{k} {v}" for k, v in res["task_types"].items()))
    console.print(
        f"Written in {res['seconds']:.1f} s; ground truth (image text, evidence) in {out / 'synth_meta.json'}"
    )


@data_app.command("download")
def download_cmd(
    dest: Path = typer.Option(Path("dataset"), "--dest", help="Target folder; gets dyadic/ and multi-party/."),
    repo_id: str = typer.Option("varib/H2HMEM", "--repo-id", help="Hugging Face dataset repository."),
    revision: str = typer.Option(None, "--revision", help="Branch, tag or commit (default: main)."),
    endpoint: str = typer.Option(None, "--endpoint", help="Hub URL (default: $HF_ENDPOINT or huggingface.co)."),
    token: str = typer.Option(None, "--token", help="Hub access token (default: $HF_TOKEN or the cached login)."),
) -> None:
    """Download the official dataset from the Hugging Face Hub, then validate it and print its stats."""
    from ..data import DownloadError, download_dataset

    try:
        root = download_dataset(dest, repo_id=repo_id, revision=revision, endpoint=endpoint, token=token)
    except DownloadError as e:
        raise fail(str(e))
    console.print(f"Downloaded {repo_id} to {root}")
    log, _ = validate_dataset(root)
    stats_cmd(root, as_json=False)
    console.print(f"{len(log.errors)} error(s), {len(log.warnings)} warning(s) (details: h2hmem data validate {root})")
    if log.errors:
        raise typer.Exit(1)


@data_app.command("label-evidence")
def label_evidence_cmd(
    root: Path = typer.Argument(..., help="Dataset root (holds dyadic/ and multi-party/)."),
    model: str = typer.Option(
        "offline",
        "--model",
        help="offline (answer overlap) or openai:<model> (any OpenAI-compatible server with --base-url).",
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server; default $OPENAI_BASE_URL."),
    out: Path | None = typer.Option(
        None, "--out", help="Labels folder (default ROOT/evidence-labels, where `evaluate` finds them)."
    ),
    split: str = SplitOpt,
    reference: Path | None = typer.Option(
        None, "--reference", help="Labels to report agreement with (e.g. the shared sample's labels)."
    ),
    concurrency: int = typer.Option(defaults.CONCURRENCY, "--concurrency", min=1, help="Model calls in flight."),
) -> None:
    """Label the turns that support each gold answer (cached, resumable); prints counts and agreement."""
    from ..metrics import OFFLINE, label_evidence

    chat: str | ModelClient = OFFLINE
    if model != OFFLINE:
        from ..llm import default_cache_path, load_chat_model

        try:
            chat = load_chat_model(model, base_url=base_url, cache=default_cache_path(), concurrency=concurrency)
        except (ValueError, RuntimeError) as e:
            raise fail(f"--model {model}: {e}")
    try:
        report = label_evidence(root, chat, out, split=split, reference=reference)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    console.print_json(json.dumps(report))
