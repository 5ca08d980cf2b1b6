"""``h2hmem caption``: caption every image of a dataset (VLM or offline OCR), resumable."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .. import defaults
from .._localio import LOCAL_IO_EXIT_CODE, LocalIOError
from ._app import app, console, err_console, fail, fail_os, sigterm_as_interrupt


@app.command("caption")
def caption_cmd(
    root: Path = typer.Argument(..., help="Dataset root (holds dyadic/ and multi-party/)."),
    model: str = typer.Option(
        defaults.CAPTION_MODEL,
        "--model",
        help="Vision model spec (paper: openai:gpt-4o), or 'ocr' for the offline Pillow + Tesseract fallback.",
    ),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint for the model."),
    max_tokens: int = typer.Option(
        defaults.CAPTION_MAX_TOKENS,
        "--max-tokens",
        min=1,
        help="Caption limit in cl100k tokens; longer captions are cut (paper: 256).",
    ),
    concurrency: int = typer.Option(defaults.CONCURRENCY, "--concurrency", min=1, help="Images captioned at once."),
    captions_dir: Path = typer.Option(
        None,
        "--captions-dir",
        help="Write captions here (same layout as the dataset) instead of "
        "beside the images; needed when the dataset is read-only.",
    ),
    split: str = typer.Option(defaults.SPLIT, "--split", help="dyadic, multi-party or all."),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        help="Recaption every image, ignoring existing captions and the request cache (the official "
        "caption files are still kept: see --replace-official).",
    ),
    temperature: float = typer.Option(
        defaults.CAPTION_TEMPERATURE, "--temperature", help="Caption temperature (official: 0.7)."
    ),
    preset: str = typer.Option(
        "paper",
        "--preset",
        help="paper (the official captioner's request: bulleted prompt, raw image bytes, "
        "'... \\[truncated]' marker) or harmonized (prose prompt, ≤1024 px JPEG, no marker).",
    ),
    caption_prompt: str | None = typer.Option(
        None, "--caption-prompt", help="Override the preset: official (bulleted request) or prose."
    ),
    image_encoding: str | None = typer.Option(
        None, "--image-encoding", help="Override the preset: raw (file bytes) or jpeg1024."
    ),
    image_detail: str | None = typer.Option(
        None, "--image-detail", help="Override the preset: auto, low, high or none (no detail field)."
    ),
    truncation_marker: str | None = typer.Option(
        None,
        "--truncation-marker",
        help="Override the preset: text appended to a cut caption (paper '... \\[truncated]'; '' for none).",
    ),
    partial_chars: str | None = typer.Option(
        None,
        "--partial-chars",
        help="Override the preset: replace (keep U+FFFD of a character split by the cut, official) or drop.",
    ),
    replace_official: bool = typer.Option(
        False,
        "--replace-official",
        help="Recaption images whose caption file h2hmem did not write (the official captioner's; kept by "
        "default, as the official baselines read them); each is kept beside the new one as <name>.official.json. "
        "Writes into the dataset root (no --captions-dir).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Caption the images of the turns and questions; rerunning retries only failed and new images.

    Exits 0 when images are missing (they are reported with counts) and 1 when some captions failed.
    """
    from pydantic import ValidationError

    from ..caption import OCRSetupError, caption_dataset
    from ..llm import ModelError

    options = {
        k: v
        for k, v in (
            ("caption_prompt", caption_prompt),
            ("image_encoding", image_encoding),
            ("image_detail", image_detail),
            ("truncation_marker", truncation_marker),
            ("partial_chars", partial_chars),
        )
        if v is not None
    }
    try:
        with sigterm_as_interrupt():
            summary = caption_dataset(
                root,
                model,
                out_dir=captions_dir,
                max_tokens=max_tokens,
                concurrency=concurrency,
                split=split,
                temperature=temperature,
                use_cache=not no_cache,
                base_url=base_url,
                progress=not (quiet or as_json),
                preset=preset,
                options=options,
                replace_official=replace_official,
            )
    except ValidationError as e:
        raise fail(
            "bad caption option: "
            + "; ".join(f"{'.'.join(map(str, x['loc'])) or 'preset'}: {x['msg']}" for x in e.errors())
        )
    except LocalIOError as e:  # a full disk: the captions written so far are kept, a rerun resumes
        raise fail(str(e), LOCAL_IO_EXIT_CODE)
    except (FileNotFoundError, ValueError, PermissionError, OCRSetupError, ModelError, ImportError) as e:
        raise fail(str(e))
    except OSError as e:  # the request cache cannot be opened, …: one line, as `h2hmem run` says it
        raise fail_os(
            e, captions_dir or root, str(e) if e.errno is None else f"{e.filename or root}: {e.strerror or e}"
        )
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]interrupted[/]: the captions made so far are kept; rerun the same command to caption the rest.",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130)
    if as_json:
        print(json.dumps(summary.model_dump(mode="json"), ensure_ascii=False, indent=1))
        raise typer.Exit(0 if summary.ok else 1)
    t = Table(title=f"Captions ({summary.model}, preset {summary.preset})", title_justify="left")
    t.add_column("")
    t.add_column("n", justify="right")
    u = summary.usage
    for label, value in (
        ("images", summary.images),
        ("captioned now", summary.captioned),
        ("cached (skipped)", summary.cached),
        ("official files kept", summary.kept_official),
        ("failed", summary.failed),
        ("missing files", summary.missing),
        ("truncated", summary.truncated),
        ("caption tokens", summary.caption_tokens),
        ("model calls", u.calls),
        ("request-cache hits", u.cached_calls),
        ("model tokens", u.total_tokens),
        ("cost (USD)", f"{u.cost_usd:.4f}"),
        ("seconds", f"{summary.elapsed_s:.1f}"),
    ):
        t.add_row(label, str(value))
    console.print(t)
    for f in summary.failures[:20]:
        console.print(f"  [red]failed[/] {escape(str(f.image))}: {escape(f.reason)}", highlight=False, soft_wrap=True)
    if summary.failed > 20:
        console.print(f"  … {summary.failed - 20} more")
    if summary.missing:
        console.print(
            f"[yellow]{summary.missing} image file(s) named by the dataset are missing[/] "
            f"(e.g. {summary.missing_images[0]}); their turns will have no caption."
        )
    if summary.dataset_errors:
        console.print(
            f"[red]{summary.dataset_errors} dataset error(s)[/]: the files concerned were skipped, "
            f"their images not seen; run `h2hmem data validate {root}`",
            highlight=False,
        )
    console.print(
        f"Captions in {summary.captions_dir}; failures listed in "
        f"{Path(summary.captions_dir) / 'caption_failures.json'}"
        + ("; rerun the same command to retry them." if summary.failed else "."),
        highlight=False,
    )
    raise typer.Exit(0 if summary.ok else 1)
