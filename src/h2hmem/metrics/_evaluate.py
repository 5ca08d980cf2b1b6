"""``evaluate_run``: score a run directory with the selected scorers and write ``scores/``.

Each :class:`~h2hmem.metrics.Scorer` (built in: ``lexical``, ``evidence`` with ``turn_evidence``,
``judge``; plugins from the entry-point group ``h2hmem.scorers``) writes one line per question to
``scores/<name>.jsonl`` (its ``record_type``, in question order) and one section
``metrics.<name>`` to ``scores/summary.json`` (:class:`h2hmem.records.ScoresSummary`; JSON Schema
``docs/schemas/scores-summary.schema.json``)::

    {"schema": "h2hmem.scores-summary/2", "created_at": ISO time, "preset": "paper" | "harmonized",
     "run": {"dir", "method", "model", "n_predictions", "failed", "data_root", "gold_source",
             "gold_mismatches", "retrieval_only"},
     "label": null | "not comparable with published numbers",
     "metrics": {NAME: {"fields": [...], "aggregate": AGG, ...the scorer's own keys}, ...},
     "components": [{"kind": "scorer", "name", "target", "distribution", "version", "options"}, ...,
                    {"kind": "judge", "name": model spec, ...}],
     "environment": {"h2hmem", "git", "python", "platform", "distributions"}}

where AGG is the output of :func:`~h2hmem.metrics.aggregate` (schema in its module). The built-in
sections' own keys: ``evidence``/``turn_evidence`` ``status, reason, excluded`` (and the labels);
``judge`` ``model, mode, preset, options, label, coverage, stale, usage`` (see the scorers' modules).

Scores follow the predictions. Every score line records the :func:`~h2hmem.records.prediction_hash`
of the prediction it scored. An offline scorer (every built-in but the judge) whose file is in
``scores/`` is run again on every call, asked for or not (cheap), so no line describes an older
prediction; the judge is only called when asked for, and otherwise its lines whose prediction
changed since are dropped and its section marked stale (:mod:`._scorer_judge`). Every section
present is summarised again over the scored predictions.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .._aio import run_sync
from ..data import Question, load_dataset
from ..presets import DEFAULT_PRESET, Preset
from ..records import (
    JUDGE_TRANSCRIPTS,
    ComponentSpec,
    Manifest,
    Prediction,
    Record,
    RunStore,
    ScoreSet,
    ScoresSummary,
    SummaryMetrics,
    SummaryRun,
    capture_environment,
    component_spec,
    now_iso,
    read_json_lines,
    read_manifest,
    read_predictions,
    read_score_lines,
)
from ._aggregate import DEFAULT_N_BOOT
from ._judge_options import JUDGE_OPTION_NAMES, JudgeMode, JudgeOptions
from ._labels import EvidenceLabels
from ._scorer import Scorer, ScoringContext, blamed_on, run_score
from ._scorer_lexical import LEXICAL_FIELDS
from ._scorer_registry import BUILTIN_SCORERS, available_scorers, resolve_scorers

METRICS: tuple[str, ...] = tuple(n for n in BUILTIN_SCORERS if n != "turn_evidence")
"""The built-in metric names ``evaluate`` takes (``turn_evidence`` comes with ``evidence``);
:func:`~h2hmem.metrics.available_scorers` lists every scorer, plugins included."""
_DIGITS = re.compile(r"\d+")

__all__ = [
    "LEXICAL_FIELDS",
    "METRICS",
    "EvaluationConflictError",
    "aevaluate_run",
    "evaluate_run",
    "question_order",
    "read_score_file",
]


class EvaluationConflictError(ValueError):
    """Another evaluation holds the run's scores lock (``scores/.lock``): it is writing ``scores/``
    (and may be paying the judge) right now. The message names it (``pid 1234, h2hmem evaluate
    (judge) since …``); the CLI exits with code 2."""


def question_order(qid: str) -> tuple:
    """Sort key of a question id ``split/dialogue/session/qN``: the split, then the numbers in the other
    parts (``D10`` after ``D9``), then the id itself."""
    parts = qid.split("/")
    return (parts[0], *[int(m.group()) if (m := _DIGITS.search(x)) else 0 for x in parts[1:]], qid)


def read_score_file(path: Path) -> list[dict[str, Any]]:
    """Records of a scores file (``scores/*.jsonl``); a torn last line is ignored.

    Raises:
        ValueError: any other line is not valid JSON (the message names the file and line).
    """
    return [r for _, r in read_json_lines(path)]


def _gold_from_dataset(
    preds: list[Prediction], root: Path, split: str, others: Sequence[Prediction] = ()
) -> tuple[list[Prediction], dict, int, dict, list[Prediction]]:
    """Replace each prediction's gold and labels by the dataset's (joined by question id); also
    return the absent sessions of each dialogue (``"<split>/<dialogue>"`` → names) and ``others``
    (an evaluation's predictions outside its selection) joined the same way from the same read of
    the dataset, where one the dataset lacks keeps its own gold instead of being refused.

    Raises:
        ValueError: a prediction of ``preds`` (not ``others``) is not in the dataset.
    """
    ds = load_dataset(root, split if split in ("dyadic", "multi-party") else "all", strict=False)
    absent = {d.id: {s.name for s in d.sessions if s.absent} for d in ds.dialogues}
    by_id = {q.id: q for q in ds.questions}
    out, gold, mismatches = [], {}, 0
    for p in preds:
        q = by_id.get(p.question_id)
        if q is None:
            raise ValueError(f"question id {p.question_id!r} of the run is not in the dataset at {root}")
        mismatches += p.gold.strip() != q.gold.strip()
        out.append(_with_gold(p, q))
        gold[q.id] = list(q.answer_sessions)
    joined = [p if (q := by_id.get(p.question_id)) is None else _with_gold(p, q) for p in others]
    return out, gold, mismatches, absent, joined


def _with_gold(p: Prediction, q: Question) -> Prediction:
    """``p`` with the dataset question ``q``'s gold answer and labels."""
    return p.model_copy(
        update={
            "gold": q.gold,
            "task_type": q.task_type.abbr,
            "main_category": q.main_category.value,
            "difficulty": q.difficulty,
        }
    )


def _components(done: list[Scorer], ctx: ScoringContext, summary: ScoresSummary) -> list[ComponentSpec]:
    """One spec per scorer with a section, then the judge model (from this pass's model, else from
    the judgments on file)."""
    out = [component_spec("scorer", s.name, type(s), s.options(ctx)) for s in done]
    judge = summary.metrics.judge
    if judge is not None:
        ran = ctx.model is not None and "judge" in ctx.selected
        opts = {"preset": judge.preset, **(judge.options if isinstance(judge.options, dict) else {})}
        out.append(component_spec("judge", judge.model, type(ctx.model) if ran else None, opts))
    return out


async def aevaluate_run(
    run_dir: str | Path,
    metrics: Sequence[str] = ("lexical", "evidence"),
    *,
    data_root: str | Path | None = None,
    judge_model: Any = None,
    judge_mode: JudgeMode | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    refresh: bool = False,
    show_progress: bool = False,
    selection: Any = None,
    preset: str = DEFAULT_PRESET,
    judge_options: Mapping[str, Any] | None = None,
    transcripts: bool = True,
    evidence_labels: str | Path | EvidenceLabels | None = None,
) -> dict[str, Any]:
    """Score ``run_dir`` and write its ``scores/`` files; returns the summary (schema above: a
    :class:`~h2hmem.records.ScoresSummary` as its JSON dict; read it typed with
    :func:`h2hmem.records.read_scores_summary`).

    The async twin of :func:`evaluate_run` (same arguments): ``await aevaluate_run(...)`` in a
    notebook or async code; the judge's calls then run in the caller's event loop.

    Args:
        run_dir: a run directory holding ``predictions.jsonl`` (and usually ``manifest.json``).
        metrics: names of registered scorers (:func:`~h2hmem.metrics.available_scorers`): built in
            ``"lexical"``, ``"evidence"`` (with ``"turn_evidence"``), ``"judge"``, or a plugin's.
        data_root: dataset root for gold answers, labels and gold sessions (joined by question
            id; preferred). Default: the manifest's ``data_root`` when it exists on disk, else the
            copies in the prediction records.
        judge_model: a :class:`~h2hmem.llm.ChatModel` (needed for ``"judge"``; the CLI builds
            ``openai:gpt-4o-mini``, the official judge), or a model spec such as
            ``"openai:gpt-4o-mini"``: loaded with :func:`~h2hmem.llm.load_chat_model` and the request
            cache, its server from ``$OPENAI_BASE_URL`` (build the model yourself for other settings).
        judge_mode: the ``batching`` option: ``"session"`` (official batching, both presets) or
            ``"question"``; overrides ``judge_options``.
        n_boot: bootstrap resamples for the 95% CIs (default 1,000, spec §3).
        seed: bootstrap seed.
        refresh: re-judge questions already judged in ``scores/judge.jsonl``.
        show_progress: show a rich progress bar while judging.
        selection: a :class:`~h2hmem.run.Selection` (or any object with ``is_empty``, ``apply`` and ``recorded``): score only those predictions (recorded as
            the summary's ``selection``; the ``scores/`` files then cover only them, and the current
            judgments of the other questions are kept in ``scores/judge.kept.jsonl``, where a later
            evaluation finds them: a judgment is paid for once).
        transcripts: append every judge call to ``RUN_DIR/transcripts-judge.jsonl.gz``
            (format: :mod:`h2hmem.records._transcripts`).
        preset: ``"paper"`` (default: the official judge's prompt, JSON array reply, snapped
            scores) or ``"harmonized"`` (our rubric, JSON object, strict levels); recorded in the
            summary and in every judgment.
        judge_options: overrides of single judge options (``judge_format``, ``score_levels``,
            ``batching``; see :class:`~h2hmem.metrics.JudgeOptions`). A judgment in
            ``scores/judge.jsonl`` is reused only under the same resolved options.
        evidence_labels: supporting-turn labels (a ``*.jsonl`` file, a folder of them, or loaded
            labels) for the turn-level metrics; default: the labels found next to the dataset
            root (:func:`~h2hmem.metrics.find_evidence_labels`), else no turn metrics.

    Raises:
        FileNotFoundError: no ``predictions.jsonl`` (or dataset) where expected.
        UnknownScorerError: an unknown metric name (a ValueError; the message has close matches).
        ValueError: unknown preset or judge option, no predictions, a bad record, a question id missing from
            the dataset, ``"judge"`` without a model, or a judge file written by another judge.
        EvaluationConflictError: another evaluation of this run is writing ``scores/`` (a
            ValueError; names its process). Nothing is scored and no judge call is made.
        LocalIOError: a score file cannot be written (a full disk, a file-size limit: names the
            file). ``scores/`` then holds the previous evaluation's files as they were (plus the
            judgments appended meanwhile to ``judge.jsonl``, reused by the next pass).

    The files of one evaluation are written as a set (:class:`~h2hmem.records.ScoreSet`): each is
    staged in full, then all are renamed into place, ``summary.json`` last. The evaluation holds
    the run's scores lock (:meth:`~h2hmem.records.RunStore.scores_locked`) throughout, so a second
    one at the same time refuses at once instead of paying the judge again.
    """
    run_dir = Path(run_dir)
    known = available_scorers()
    chosen = resolve_scorers(list(metrics))  # UnknownScorerError (a ValueError) with did-you-mean
    unknown_opts = sorted(set(judge_options or {}) - set(JUDGE_OPTION_NAMES))
    if unknown_opts:
        raise ValueError(f"unknown judge option(s) {unknown_opts}; choose from {list(JUDGE_OPTION_NAMES)}")
    options = JudgeOptions(
        preset=cast(Preset, preset),  # validated by JudgeOptions (ValueError on an unknown preset)
        **{**dict(judge_options or {}), **({"batching": judge_mode} if judge_mode else {})},
    )
    needing = [s.name for s in chosen if s.needs_model]
    if needing and judge_model is None:
        raise ValueError(
            f"the {', '.join(needing)} metric needs a judge model (CLI: --judge-model, default openai:gpt-4o-mini)"
        )
    if needing and isinstance(judge_model, str):  # a spec: loaded as the CLI loads it (ValueError if malformed)
        from ..llm import default_cache_path, load_chat_model

        judge_model = load_chat_model(judge_model, cache=default_cache_path())
    preds = sorted(read_predictions(run_dir), key=lambda p: question_order(p.question_id))
    if not preds:
        raise ValueError(f"{run_dir / 'predictions.jsonl'} holds no predictions")
    unselected: list[Prediction] = []
    if selection is not None and not selection.is_empty:
        everything, preds = preds, selection.apply(preds, strict=False)
        if not preds:
            raise ValueError(f"{run_dir}: no prediction matches the selection {selection.recorded()}")
        chosen_ids = {p.question_id for p in preds}
        unselected = [p for p in everything if p.question_id not in chosen_ids]
    manifest = read_manifest(run_dir) or Manifest()
    if manifest.retrieval_only:  # no answers were produced: only retrieval can be scored
        chosen = [s for s in chosen if not s.needs_answers]
        if not chosen:
            raise ValueError(f"{run_dir} is a retrieval-only run (no answers): only the evidence metric applies")
    root = Path(data_root) if data_root is not None else manifest.dataset_root()
    gold, mismatches, absent = None, 0, None
    if root is not None:
        # the other questions get the gold their judgments were made against (their own if not in the data)
        preds, gold, mismatches, absent, unselected = _gold_from_dataset(
            preds, root, manifest.split or "all", unselected
        )

    scores = run_dir / "scores"
    selected = {s.name for s in chosen}
    what = f"h2hmem evaluate ({', '.join(sorted(selected))}) since {now_iso()}"
    with RunStore(run_dir).scores_locked(what) as holder:
        if holder is not None:
            raise EvaluationConflictError(
                f"{scores} is being written by another evaluation ({holder}); wait for it to end, then "
                "rerun: what it judged is kept and not paid for again"
            )
        with ScoreSet(scores) as out:
            out.sweep()
            summary = await _score_and_summarize(
                out,
                ScoringContext(
                    run_dir=run_dir,
                    predictions=preds,
                    scores_dir=scores,
                    manifest=manifest,
                    data_root=root,
                    gold_sessions=gold,
                    absent_sessions=absent,
                    n_boot=n_boot,
                    seed=seed,
                    selected=frozenset(selected),
                    model=judge_model if needing else None,
                    judge_options=options,
                    refresh=refresh,
                    show_progress=show_progress,
                    transcripts=run_dir / JUDGE_TRANSCRIPTS if transcripts else None,
                    evidence_labels=evidence_labels,
                    score_set=out,
                    unselected=unselected,
                ),
                chosen,
                known,
                mismatches,
                selection,
            )
            out.commit(summary)
    return summary.model_dump(mode="json")


async def _score_and_summarize(
    out: ScoreSet,
    ctx: ScoringContext,
    chosen: list[Scorer],
    known: Mapping[str, type[Scorer]],
    mismatches: int,
    selection: Any,
) -> ScoresSummary:
    """Run the scorers, stage their files in ``out`` and return the summary of the set (not yet
    committed)."""
    preds, manifest, scores, root = ctx.predictions, ctx.manifest, ctx.scores_dir, ctx.data_root
    chosen_by_name = {s.name: s for s in chosen}
    scorers = [chosen_by_name.get(name) or cls() for name, cls in known.items()]
    fresh: dict[str, Sequence[Record]] = {}
    for scorer in scorers:
        path = scores / scorer.file_name
        applies = not (manifest.retrieval_only and scorer.needs_answers)
        if scorer.name in ctx.selected or (scorer.offline and applies and path.is_file()):
            records = await run_score(scorer, preds, ctx)
        elif path.is_file():
            records = scorer.refresh_kept(preds, ctx)
        else:
            continue
        if records is not None:
            out.stage_lines(scorer.file_name, records)
            fresh[scorer.name] = records
            kept_name = scorer.kept_file_name
            if ctx.unselected and kept_name is not None:  # a selection: what was paid for the others is kept
                outside = scorer.kept_outside(ctx.unselected, ctx)
                if outside or (scores / kept_name).is_file():
                    out.stage_lines(
                        kept_name, sorted(outside, key=lambda r: question_order(getattr(r, "question_id", "")))
                    )

    summary = ScoresSummary(
        created_at=now_iso(),
        preset=ctx.judge_options.preset,
        run=SummaryRun(
            dir=str(ctx.run_dir),
            method=manifest.method,
            model=manifest.model,
            n_predictions=len(preds),
            failed=sum(p.failed for p in preds),
            data_root=str(root) if root is not None else None,
            gold_source="dataset" if root is not None else "predictions",
            gold_mismatches=mismatches,
            retrieval_only=manifest.retrieval_only,
        ),
        metrics=SummaryMetrics(),
    )
    if selection is not None and not selection.is_empty:
        summary.selection = selection.recorded()
    ids = {p.question_id for p in preds}
    done: list[Scorer] = []
    for scorer in scorers:
        path = scores / scorer.file_name
        if scorer.name in fresh:
            lines = fresh[scorer.name]
        elif path.is_file():
            lines = read_score_lines(path, scorer.record_type)
        else:
            continue
        recs = [r.model_dump() for r in lines if getattr(r, "question_id", None) in ids]
        if not recs:
            continue  # none of the scored questions has a line (a judge file of other questions)
        with blamed_on(scorer, "summarize"):
            section = scorer.summarize(recs, ctx)
        summary.metrics.set_section(scorer.name, section)
        done.append(scorer)
    if summary.metrics.judge is not None:
        summary.label = summary.metrics.judge.label
    summary.components = _components(done, ctx, summary)
    summary.environment = capture_environment(
        tuple(sorted({c.distribution for c in summary.components if c.distribution and c.distribution != "h2hmem"}))
    )
    return summary


def evaluate_run(
    run_dir: str | Path,
    metrics: Sequence[str] = ("lexical", "evidence"),
    *,
    data_root: str | Path | None = None,
    judge_model: Any = None,
    judge_mode: JudgeMode | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    refresh: bool = False,
    show_progress: bool = False,
    selection: Any = None,
    preset: str = DEFAULT_PRESET,
    judge_options: Mapping[str, Any] | None = None,
    transcripts: bool = True,
    evidence_labels: str | Path | EvidenceLabels | None = None,
) -> dict[str, Any]:
    """Score ``run_dir`` (sync entry point of :func:`aevaluate_run`, same arguments, returns and errors).

    Without an async scorer (the judge) nothing is awaited, so it also works inside a running event loop.

    Raises:
        InRunningLoopError: the judge is asked for inside a running event loop (a notebook):
            ``await aevaluate_run(...)`` there.
    """
    return run_sync(
        lambda: aevaluate_run(
            run_dir,
            metrics,
            data_root=data_root,
            judge_model=judge_model,
            judge_mode=judge_mode,
            n_boot=n_boot,
            seed=seed,
            refresh=refresh,
            show_progress=show_progress,
            selection=selection,
            preset=preset,
            judge_options=judge_options,
            transcripts=transcripts,
            evidence_labels=evidence_labels,
        ),
        "aevaluate_run",
        loop_free=not any(inspect.iscoroutinefunction(s.score) for s in resolve_scorers(list(metrics))),
    )
