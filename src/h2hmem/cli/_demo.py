"""``h2hmem demo``: the whole pipeline offline on a small synthetic dataset, in a few minutes."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from .. import defaults
from ._app import app, console, fail


@app.command("demo")
def demo_cmd(
    out: Path = typer.Option(Path("demo"), "--out", help="Folder for the synthetic data, captions and the run."),
    method: str = typer.Option(defaults.METHOD, help="Memory method to run."),
    model: str = typer.Option(
        defaults.ANSWER_MODEL,
        "--model",
        help="Answer (and A-Mem note-writing) model: the embedded "
        "offline 'local:smollm2' (default, 135M) or 'local:qwen2.5-coder-1.5b' (extra "
        "h2hmem[local-qwen]), or any 'openai:<model>'.",
    ),
    seed: int = typer.Option(0, help="Seed of the synthetic dataset."),
    captions: bool = typer.Option(True, help="Caption the images with offline OCR first (Tesseract)."),
    answer_max_tokens: int | None = typer.Option(
        None,
        help="Answer token limit; default: the embedded model's "
        "demo budget (SmolLM2 160, Qwen 96), 1,024 (published) for other "
        "models; recorded in the manifest.",
    ),
) -> None:
    """Offline end to end: synthesise a small dataset, OCR-caption it, run a method, evaluate, print the table."""
    from ..caption import caption_dataset
    from ..data import synthesize_dataset
    from ..llm import demo_answer_tokens
    from ..metrics import evaluate_run, summary_tables
    from ..run import RunConfig, run_benchmark

    data = out / "data"
    console.rule("1/4 synthesise a small H2HMem-shaped dataset")
    try:
        info = synthesize_dataset(data, "small", seed)
    except (FileExistsError, ValueError) as e:
        raise fail(str(e))
    s = info["splits"]
    console.print(
        f"{data}: " + ", ".join(f"{sp} {v['dialogues']} dialogues / {v['questions']} questions" for sp, v in s.items())
    )
    captions_dir = out / "captions"
    if captions:
        console.rule("2/4 caption images offline (OCR)")
        summary = caption_dataset(data, "ocr", out_dir=captions_dir, concurrency=2)
        console.print(
            f"{summary.captioned + summary.cached} captions, {summary.failed} failed "
            "(methods show an image without caption by its file name)"
        )
    budget = answer_max_tokens or demo_answer_tokens(model)
    console.rule(f"3/4 run {method} with {model} (answers of at most {budget} tokens)")
    config = RunConfig(
        data_root=data,
        method=method,
        models={"model": model},
        out_dir=out / "runs",
        captions_dir=captions_dir,
        execution={"concurrency": 2},
        generation={"max_tokens": budget},
    )
    t0 = time.perf_counter()
    try:
        run = run_benchmark(config)
    except RuntimeError as e:  # an embedded model whose packages are missing: the message says what to install
        raise fail(str(e))
    seconds = time.perf_counter() - t0
    console.print(
        f"{run.questions} questions, {run.failed} failed in {seconds:.0f} s "
        f"({seconds / max(run.answered_now, 1):.1f} s per answer) → {run.run_dir}"
    )
    console.rule("4/4 evaluate (lexical + evidence)")
    result = evaluate_run(run.run_dir, ("lexical", "evidence"), data_root=data)
    for table in summary_tables(result, show_ci=False):
        console.print(table)
    console.print(
        f"\nNext: `h2hmem report {run.run_dir}`; a real run: `h2hmem run --data <H2HMem root> --method {method} "
        "--model openai:<model> --base-url <server>`"
    )
