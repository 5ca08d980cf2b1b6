"""The runner: one memory per dialogue, sessions in time order, every answer recorded at once.

Protocols (a setting, recorded in the manifest):
- ``full`` (default, the official protocol): observe every session of a dialogue, then ask all
  its questions — including questions about earlier sessions (docs/official-pitfalls.md #5 made explicit);
- ``online``: answer each session's questions right after observing it; ``session0`` (the
  cross-session pool) at the end.

With ``retrieval_only`` the runner calls the method's ``retrieve_evidence(view)`` instead of
``answer``: each record holds the ranked evidence, no answer, and no answer-model call is made.

Dialogues run in parallel (``dialogue_concurrency``); at most ``concurrency`` answer-model calls are
in flight, with as many questions again prepared ahead (``run/_slots.py``), and the model layer
bounds its own calls in flight too. Each prediction is appended to
``predictions.jsonl`` and flushed the moment it exists; a rerun skips answered ids, and the
request cache makes every model call already paid for free.

A failure to write the run's own files (predictions, transcripts, manifest: disk full, file-size
limit, I/O error) is not a failure of any question: it is raised as a :class:`~h2hmem.LocalIOError`
naming the file, every dialogue still running is cancelled at once (no further model call), the
manifest is finalised when it still can be, and the same command resumes once space is freed.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .._aio import run_sync
from .._localio import LocalIOError, disk_error, local_io
from .._version import __version__
from ..data import Dataset, Dialogue, Question, load_dataset
from ..llm import BadRequestError, ChatModel, ConnectionFailure, GenerationConfig, Usage, record_calls, tag_calls
from ..memory import (
    Answer,
    MemoryContext,
    MemoryMethod,
    MethodOptions,
    MethodOptionsError,
    check_fields,
    method_options,
    paper_prompt_hashes,
    prompt_hash,
    resolve_method,
)
from ..records import (
    BudgetEntry,
    Counts,
    EmbeddingRecord,
    Invocation,
    Manifest,
    MethodDescription,
    Prediction,
    Repair,
    RunSettings,
    RunStore,
    Timing,
    now_iso,
)
from ._build_order import BuildTurns
from ._config import RunConfig
from ._facts import CountedCaptions, run_components, run_environment, summed_stats
from ._fingerprint import command_line, dataset_fingerprint
from ._gc import quiet_gc
from ._progress import DialogueBars
from ._selection import Selection, SelectionError, SelectionWarning
from ._slots import slotted
from ._spend import BudgetExhausted, guard_models
from ._tally import Tally, tallied, tally_question

log = logging.getLogger(__name__)


class RunConflictError(ValueError):
    """The run directory holds a run with different settings, or another process is writing it
    (use another ``--run-id``)."""


UNREACHABLE_AFTER = 8
"""Failures in a row — questions, or dialogues' memory builds — because the model server cannot be
reached or refuses our key (:func:`_unreachable`) before the run stops with :class:`ModelUnreachableError`."""


class ModelUnreachableError(RuntimeError):
    """The model server could not be reached, or refused the credentials, :data:`UNREACHABLE_AFTER`
    times in a row (questions, or dialogues' memory builds; after each call's retries): the run
    stopped instead of failing every remaining question. The answers recorded so far are kept; the
    failures before the stop are recorded as failed (``--retry-failed`` redoes them), the one that
    tripped it and the questions in flight are not recorded (a rerun asks them)."""


def _unreachable(e: BaseException) -> bool:
    """A failure that says the model server is down or will refuse every call: no connection (after
    retries), or HTTP 401/403 (the key) — raised as it is or as the cause of a method's own error."""
    seen: BaseException | None = e
    for _ in range(5):  # the error itself and the causes a method wrapped it in
        if seen is None:
            return False
        if isinstance(seen, ConnectionFailure) or (isinstance(seen, BadRequestError) and seen.status in (401, 403)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class MethodSetupError(ValueError):
    """The method cannot be built with the given parameters (nothing was run): an option the method's
    ``Options`` model refuses (the message names it and what it accepts), or its constructor failed."""


class RunSummary(BaseModel):
    run_dir: Path
    questions: int
    """Questions selected for this run (after ``--limit``)."""
    answered_now: int
    skipped: int
    """Already recorded and not redone (resume)."""
    failed: int
    """Questions whose latest record has an error."""
    failed_questions: dict[str, str] = {}
    """``question_id → error`` of those questions (dataset order): redo them with ``retry_failed``."""
    usage: dict[str, Usage]
    images_without_caption: int = 0
    """Distinct images a method asked a caption for and got none (all invocations)."""
    caption_sources: dict[str, int] = {}
    """Caption source → distinct images it captioned (manifest ``caption_sources``): more than one
    means the run mixes captioners."""
    captions_changed: dict[str, list[str]] = {}
    """Dialogue → images whose caption changed since an earlier invocation (this invocation's
    ``captions_changed``): its answers were made with two caption states."""
    method_stats: dict[str, int | float] = {}
    """The method's ``describe()["stats"]`` summed over dialogues (A-Mem: ``analysis_failures``…)."""
    stopped: str | None = None
    """Why this invocation stopped before answering every question (``--max-cost``); None otherwise."""


def run_benchmark(
    config: RunConfig,
    *,
    chat_model: ChatModel | None = None,
    build_model: ChatModel | None = None,
    embedder: Any = None,
    progress: bool = True,
) -> RunSummary:
    """Run ``config.method`` over the dataset and write ``runs/<run-id>/`` (sync entry point).

    Args:
        config: what to run.
        chat_model / build_model / embedder: ready objects to use instead of building them from
            the config (notebooks and tests).
        progress: show a rich progress bar.

    Returns:
        Counts and usage of this invocation.

    Raises:
        DatasetError: the dataset has errors (every one named).
        RunConflictError: the run directory belongs to a run with other settings.
        UnknownMethodError: unknown method name or plugin spec.
        MethodSetupError: an option the method's ``Options`` model refuses (named, with what it accepts), or
            ``retrieval_only`` for a method without ``retrieve_evidence``, or its constructor failed.
        FileNotFoundError: ``config.captions_dir`` is set but is not a folder.
        LocalIOError: a file of the run (predictions, transcripts, manifest) could not be written;
            nothing was recorded as failed for it, and rerunning resumes.
        InRunningLoopError: called inside a running event loop (Jupyter): use :func:`arun_benchmark`.
    """
    return run_sync(
        lambda: arun_benchmark(
            config, chat_model=chat_model, build_model=build_model, embedder=embedder, progress=progress
        ),
        "arun_benchmark",
        args="config, ...",
    )


def select_questions(ds: Dataset, limit: int | None, selection: Selection | None = None) -> list[Question]:
    """Questions in dataset order (dialogue, session number, index), narrowed by ``selection``
    (filters, then the stratified sample), then the first ``limit`` when set.

    Raises:
        SelectionError: the selection names question ids or dialogues the dataset lacks, or it
            matches no question (a run of nothing would be recorded as complete).

    Warns:
        SelectionWarning: a ``sample`` larger than the questions the filters leave (all are taken).
    """
    qs = [q for d in ds.dialogues for q in sorted(d.questions, key=lambda q: (_session_number(q.session), q.index))]
    if selection is not None and not selection.is_empty:
        qs = selection.apply(qs)
        if not qs:
            raise SelectionError(f"the selection {selection.recorded()} matches no question of {ds.root}")
        if selection.sample is not None and selection.sample > len(qs):
            warnings.warn(
                f"--sample {selection.sample} is more than the {len(qs)} questions the filters leave: all {len(qs)} "
                "are taken",
                SelectionWarning,
                stacklevel=2,
            )
    return qs[:limit] if limit else qs


def _session_number(name: str) -> int:
    return int(name.removeprefix("session")) if name.removeprefix("session").isdigit() else 0


async def arun_benchmark(
    config: RunConfig,
    *,
    chat_model: ChatModel | None = None,
    build_model: ChatModel | None = None,
    embedder: Any = None,
    progress: bool = True,
) -> RunSummary:
    """Async form of :func:`run_benchmark` (for notebooks that already run an event loop)."""
    method_cls = resolve_method(config.method)
    try:
        options = method_options(config.method, method_cls.Options, config.method_params, config.preset)
    except MethodOptionsError as e:  # names the option and what it accepts
        raise MethodSetupError(str(e)) from e
    check_fields(method_cls.question_fields, f"{method_cls.__name__}.question_fields")
    if config.retrieval_only and not method_cls.supports_retrieval:
        raise MethodSetupError(
            f"method {config.method!r} has no retrieve_evidence(question) method, so it cannot "
            "run with retrieval_only (--retrieval-only)"
        )
    from ..embed import parse_embedder_spec

    if embedder is None:  # a ready embedder object needs no spec (tests, notebooks, the benchmarks)
        parse_embedder_spec(config.models.embedder)
    if config.captions_dir is not None and not Path(config.captions_dir).is_dir():  # noqa: ASYNC240 — once per run
        raise FileNotFoundError(
            f"captions folder {config.captions_dir} does not exist (write it with "
            f"`h2hmem caption <dataset> --captions-dir {config.captions_dir}`)"
        )
    ds = load_dataset(config.data_root, config.split)
    store = RunStore(config.run_dir)
    new_dir = not store.dir.exists()
    with store.locked() as holder:
        if holder is not None:
            raise RunConflictError(
                f"{store.dir} is being written by another h2hmem run ({holder}); wait for it "
                "to end, or choose another --run-id"
            )
        try:
            return await _run_locked(
                config,
                method_cls,
                options,
                ds,
                store,
                chat_model=chat_model,
                build_model=build_model,
                embedder=embedder,
                progress=progress,
            )
        except BaseException:
            if new_dir:  # stopped before writing anything (a plugin that cannot be built, a model without
                _remove_unused_run_dir(store.dir)  # a key): leave no run folder holding only its .lock
            raise


def _remove_unused_run_dir(run_dir: Path) -> None:
    """Remove ``run_dir`` (created by this invocation) when it holds nothing but the lock file and
    empty folders (e.g. a method's state folder); a folder holding any file is kept as it is."""
    files = [p for p in run_dir.rglob("*") if not p.is_dir() and p.name != ".lock"]
    if files or run_dir.is_symlink():
        return
    for p in sorted(run_dir.rglob("*"), key=lambda p: -len(p.parts)):
        if p.is_dir():
            p.rmdir()
        else:
            p.unlink()
    run_dir.rmdir()


async def _run_locked(
    config: RunConfig,
    method_cls: type[MemoryMethod[Any]],
    options: MethodOptions,
    ds: Dataset,
    store: RunStore,
    *,
    chat_model: ChatModel | None,
    build_model: ChatModel | None,
    embedder: Any,
    progress: bool,
) -> RunSummary:
    questions = select_questions(ds, config.limit, config.selection)
    manifest = _open_manifest(store, config, ds, method_identity(method_cls))
    with local_io(store.predictions_path):
        torn = store.repair()
    if torn:
        manifest.repairs.append(Repair(at=now_iso(), torn_bytes_removed=torn))
    recorded = {p.question_id: p for p in store.predictions()}
    known = {q.id for q in ds.questions}
    stray = [qid for qid in recorded if qid not in known]
    if stray:  # a line edited by hand, or copied from another run: no evaluation could score the run
        raise ValueError(
            f"{store.predictions_path}: {len(stray)} record(s) name a question that is not in the dataset at "
            f"{ds.root} (e.g. {stray[0]!r}); remove those lines, or start the run in another folder"
        )
    pending = [
        q for q in questions if q.id not in recorded or (config.execution.retry_failed and recorded[q.id].failed)
    ]
    skipped = len(questions) - len(pending)

    chat = chat_model or _load_chat(config, config.models.model)
    builder = build_model or (_load_chat(config, config.models.build_model) if config.models.build_model else None)
    budget, (chat, builder) = guard_models(config.execution.max_cost_usd, config.execution.prices, chat, builder)
    embed_factory = _shared(lambda: embedder if embedder is not None else _load_embedder(config))
    embed_since = copy.copy(getattr(embedder, "stats", None))  # a ready embedder's counts before this run
    captions = _caption_lookup(config)
    answer_config = GenerationConfig(temperature=config.generation.temperature, max_tokens=config.generation.max_tokens)
    manifest.transcripts = store.transcripts.path.name if config.execution.transcripts else None
    # the runner, not the method, records which code ran, with which options, on which software
    manifest.components = run_components(config, method_cls, options, chat, builder)
    manifest.environment = run_environment(method_cls)
    fields = method_cls.question_fields
    manifest.question_fields = list(fields)

    by_dialogue: dict[str, list[Question]] = defaultdict(list)
    for q in pending:
        by_dialogue[f"{q.split}/{q.dialogue}"].append(q)
    dialogues = [d for d in ds.dialogues if d.id in by_dialogue]
    state = _RunState(
        store=store, method=config.method, image_dir=store.dir / "state" / "question-images", fields=fields
    )
    state.retrieval_only = config.retrieval_only
    if config.retrieval_only:
        manifest.retrieval_only = True
    # `concurrency` answer-model calls in flight (call_slots), and as many questions again prepared
    # ahead: their retrieval runs while calls are in flight, so a freed slot sends at once (run/_slots.py)
    call_slots = asyncio.Semaphore(config.execution.concurrency)
    question_sem = asyncio.Semaphore(2 * config.execution.concurrency)
    dialogue_sem = asyncio.Semaphore(config.execution.dialogue_concurrency)

    def build(d: Dialogue) -> MemoryMethod[Any]:
        counted = state.captions.setdefault(d.id, CountedCaptions(captions(d.split, d.name)))
        state.bars.expect(d.id, sum(len(s.turns) for s in d.sessions))
        ctx = MemoryContext(
            dialogue_id=d.id,
            chat=tallied(slotted(state.bars.wrap(chat, d.id), call_slots)),
            build_chat=tallied(state.bars.wrap(builder, d.id)),
            captions=counted,
            state_dir=store.dir / "state" / d.split / d.name,
            embedder_factory=embed_factory,
            answer_config=answer_config,
            preset=config.preset,
        )
        return method_cls(ctx, options)

    # Parameters are the same for every dialogue: build the first memory before any work, so a
    # configuration error stops the run with one message instead of failing every question.
    built: dict[str, MemoryMethod[Any]] = {}
    if dialogues:
        try:
            built[dialogues[0].id] = build(dialogues[0])
        except Exception as e:
            raise MethodSetupError(
                f"cannot build method {config.method!r} with parameters {config.method_params or '{}'}: {_err(e)}"
            ) from e
    if dialogues:
        state.describe(dialogues[0].id, built[dialogues[0].id])
    with local_io(store.manifest_path):
        store.write_manifest(manifest)

    turns = BuildTurns(len(dialogues))

    async def run_dialogue(i: int, d: Dialogue) -> None:
        async with dialogue_sem:
            qs = by_dialogue[d.id]
            try:
                await turns.wait(i)
                memory = built.pop(d.id) if d.id in built else build(d)
            except Exception as e:  # dialogue-specific (e.g. its saved state): its questions fail, named
                turns.pass_on(i)
                state.stop_on_disk_error(e)
                for q in qs:
                    state.record(_failed(q, config.method, f"method setup failed: {_err(e)}"))
                return
            try:
                await _drive(d, memory, qs, config.protocol, question_sem, state, turns, i)
            finally:
                turns.pass_on(i)
                await _release(memory)

    with local_io(store.dir):
        store.open(transcripts=config.execution.transcripts)
    if store.transcripts.torn_bytes_removed:
        manifest.repairs.append(Repair(at=now_iso(), transcript_bytes_removed=store.transcripts.torn_bytes_removed))
    state.start(total=len(pending), progress=progress, label=f"{config.method} · {config.split}")
    close_error: LocalIOError | None = None
    try:
        with (
            record_calls(state.transcript_sink(store.transcripts) if config.execution.transcripts else None),
            tag_calls(invocation=manifest.resumes),
            quiet_gc(),  # a full collection would walk the whole dataset, stalling every call in flight
        ):
            # return_exceptions: a budget stop in one dialogue lets the others finish their calls in flight
            # (every later call is refused at once), so nothing is written after the store is closed;
            # a local I/O error cancels them all (state.halt)
            state.tasks = [asyncio.ensure_future(run_dialogue(i, d)) for i, d in enumerate(dialogues)]
            outcomes = await asyncio.gather(*state.tasks, return_exceptions=True)
        if state.failure is not None:
            raise state.failure
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, BudgetExhausted):
                raise outcome
    finally:
        state.stop()
        try:
            with local_io(store.predictions_path):
                store.close()
        except LocalIOError as e:
            close_error = e
        for m, ours in ((chat, chat_model is None), (builder, build_model is None)):
            if ours and m is not None and hasattr(m, "aclose"):
                await m.aclose()
        usage = _merge_usage(manifest.usage, _usage_of(chat, builder))
        if embed_factory.made():
            from ..embed import embedding_record

            old_embedding = manifest.embedding.model_dump() if manifest.embedding is not None else None
            embedding = embedding_record(embed_factory(), embed_since, old_embedding)
            manifest.embedding = EmbeddingRecord.model_validate(embedding) if embedding is not None else None
        final = {**recorded, **state.latest}  # = predictions.jsonl (last record per id), without re-reading it
        failed_questions = {
            q.id: err for q in questions if q.id in final and (err := final[q.id].error) is not None
        }  # error is not None = Prediction.failed
        failed = len(failed_questions)
        state.method_facts(manifest, [d.id for d in ds.dialogues])
        manifest.finished_at = now_iso()
        manifest.status = "complete" if len(final) >= len(questions) else "incomplete"
        manifest.usage = usage
        manifest.counts = Counts(
            questions=len(questions),
            recorded=sum(1 for q in questions if q.id in final),
            failed=failed,
            answered_this_invocation=state.done,
            skipped_already_recorded=skipped,
        )
        manifest.timing = _add_timing(manifest.timing, state)
        manifest.failed_questions = failed_questions
        if budget is not None:
            manifest.budget.append(
                BudgetEntry(
                    at=now_iso(),
                    max_cost_usd=budget.limit_usd,
                    spent_usd=round(budget.spent_usd, 6),
                    stopped=budget.refused,
                )
            )
        try:
            with local_io(store.manifest_path):
                store.write_manifest(manifest)
        except LocalIOError:
            if not isinstance(state.failure, LocalIOError):
                raise  # else the first disk error (already propagating) is the one to report
        if close_error is not None and isinstance(state.failure, ModelUnreachableError):
            raise close_error  # the predictions may not be on disk: that is what to report (exit 4)
    if close_error is not None:
        raise close_error
    return RunSummary(
        run_dir=store.dir,
        questions=len(questions),
        answered_now=state.done,
        skipped=skipped,
        failed=failed,
        failed_questions=failed_questions,
        usage=usage,
        images_without_caption=manifest.images_without_caption,
        caption_sources=manifest.caption_sources,
        captions_changed=manifest.invocations[-1].captions_changed if manifest.invocations else {},
        method_stats=manifest.method_stats,
        stopped=budget.refused if budget is not None else None,
    )


async def _release(memory: MemoryMethod[Any]) -> None:
    """Call the memory's ``aclose()`` (a product adapter releases its store's files); a failure there
    is logged, not raised: every answer is already recorded."""
    try:
        await memory.aclose()
    except Exception:
        log.warning("closing the memory of a dialogue failed", exc_info=True)


async def _drive(
    d: Dialogue,
    memory: MemoryMethod[Any],
    qs: list[Question],
    protocol: str,
    sem: asyncio.Semaphore,
    state: _RunState,
    turns: BuildTurns,
    turn: int,
) -> None:
    async def ask(batch: list[Question]) -> None:
        async def one(q: Question) -> None:
            async with sem:
                state.record(await _answer(memory, q, state))

        # wait for every question before passing on a budget stop, so no paid answer goes unrecorded
        for outcome in await asyncio.gather(*(one(q) for q in batch), return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome

    by_session: dict[str, list[Question]] = defaultdict(list)
    for q in qs:
        by_session[q.session].append(q)
    try:
        for s in d.sessions:
            with turns.watch(turn):  # a step that waits lets the next dialogue start building
                t0 = time.perf_counter()
                with tag_calls(dialogue=d.id, session=s.name):
                    await memory.observe(s)
                state.observed(time.perf_counter() - t0, absent=s.absent)
                state.bars.session_done(d.id, len(s.turns))
                if protocol == "online" and by_session.get(s.name):
                    await ask(by_session.pop(s.name))
            # a method whose observe never suspends (CPU only: an index over cached embeddings)
            # would build every session without letting another task run: replies already in
            # would wait. One yield per session lets them through.
            await asyncio.sleep(0)
    except Exception as e:
        state.stop_on_disk_error(e)  # e.g. a method's saved state on a full disk: not this dialogue's fault
        state.stop_if_unreachable(e)  # a build model that cannot be reached fails every dialogue alike
        err = f"memory build failed: {_err(e)}"
        for q in (q for batch in by_session.values() for q in batch):
            state.record(_failed(q, state.method, err))
        state.describe(d.id, memory)
        return
    except BaseException:  # a budget stop (or a cancellation) mid-build: keep the stats gathered so far
        state.describe(d.id, memory)
        raise
    finally:
        state.bars.built(d.id)
        turns.pass_on(turn)
    state.describe(d.id, memory)  # after the memory is built
    try:
        await ask([q for batch in by_session.values() for q in batch])
    finally:
        state.describe(d.id, memory)  # and at the end (stats gathered while answering), however it ends


async def _answer(memory: MemoryMethod[Any], q: Question, state: _RunState) -> Prediction:
    method = state.method
    t0 = time.perf_counter()
    tally = Tally()
    try:
        # the method gets a view without gold, gold sessions, home session or image file names;
        # the answer is joined back to the question by the view's opaque key
        view = state.captions[f"{q.split}/{q.dialogue}"].view(q, state.image_dir, state.fields)
        state.asked[view.key] = q
        try:
            with (
                tag_calls(question_ids=[q.id], dialogue=f"{q.split}/{q.dialogue}", session=q.session),
                tally_question(tally),
            ):
                if state.retrieval_only:
                    evidence = list(await memory.retrieve_evidence(view))
                else:
                    ans = await memory.answer(view)
        finally:
            q = state.asked.pop(view.key)
    except Exception as e:
        state.stop_on_disk_error(e)  # the machine's disk, not this question: the run stops
        state.stop_if_unreachable(e)  # a dead server or a refused key: stop, not fail every question
        return _failed(q, method, _err(e), latency=_latency(t0, tally))
    # ranked evidence, no answer; a retrieval step's own calls (h2h's rewrite, rerank) are counted
    if state.retrieval_only:
        return Prediction(
            **_question_fields(q),
            answer=None,
            evidence=evidence,
            latency_s=round(_latency(t0, tally), 4),
            usage=tally.usage,
            cached=tally.cached,
            method=method,
            details={"answer_sessions": list(q.answer_sessions), "retrieval_only": True},
        )
    if not isinstance(ans, Answer):  # a plugin's mistake: recorded for the question, not a crash of the run
        return _failed(
            q,
            method,
            f"{type(memory).__name__}.answer() returned {type(ans).__name__}, not h2hmem.memory.Answer",
            latency=_latency(t0, tally),
        )
    details = dict(ans.details)
    details["answer_sessions"] = list(q.answer_sessions)
    return Prediction(
        **_question_fields(q),
        answer=ans.text,
        evidence=ans.evidence,
        latency_s=round(_latency(t0, tally), 4),
        usage=tally.usage,
        cached=tally.cached,
        method=method,
        details=details,
    )


def _latency(t0: float, tally: Tally) -> float:
    """Seconds since ``t0`` (the question's start), without the time its calls waited for a call slot."""
    return max(0.0, time.perf_counter() - t0 - tally.slot_wait_s)


def _question_fields(q: Question) -> dict[str, Any]:
    return {
        "question_id": q.id,
        "split": q.split,
        "dialogue": q.dialogue,
        "session": q.session,
        "task_type": q.task_type.abbr,
        "main_category": q.main_category.value,
        "difficulty": q.difficulty,
        "question": q.text,
        "question_images": [i.key for i in q.images],
        "gold": q.gold,
    }


def _failed(q: Question, method: str, error: str, latency: float = 0.0) -> Prediction:
    return Prediction(
        **_question_fields(q),
        answer=None,
        error=error,
        method=method,
        latency_s=round(latency, 4),
        details={"answer_sessions": list(q.answer_sessions)},
    )


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class _RunState:
    """Progress and counters shared by the tasks of one invocation (single event loop: no locks)."""

    def __init__(self, store: RunStore, method: str, image_dir: Path | None = None, fields: tuple[str, ...] = ()):
        self.store = store
        self.method = method
        self.image_dir = image_dir or store.dir / "state" / "question-images"
        self.fields = fields
        self.retrieval_only = False
        """Call ``retrieve_evidence`` instead of ``answer`` (``RunConfig.retrieval_only``)."""
        self.captions: dict[str, CountedCaptions] = {}
        """Dialogue id → the counted caption lookup its memory was given."""
        self.asked: dict[str, Question] = {}
        """Opaque key → question, for the answers in flight."""
        self.descriptions: dict[str, MethodDescription] = {}
        """Dialogue id → the memory's latest ``describe()``."""
        self.done = 0
        self.errors = 0
        self.tokens = 0
        self.cached = 0
        self.build_s = 0.0
        self.sessions_observed = 0
        self.latest: dict[str, Prediction] = {}
        """Records appended by this invocation, by question id (the last one wins)."""
        self._progress: Progress | None = None
        self._task: Any = None
        self.bars = DialogueBars()
        self.tasks: list[asyncio.Future[None]] = []
        """The dialogue tasks of this invocation (cancelled by :meth:`halt`)."""
        self.failure: LocalIOError | ModelUnreachableError | None = None
        """The first local I/O error or unreachable model server: once set, nothing more is written or asked."""
        self.unreachable_in_a_row = 0
        """Questions recorded in a row that failed as :func:`_unreachable` (any other record resets it)."""

    def halt(self, error: LocalIOError | ModelUnreachableError) -> LocalIOError | ModelUnreachableError:
        """Stop the invocation on ``error`` (the first one wins): cancel every dialogue task, so no
        further model call is made; returns the error to raise."""
        if self.failure is None:
            self.failure = error
            for t in self.tasks:
                t.cancel()
        return self.failure

    def stop_on_disk_error(self, exc: BaseException) -> None:
        """Raise (after :meth:`halt`) when ``exc`` is a local disk failure (:func:`~h2hmem._localio.disk_error`:
        the run's files, or a method's saved state on a full disk); return for any other error,
        which the caller records against its question."""
        local = disk_error(exc, self.store.dir)
        if local is None:
            return
        failure = self.halt(local)
        if failure is exc:
            raise failure
        raise failure from exc

    def stop_if_unreachable(self, exc: BaseException) -> None:
        """Count a question's failure: after :data:`UNREACHABLE_AFTER` in a row that say the model
        server is unreachable (:func:`_unreachable`), stop the run (:meth:`halt`) by raising
        :class:`ModelUnreachableError` (this question is then not recorded: a rerun asks it again);
        any other failure, or an answer, resets the count."""
        if not _unreachable(exc):
            self.unreachable_in_a_row = 0
            return
        self.unreachable_in_a_row += 1
        if self.unreachable_in_a_row >= UNREACHABLE_AFTER:
            stop = ModelUnreachableError(
                f"the model server could not be reached {self.unreachable_in_a_row} times in a row (questions or "
                f"memory builds; the last: {_err(exc)}); the run stopped. Check the server (its --base-url, the API "
                "key), then rerun with --retry-failed to redo the questions that failed this way; the answers "
                "recorded so far are kept"
            )
            raise self.halt(stop) from exc

    def transcript_sink(self, writer: Any) -> Any:
        """``writer.write`` for :func:`~h2hmem.llm.record_calls`, stopping the run on an OS error."""

        def write(record: dict[str, Any]) -> None:
            if self.failure is not None:
                raise self.failure
            try:
                with local_io(writer.path):
                    writer.write(record)
            except LocalIOError as e:
                raise self.halt(e) from e.__cause__

        return write

    def start(self, total: int, progress: bool, label: str) -> None:
        if not progress:
            return
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        self._task = self._progress.add_task(label, total=total, info="")
        self.bars.attach(self._progress)
        self._progress.start()

    def record(self, pred: Prediction) -> None:
        if self.failure is not None:
            raise self.failure
        try:
            with local_io(self.store.predictions_path):
                self.store.append(pred)
        except LocalIOError as e:
            raise self.halt(e) from e.__cause__
        self.latest[pred.question_id] = pred
        if not pred.failed:
            self.unreachable_in_a_row = 0
        self.done += 1
        self.errors += pred.failed
        self.cached += pred.cached
        self.tokens += pred.usage.total_tokens
        if self._progress is not None:
            self._progress.update(
                self._task, advance=1, info=f"errors {self.errors} · cached {self.cached} · tokens {self.tokens:,}"
            )

    def observed(self, seconds: float, absent: bool) -> None:
        self.build_s += seconds
        self.sessions_observed += not absent

    def describe(self, dialogue_id: str, memory: MemoryMethod[Any]) -> None:
        """Read ``memory.describe()`` for the manifest; a failing describe() is recorded, not raised."""
        try:
            self.descriptions[dialogue_id] = MethodDescription.model_validate(dict(memory.describe()))
        except Exception as e:
            self.descriptions[dialogue_id] = MethodDescription(describe_error=_err(e))

    def method_facts(self, manifest: Manifest, order: list[str]) -> None:
        """Set the manifest fields the runner owns, merged with those of earlier invocations (dialogues
        not rebuilt this time keep their recorded facts): ``method_description`` (the first dialogue's
        ``describe()``), ``method_stats`` (its ``stats`` summed over dialogues) and
        ``method_stats_by_dialogue``, ``images_without_caption``, ``captions_missing_by_dialogue``,
        ``captions_by_dialogue`` and ``caption_sources``; a dialogue rebuilt with other captions than an
        earlier invocation gave it is named in this invocation's ``captions_changed``, with a warning."""
        stats_by = dict(manifest.method_stats_by_dialogue)
        for d, desc in self.descriptions.items():
            stats_by[d] = desc.stats or {}
        missing_by = {d: set(v) for d, v in manifest.captions_missing_by_dialogue.items()}
        used_by = dict(manifest.captions_by_dialogue)
        changed: dict[str, list[str]] = {}
        for d, counted in self.captions.items():
            before, was_missing = used_by.get(d, {}), missing_by.get(d, set())
            moved = {
                k
                for k, use in counted.used.items()
                if before.get(k, use) != use or (k not in before and k in was_missing)
            }
            moved |= counted.missing & set(before)
            if moved:
                changed[d] = sorted(moved)
            missing_by[d] = was_missing | counted.missing  # all invocations: an answer was made without it
            used_by[d] = {k: v for k, v in {**before, **counted.used}.items() if k not in counted.missing}
        if changed and manifest.invocations:
            manifest.invocations[-1].captions_changed = changed
            log.warning(
                "captions changed since an earlier invocation of this run for %d image(s) of %s: answers "
                "recorded before and after this resume were made with different captions (manifest "
                "invocations[].captions_changed); for one caption state, start a new run (another --run-id)",
                sum(len(v) for v in changed.values()),
                ", ".join(sorted(changed)),
            )
        sources: dict[str, int] = {}
        for uses in used_by.values():
            for use in uses.values():
                sources[use.source] = sources.get(use.source, 0) + 1
        manifest.captions_by_dialogue = {d: dict(sorted(v.items())) for d, v in sorted(used_by.items()) if v}
        manifest.caption_sources = dict(sorted(sources.items()))
        first = next((self.descriptions[d] for d in order if d in self.descriptions), None)
        if first is not None:
            manifest.method_description = first
        manifest.method_stats = summed_stats(stats_by)
        manifest.method_stats_by_dialogue = stats_by
        manifest.images_without_caption = sum(len(v) for v in missing_by.values())
        manifest.captions_missing_by_dialogue = {d: sorted(v) for d, v in missing_by.items() if v}

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _identity_diff(recorded: Any, wanted: dict[str, Any]) -> str:
    """``"method: recorded 'naive-rag', this run 'ngm'"`` for each setting that differs."""
    if not isinstance(recorded, dict):
        return f"recorded settings {recorded!r}"
    keys = [k for k in wanted if recorded.get(k) != wanted[k]] + [k for k in recorded if k not in wanted]
    return "; ".join(f"{k}: recorded {recorded.get(k)!r}, this run {wanted.get(k)!r}" for k in keys)


def method_identity(method_cls: type[MemoryMethod[Any]]) -> dict[str, Any]:
    """What the method class adds to the run's identity (:meth:`MemoryMethod.run_identity`: a memory
    product's distribution and version), so a run never resumes under another product version."""
    extra = method_cls.run_identity()
    return {"method_identity": extra} if extra else {}


def _open_manifest(store: RunStore, config: RunConfig, ds: Dataset, extra: dict[str, Any] | None = None) -> Manifest:
    splits: list[str] = ["dyadic", "multi-party"] if config.split == "all" else [config.split]
    fingerprint = dataset_fingerprint(ds.root, splits)
    identity = {**config.identity(), **(extra or {})}
    old = store.read_manifest()
    if old is not None:
        if old.identity != identity:
            diff = _identity_diff(old.identity, identity)
            raise RunConflictError(
                f"{store.dir} holds a run with other settings ({diff}); choose another --run-id or --out"
            )
        if old.dataset_fingerprint != fingerprint:
            raise RunConflictError(
                f"{store.dir} was run on a different dataset (fingerprint "
                f"{str(old.dataset_fingerprint)[:12]}… ≠ {fingerprint[:12]}…)"
            )
        old.resumes += 1
        first = old.config.model_dump(mode="json")
        changed = {k: v for k, v in config.recorded().items() if k in first and first[k] != v and k != "retry_failed"}
        old.invocations.append(
            Invocation(
                started_at=now_iso(),
                command=command_line(),
                retry_failed=config.execution.retry_failed,
                settings_changed=changed,
            )
        )
        return old
    return Manifest(
        run_id=config.resolved_run_id,
        version=__version__,
        command=command_line(),
        started_at=now_iso(),
        invocations=[
            Invocation(started_at=now_iso(), command=command_line(), retry_failed=config.execution.retry_failed)
        ],
        config=RunSettings.model_validate(config.recorded()),
        identity=identity,
        method=config.method,
        model=config.models.model,
        protocol=config.protocol,
        split=config.split,
        data_root=str(ds.root),
        dataset_fingerprint=fingerprint,
        prompt_hashes={"answer": prompt_hash(), **paper_prompt_hashes()},
    )


def _shared(factory):
    box: list[Any] = []

    def get():
        if not box:
            box.append(factory())
        return box[0]

    get.made = lambda: bool(box)  # type: ignore[attr-defined]
    return get


def _load_chat(config: RunConfig, spec: str) -> ChatModel:
    from ..llm import load_chat_model

    ex = config.execution
    cache: Any = None
    if ex.use_cache:
        from ..llm import default_cache_path

        cache = ex.cache_path or default_cache_path()
    return load_chat_model(
        spec,
        base_url=config.models.base_url,
        cache=cache,
        concurrency=ex.concurrency,
        timeout_s=ex.timeout_s,
        max_retries=ex.max_retries,
        refresh=ex.refresh_cache,
        prices=ex.prices or None,
    )


def _load_embedder(config: RunConfig) -> Any:
    from ..embed import default_embedding_cache_path, load_embedder

    ex, models = config.execution, config.models
    # the embedding cache lives beside the request cache (--cache-path), and --no-cache skips both
    cache = default_embedding_cache_path(ex.cache_path) if ex.use_cache else None
    # an OpenAI-compatible embedder is served by the run's --base-url (first one), like the chat model
    return load_embedder(
        models.embedder,
        base_url=models.base_url[0] if models.base_url else None,
        cache=cache,
        refresh=ex.refresh_cache,
        timeout_s=ex.timeout_s,  # --timeout bounds an embedding request as it bounds a chat call
    )


def _caption_lookup(config: RunConfig):
    from ..caption import CaptionStore

    store = CaptionStore(config.data_root, captions_dir=config.captions_dir)
    return store.for_dialogue


def _add_timing(old: Timing | None, state: _RunState) -> Timing:
    """Wall time of ``observe()`` (memory build, embedding included), summed over invocations."""
    old = old or Timing()
    build_s = old.memory_build_s + state.build_s
    sessions = old.sessions_observed + state.sessions_observed
    return Timing(
        memory_build_s=round(build_s, 4),
        sessions_observed=sessions,
        memory_build_s_per_session=round(build_s / sessions, 6) if sessions else None,
    )


def _usage_of(*models: Any) -> dict[str, Usage]:
    out: dict[str, Usage] = {}
    seen: set[int] = set()
    for m in models:
        if m is None or id(m) in seen or not hasattr(m, "usage_by_stage"):
            continue
        seen.add(id(m))
        for stage, u in m.usage_by_stage().items():
            out[stage] = out.get(stage, Usage()) + u
    return out


def _merge_usage(old: dict[str, Usage], new: dict[str, Usage]) -> dict[str, Usage]:
    out = dict(old)
    for k, v in new.items():
        out[k] = out.get(k, Usage()) + v
    return out
