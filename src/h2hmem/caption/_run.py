"""Caption every image of a dataset: deduplicated, concurrent, resumable, never aborted by one image.

Official step 1 of the caption-based baselines (Full (Text), Naive RAG, A-Mem). The official
captioner had no cache, no resume, no concurrency and stopped at the first API error
(``docs/official-pitfalls.md`` #15); here each caption is written the moment it exists,
a rerun skips images whose caption has the same cache key, and failures are recorded.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .. import defaults
from .._aio import run_sync
from .._atomic import atomic_write_text
from .._localio import disk_error, local_io
from .._version import __version__
from ..data import ImageRef, IssueLog, load_dataset
from ..llm import ChatModel, Usage, count_tokens, file_sha256
from ..presets import DEFAULT_PRESET, Preset
from ..records import exclusive_lock, now_iso
from ._protocol import Captioner, CaptionError
from ._settings import OCR_MODEL, OPTION_NAMES, TOKEN_ENCODING, CaptionSettings, cache_key, cut_caption
from ._store import CaptionRecord, CaptionStore, ImageId, TokenStats

FAILURES_FILE = "caption_failures.json"
"""Written into the captions folder after every run: failed and missing images with reasons."""


class CaptionFailure(BaseModel):
    """One image that has no caption after this run."""

    image: str
    """``"dyadic/dialogue5/session3/1.png"``."""
    reason: str


class CaptionSummary(BaseModel):
    """What a captioning run did. Counts are images (after deduplication)."""

    root: str
    captions_dir: str
    """Where new captions and ``caption_failures.json`` were written."""
    model: str
    preset: str = DEFAULT_PRESET
    options: dict[str, Any] = {}
    """Resolved preset options (see :class:`CaptionSettings`)."""
    images: int = 0
    """Distinct images named by turns and questions."""
    captioned: int = 0
    """Captions made in this run."""
    cached: int = 0
    """Skipped: a caption with the same cache key was already on disk."""
    kept_official: int = 0
    """Skipped: the caption file runs read for the image was not written by h2hmem (no cache key: the
    official captioner's), and is kept as it is (``replace_official`` recaptions them)."""
    failed: int = 0
    missing: int = 0
    """Image files named by the dataset but absent from disk (reported, not an error)."""
    truncated: int = 0
    """Captions (new or cached) cut to ``max_tokens``."""
    caption_tokens: int = 0
    """cl100k tokens of the new captions, after the cut."""
    usage: Usage = Usage()
    """Model usage of this run: tokens, calls sent, request-cache hits, cost (USD)."""
    elapsed_s: float = 0.0
    failures: list[CaptionFailure] = []
    missing_images: list[str] = []
    dataset_errors: int = 0
    """Errors the loader found (their questions/sessions were skipped, their images not seen)."""

    @property
    def ok(self) -> bool:
        """True when every image present on disk has a caption."""
        return self.failed == 0


@dataclass
class _Job:
    image: ImageId
    ref: ImageRef


def dataset_images(
    root: str | Path, split: str = "all", log: IssueLog | None = None
) -> tuple[Path, dict[ImageId, ImageRef]]:
    """Distinct images named by the turns and questions of ``split``, in dialogue/session order.

    Returns ``(dataset_root, {image id: resolved reference})``; a reference's ``path`` is None when
    the file is missing, empty or refused by the loader. Loading is lenient: files with errors
    are skipped and the errors go to ``log``.

    Raises:
        FileNotFoundError: no split folder under ``root``.
        ValueError: unknown ``split``.
    """
    ds = load_dataset(root, split, strict=False, log=log)
    seen: dict[ImageId, ImageRef] = {}
    for d in ds.dialogues:
        refs = [t.image for s in d.sessions for t in s.turns if t.image is not None]
        refs += [img for q in d.questions for img in q.images]
        for ref in refs:
            key = ImageId(d.split, d.name, ref.session, ref.file)
            if key not in seen or (seen[key].path is None and ref.path is not None):
                seen[key] = ref
    return ds.root, seen


def make_captioner(
    model: ChatModel | str,
    *,
    concurrency: int = defaults.CONCURRENCY,
    base_url: str | None = None,
    use_cache: bool = True,
) -> tuple[Captioner, bool]:
    """A captioner for ``model`` (a ChatModel, ``"ocr"`` or a model spec) and whether we own it
    (built here, so it must be closed here). A model built from a spec uses the shared request
    cache (``h2hmem.llm.default_cache_path()``) unless ``use_cache`` is false."""
    from ._ocr import OCRCaptioner
    from ._vlm import VLMCaptioner

    if isinstance(model, str) and model.strip().lower() == OCR_MODEL:
        return OCRCaptioner(concurrency), True
    if isinstance(model, str):
        from ..llm import default_cache_path, load_chat_model  # imported lazily: only VLM runs need it

        cache = default_cache_path() if use_cache else None
        return VLMCaptioner(
            load_chat_model(model, base_url=base_url, concurrency=concurrency, cache=cache), owned=True
        ), True
    return VLMCaptioner(model), False


def caption_dataset(
    root: str | Path,
    model: ChatModel | str,
    *,
    out_dir: str | Path | None = None,
    max_tokens: int = defaults.CAPTION_MAX_TOKENS,
    concurrency: int = defaults.CONCURRENCY,
    split: str = defaults.SPLIT,
    prompt: str | None = None,
    temperature: float = defaults.CAPTION_TEMPERATURE,
    max_new_tokens: int = defaults.CAPTION_MAX_NEW_TOKENS,
    use_cache: bool = True,
    base_url: str | None = None,
    progress: bool = True,
    preset: str = DEFAULT_PRESET,
    options: Mapping[str, Any] | None = None,
    replace_official: bool = False,
) -> CaptionSummary:
    """Caption every image of the dataset at ``root``: the sync entry point of :func:`acaption_dataset`
    (same arguments). It runs its own event loop, so a model passed in has the connections it
    opened in that loop closed at the end (the model stays usable)."""

    async def main() -> CaptionSummary:
        try:
            return await acaption_dataset(
                root,
                model,
                out_dir=out_dir,
                max_tokens=max_tokens,
                concurrency=concurrency,
                split=split,
                prompt=prompt,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                use_cache=use_cache,
                base_url=base_url,
                progress=progress,
                preset=preset,
                options=options,
                replace_official=replace_official,
            )
        finally:
            if not isinstance(model, str) and hasattr(model, "aclose"):
                await model.aclose()

    return run_sync(main, "acaption_dataset", args="root, model, ...")


async def acaption_dataset(
    root: str | Path,
    model: ChatModel | str,
    *,
    out_dir: str | Path | None = None,
    max_tokens: int = defaults.CAPTION_MAX_TOKENS,
    concurrency: int = defaults.CONCURRENCY,
    split: str = defaults.SPLIT,
    prompt: str | None = None,
    temperature: float = defaults.CAPTION_TEMPERATURE,
    max_new_tokens: int = defaults.CAPTION_MAX_NEW_TOKENS,
    use_cache: bool = True,
    base_url: str | None = None,
    progress: bool = True,
    preset: str = DEFAULT_PRESET,
    options: Mapping[str, Any] | None = None,
    replace_official: bool = False,
) -> CaptionSummary:
    """Caption every image named by the turns and questions of ``split``.

    Image identity is ``(split, dialogue, session, file)``; an image named by several turns or
    questions is captioned once. Each caption is written as soon as it exists (official layout,
    see :class:`CaptionStore`), so an interrupted run loses nothing; a rerun skips images whose
    caption file carries the same cache key (image SHA-256, model, prompt, limits) and so retries
    only failed and new ones.

    Args:
        root: dataset root (or its parent holding ``dataset/``).
        model: a :class:`~h2hmem.llm.ChatModel` that sees images, a model spec for
            ``load_chat_model`` (paper: ``"openai:gpt-4o"``), or ``"ocr"`` (Pillow + Tesseract, offline).
        out_dir: captions folder mirroring the dataset layout; default: the dataset root itself.
        max_tokens: caption limit in cl100k tokens; longer captions are cut and marked (paper: 256).
        concurrency: images in flight at once (also the model's/OCR pool's concurrency).
        split: ``"dyadic"``, ``"multi-party"`` or ``"all"``.
        prompt: a custom prompt template (``{max_tokens}`` is filled in); default: the text of the
            ``caption_prompt`` option (``paper``: the official bulleted request).
        temperature: caption temperature (official: 0.7).
        max_new_tokens: generation limit before the cut (official: 1,200).
        use_cache: False recaptions everything (and disables the model's request cache when the
            model is built here from a spec).
        base_url: OpenAI-compatible endpoint for a model spec.
        progress: show a rich progress bar.
        preset: ``"paper"`` (default: the official captioner's request) or ``"harmonized"``.
        options: overrides of single preset options (``caption_prompt``, ``image_encoding``,
            ``image_detail``, ``truncation_marker``, ``partial_chars``; see :class:`CaptionSettings`).
            The resolved values are recorded in every caption file (``model_info.options``), the
            summary and ``caption_failures.json``; they are part of the cache key.
        replace_official: recaption images whose caption file (the one runs read) h2hmem did not
            write — the official captioner's, with no cache key. Default False: such files are kept
            and counted in ``kept_official`` (they are what the official baselines read). When True,
            each is replaced in place and kept beside the new one as ``<name>.official.json``; this
            needs the captions written into the dataset root (no ``out_dir``), because the root's files
            are read before a captions folder's.

    Returns:
        A :class:`CaptionSummary`; failures and missing files are listed there and in
        ``<out_dir>/caption_failures.json``. Per-image problems never raise.

    Raises:
        FileNotFoundError: ``root`` holds no split folder.
        ValueError: bad ``split``, ``max_tokens``, ``concurrency``, preset or option, a model that
            cannot see images, or ``replace_official`` with an ``out_dir`` other than the dataset root.
        PermissionError: the captions folder cannot be written (a read-only dataset root needs ``out_dir``).
        CaptionConflictError: another process is captioning into the same folder (a ``ValueError``).
        LocalIOError: a caption file cannot be written for a full or read-only disk (the command stops).
        OCRSetupError: ``"ocr"`` without Tesseract installed.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    unknown = sorted(set(options or {}) - set(OPTION_NAMES))
    if unknown:
        raise ValueError(f"unknown caption option(s) {unknown}; choose from {list(OPTION_NAMES)}")
    settings = CaptionSettings(
        preset=cast(Preset, preset),  # any name: validation raises ValueError (documented above)
        max_tokens=max_tokens,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        prompt=prompt,
        **dict(options or {}),
    )
    started = time.perf_counter()
    log = IssueLog()
    base, images = dataset_images(root, split, log)
    jobs = [_Job(image, ref) for image, ref in images.items()]
    store = CaptionStore(base, out_dir)
    if replace_official and store.write_dir.resolve() != store.root.resolve():
        raise ValueError(
            "replace_official (--replace-official) replaces the official caption files where they are, in the "
            f"dataset root {store.root}; captions written into {store.write_dir} would be hidden by them "
            "(runs read the dataset root first): leave out the captions folder (--captions-dir)"
        )
    _check_writable(store.write_dir, out_dir is None)
    captioner, owned = make_captioner(model, concurrency=concurrency, base_url=base_url, use_cache=use_cache)
    summary = CaptionSummary(
        root=str(base),
        captions_dir=str(store.write_dir),
        model=captioner.spec,
        preset=settings.preset,
        options=settings.options(),
        images=len(jobs),
        dataset_errors=len(log.errors),
    )
    try:
        # one captioning per folder at a time: a second would pay for every image the first is paying for
        with exclusive_lock(
            store.write_dir / CAPTION_LOCK, f"h2hmem caption ({captioner.spec}) since {now_iso()}"
        ) as holder:
            if holder is not None:
                raise CaptionConflictError(
                    f"{store.write_dir} is being captioned by another process ({holder}); wait for it to end, "
                    "then rerun: the captions it writes are kept and not paid for again"
                )
            await _run_jobs(
                jobs, store, captioner, settings, summary, use_cache, concurrency, progress, replace_official
            )
            summary.failures.sort(key=lambda f: f.image)
            summary.missing_images.sort()
            summary.elapsed_s = round(time.perf_counter() - started, 3)
            _write_failures(store.write_dir, summary)
    finally:
        if owned:
            await captioner.aclose()
    return summary


CAPTION_LOCK = ".h2hmem-caption.lock"
"""The file in the captions folder a running ``caption_dataset`` holds locked (``flock``, released by
the operating system however the process ends)."""


class CaptionConflictError(ValueError):
    """Another process is writing captions into the same folder."""


async def _run_jobs(
    jobs: list[_Job],
    store: CaptionStore,
    captioner: Captioner,
    settings: CaptionSettings,
    summary: CaptionSummary,
    use_cache: bool,
    concurrency: int,
    show: bool,
    replace_official: bool,
) -> None:
    sem = asyncio.Semaphore(concurrency)
    with Progress(
        TextColumn("[bold]captions[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        disable=not show,
        transient=False,
    ) as bar:
        task = bar.add_task("", total=len(jobs))

        async def one(job: _Job) -> None:
            async with sem:
                outcome = await _caption_one(job, store, captioner, settings, use_cache, replace_official)
            _tally(summary, job.image, outcome)
            bar.update(
                task,
                advance=1,
                description=f"new {summary.captioned} · cached {summary.cached} · official kept {summary.kept_official} · "
                f"failed {summary.failed} · missing {summary.missing}",
            )

        tasks = [asyncio.ensure_future(one(j)) for j in jobs]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # a full disk, an interrupt: stop the other captions now, not after paying for them
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


@dataclass
class _Outcome:
    status: str
    """``captioned``, ``cached``, ``kept`` (an official file), ``failed`` or ``missing``."""
    reason: str = ""
    record: CaptionRecord | None = None


async def _caption_one(
    job: _Job,
    store: CaptionStore,
    captioner: Captioner,
    settings: CaptionSettings,
    use_cache: bool,
    replace_official: bool = False,
) -> _Outcome:
    # Decide from the file itself, not from ref.path: the loader also leaves path unset for
    # empty or undecodable files, and those must be reported as failures with their reason.
    path = store.image_path(job.image)
    found: list[CaptionRecord] | None = None  # read once for the keep check and the cache check below
    if not replace_official:
        found = store.records(job.image)
        if found and found[0].external:  # found[0] is the caption runs read: the dataset root's first
            return _Outcome("kept", record=found[0])
    if not path.exists():
        return _Outcome("missing")
    if not path.resolve().is_relative_to(store.root.resolve()):
        return _Outcome("failed", f"image is a link to {path.resolve()}, outside the dataset root")
    if not path.is_file():
        return _Outcome("failed", "image path is not a regular file")
    try:
        sha = await asyncio.to_thread(file_sha256, path)
    except OSError as e:
        return _Outcome("failed", f"cannot read image file: {e.strerror or e}")
    key = cache_key(sha, captioner.identity, settings, uses_prompt=captioner.uses_prompt)
    if use_cache:
        for rec in store.records(job.image) if found is None else found:
            if rec.cache_key == key:
                return _Outcome("cached", record=rec)
    try:
        out = await captioner.caption(path, settings, name=f"{job.image.session}/{job.image.file}")
    except CaptionError as e:
        return _Outcome("failed", e.reason)
    except Exception as e:  # one image must never stop the run; the type is kept in the reason
        return _Outcome("failed", f"{type(e).__name__}: {e}")
    text = out.text.strip()
    final, n, was_cut = cut_caption(text, settings)
    stats = TokenStats(
        original_tokens=n,
        final_tokens=count_tokens(final, TOKEN_ENCODING),
        was_truncated=was_cut,
        limit=settings.max_tokens,
    )
    record = CaptionRecord(
        timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        image_info={
            "path": job.image.rel_image.as_posix(),
            "filename": job.image.file,
            "size": path.stat().st_size,
            "sha256": sha,
            **out.image_info,
        },
        model_info={
            "model": captioner.spec,
            "identity": captioner.identity,
            "caption_max_tokens": settings.max_tokens,
            **(
                {
                    "temperature": settings.temperature,
                    "max_new_tokens": settings.max_new_tokens,
                    "prompt_sha256": settings.prompt_sha256,
                }
                if captioner.uses_prompt
                else {}
            ),
            "preset": settings.preset,
            "options": settings.options(),
            "h2hmem_version": __version__,
        },
        description={"full_text": text, "final_text": final, "token_stats": stats.model_dump()},
        usage={**out.usage.model_dump(), "request_cached": out.cached},
        cache_key=key,
    )
    try:
        await asyncio.to_thread(store.put, job.image, record)
    except OSError as e:
        local = disk_error(e, store.write_dir)
        if local is not None:  # a full disk is no fault of this image: stop the command (exit 4), rerun resumes
            raise local from e
        return _Outcome("failed", f"cannot write the caption file: {e.strerror or e} ({e.filename or store.write_dir})")
    return _Outcome("captioned", record=record)


def _tally(summary: CaptionSummary, image: ImageId, outcome: _Outcome) -> None:
    if outcome.status == "missing":
        summary.missing += 1
        summary.missing_images.append(str(image))
        return
    if outcome.status == "failed":
        summary.failed += 1
        summary.failures.append(CaptionFailure(image=str(image), reason=outcome.reason))
        return
    rec = outcome.record
    assert rec is not None
    summary.truncated += rec.was_truncated
    if outcome.status in ("cached", "kept"):
        if outcome.status == "cached":
            summary.cached += 1
        else:
            summary.kept_official += 1
        return
    summary.captioned += 1
    summary.caption_tokens += int(rec.description["token_stats"]["final_tokens"])
    summary.usage = summary.usage + Usage.model_validate(
        {k: v for k, v in rec.usage.items() if k in Usage.model_fields}
    )


def _check_writable(folder: Path, is_dataset_root: bool) -> None:
    """Refuse a folder we cannot write, or one marked read-only (no write bit), which root could
    otherwise write into regardless (the shared sample is such a folder)."""
    hint = (
        " (the dataset root is read-only: pass a separate captions folder, --captions-dir DIR)"
        if is_dataset_root
        else ""
    )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not folder.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            raise PermissionError(f"cannot write captions to {folder}: folder is marked read-only{hint}")
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".h2hmem-write-test-"):
            pass
    except PermissionError:
        raise
    except OSError as e:
        raise PermissionError(f"cannot write captions to {folder}: {e.strerror or e}{hint}") from e


def _write_failures(folder: Path, summary: CaptionSummary) -> None:
    data = {
        "model": summary.model,
        "preset": summary.preset,
        "options": summary.options,
        "written_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "images": summary.images,
        "failed": [f.model_dump() for f in summary.failures],
        "missing": summary.missing_images,
    }
    with local_io(folder / FAILURES_FILE):  # whole or not at all: a full disk leaves the previous file
        atomic_write_text(folder / FAILURES_FILE, json.dumps(data, ensure_ascii=False, indent=1))
