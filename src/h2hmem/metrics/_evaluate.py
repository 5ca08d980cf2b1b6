"""``evaluate_run``: score a run directory and write ``scores/*.jsonl`` and ``scores/summary.json``.

Files (one JSON object per line, one line per question id, in question order):

- ``scores/lexical.jsonl``: ``question_id, split, task_type, main_category, difficulty, dialogue,
  precision, recall, f1, bleu1, exact_match, failed, prediction_hash``;
- ``scores/evidence.jsonl``: see :func:`~h2hmem.metrics.score_evidence`, plus ``prediction_hash``;
- ``scores/turn_evidence.jsonl``: turn recall/precision/nDCG@k and MRR against supporting-turn
  labels (:func:`~h2hmem.metrics.score_turn_evidence`), written with ``"evidence"`` when labels
  are given or found next to the dataset (:func:`~h2hmem.metrics.find_evidence_labels`);
- ``scores/judge.jsonl``: :class:`~h2hmem.metrics.JudgeRecord` lines, appended the moment each
  judgment exists (a crash loses nothing) and compacted at the end; a judged question is not
  judged again unless ``refresh`` or its prediction (or gold) changed;
- ``scores/summary.json`` (:class:`h2hmem.records.ScoresSummary`; JSON Schema
  ``docs/schemas/scores-summary.schema.json``)::

    {"schema": "h2hmem.scores-summary/1", "created_at": ISO time, "preset": "paper" | "harmonized",
     "run": {"dir", "method", "model", "n_predictions", "failed", "data_root", "gold_source",
             "gold_mismatches"},
     "label": null | "not comparable with published numbers",
     "metrics": {
       "lexical":  {"fields": [...], "aggregate": AGG},
       "evidence": {"status": "ok" | "n/a", "reason", "excluded": {reason: n}, "fields": [...],
                    "aggregate": AGG | null},
       "turn_evidence": {"status", "reason", "excluded": {reason: n}, "labelled": n, "labels": source,
                         "labels_meta": {...}, "fields": [...], "aggregate": AGG | null},
       "judge":    {"model", "mode", "preset", "options": {judge_format, score_levels, batching}, "label",
                    "coverage": {"judged", "total", "errors", "failed_answers", "reasons": {reason: n}},
                    "stale": null | {"missing", "dropped", "reason"},
                    "usage": {...} | null, "fields": ["score"], "aggregate": AGG}}}

  where AGG is the output of :func:`~h2hmem.metrics.aggregate` (schema in its module).

Scores follow the predictions. Every score line records the :func:`~h2hmem.run.prediction_hash`
of the prediction it scored. Lexical and evidence scores present in ``scores/`` are recomputed on
every call (offline, cheap), asked for or not. The judge is only called when ``"judge"`` is in
``metrics``; otherwise its earlier lines whose prediction changed since (``run --retry-failed``
redid the answer) are dropped from ``judge.jsonl``, and when that leaves predictions without a
current judgment the judge section is kept but marked ``"stale": {"missing", "reason"}`` (its
aggregate covers the unchanged questions only): reports never use a stale judge as the headline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .._aio import run_sync
from .._atomic import atomic_write_text
from ..data import load_dataset
from ..llm import record_calls
from ..presets import DEFAULT_PRESET, Preset
from ..records import (
    Aggregate,
    EvidenceScore,
    EvidenceSection,
    JudgeSection,
    LexicalScore,
    LexicalSection,
    Manifest,
    ScoreRecord,
    ScoresSummary,
    SummaryMetrics,
    SummaryRun,
    TurnEvidenceScore,
    TurnEvidenceSection,
    read_json_lines,
    read_score_lines,
    write_score_lines,
    write_scores_summary,
)
from ..run import JUDGE_TRANSCRIPTS, Prediction, RunStore, TranscriptWriter, now_iso, prediction_hash, read_predictions
from ._aggregate import DEFAULT_N_BOOT, aggregate
from ._coverage import unjudged_reasons
from ._evidence import EVIDENCE_KS, evidence_metric_names, score_evidence
from ._judge import JudgeRecord, comparability_label, input_hash, judge_predictions
from ._judge_options import JUDGE_OPTION_NAMES, JudgeMode, JudgeOptions
from ._labels import EvidenceLabels, find_evidence_labels, load_evidence_labels
from ._lexical import ZERO, lexical_scores
from ._turn_evidence import score_turn_evidence, turn_metric_names

METRICS: tuple[str, ...] = ("lexical", "evidence", "judge")
LEXICAL_FIELDS: tuple[str, ...] = ("f1", "bleu1", "exact_match", "precision", "recall")
_LABELS = ("split", "task_type", "main_category", "difficulty", "dialogue")
_DIGITS = re.compile(r"\d+")


def question_order(qid: str) -> tuple:
    """Sort key of a question id ``split/dialogue/session/qN``: the split, then the numbers in the other
    parts (``D10`` after ``D9``), then the id itself."""
    parts = qid.split("/")
    return (parts[0], *[int(m.group()) if (m := _DIGITS.search(x)) else 0 for x in parts[1:]], qid)


def _write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), fsync=True)


def read_score_file(path: Path) -> list[dict[str, Any]]:
    """Records of a scores file (``scores/*.jsonl``); a torn last line is ignored.

    Raises:
        ValueError: any other line is not valid JSON (the message names the file and line).
    """
    return [r for _, r in read_json_lines(path)]


def _labels(p: Prediction) -> dict[str, Any]:
    return {"question_id": p.question_id, **{k: getattr(p, k) for k in _LABELS}}


def _gold_from_dataset(preds: list[Prediction], root: Path, split: str) -> tuple[list[Prediction], dict, int, dict]:
    """Replace each prediction's gold and labels by the dataset's (joined by question id); also
    return the absent sessions of each dialogue (``"<split>/<dialogue>"`` → names)."""
    ds = load_dataset(root, split if split in ("dyadic", "multi-party") else "all", strict=False)
    absent = {d.id: {s.name for s in d.sessions if s.absent} for d in ds.dialogues}
    by_id = {q.id: q for q in ds.questions}
    out, gold, mismatches = [], {}, 0
    for p in preds:
        q = by_id.get(p.question_id)
        if q is None:
            raise ValueError(f"question id {p.question_id!r} of the run is not in the dataset at {root}")
        mismatches += p.gold.strip() != q.gold.strip()
        out.append(
            p.model_copy(
                update={
                    "gold": q.gold,
                    "task_type": q.task_type.abbr,
                    "main_category": q.main_category.value,
                    "difficulty": q.difficulty,
                }
            )
        )
        gold[q.id] = list(q.answer_sessions)
    return out, gold, mismatches, absent


def _resolve_labels(
    labels: str | Path | EvidenceLabels | None, root: Path | None, info_path: Path
) -> EvidenceLabels | None:
    """Labels given (a path or loaded), else those found next to the dataset root, else those an
    earlier call used (``turn_evidence.info.json``) when they still exist, else None."""
    if isinstance(labels, EvidenceLabels):
        return labels
    if labels is not None:
        return load_evidence_labels(labels)
    found = find_evidence_labels(root) if root is not None else None
    if found is None and info_path.is_file():
        source = json.loads(info_path.read_text(encoding="utf-8")).get("labels")
        found = Path(source) if source and Path(source).exists() else None
    return load_evidence_labels(found) if found is not None else None


def _lexical(preds: list[Prediction]) -> list[LexicalScore]:
    out = []
    for p in preds:
        s = ZERO if p.failed else lexical_scores(p.answer or "", p.gold)
        out.append(LexicalScore(**_labels(p), **s.model_dump(), failed=p.failed, prediction_hash=prediction_hash(p)))
    return out


def _score_dicts(path: Path, record_type: type[ScoreRecord], ids: set[str]) -> list[dict[str, Any]]:
    """The lines of a scores file (validated as ``record_type``) of the questions ``ids``, as
    :func:`aggregate` takes them (file spelling of the metric keys)."""
    return [r.model_dump() for r in read_score_lines(path, record_type) if r.question_id in ids]


def _current(rec: JudgeRecord, p: Prediction) -> bool:
    """Whether a judgment still describes prediction ``p`` (same question/gold/answer, same failure
    state, and — for records that carry it — the same prediction hash)."""
    return (
        rec.input_hash == input_hash(p)
        and rec.failed == p.failed
        and (rec.prediction_hash is None or rec.prediction_hash == prediction_hash(p))
    )


def _drop_changed_judgments(preds: list[Prediction], path: Path) -> dict[str, Any] | None:
    """Without a judge call: drop the judgments of ``path`` whose prediction changed (file rewritten)
    and return the stale note when some predictions are left without a current judgment."""
    by_id = {p.question_id: p for p in preds}
    records = _judge_records(path)
    kept = {r.question_id: r for r in records if r.question_id in by_id and _current(r, by_id[r.question_id])}
    if len(kept) != len(records):
        _write_jsonl(path, [kept[p.question_id].model_dump(mode="json") for p in preds if p.question_id in kept])
    missing = len(preds) - len(kept)
    if not missing:
        return None
    return {
        "missing": missing,
        "dropped": len(records) - len(kept),
        "reason": f"{missing} of {len(preds)} predictions have no current judgment (they changed since the "
        "judge ran, e.g. `run --retry-failed`, or were never judged); judge them with "
        "`h2hmem evaluate RUN --metrics judge`",
    }


def _judge_records(path: Path) -> list[JudgeRecord]:
    out = []
    for i, r in enumerate(read_score_file(path)):
        try:
            out.append(JudgeRecord.model_validate(r))
        except ValueError as e:
            raise ValueError(f"{path}: record {i + 1} is not a judge record ({e})") from None
    return out


def _load_judged(path: Path, spec: str, options: JudgeOptions, refresh: bool) -> dict[str, JudgeRecord]:
    if refresh or not path.is_file():
        return {}
    old = {}
    for rec in _judge_records(path):
        if rec.judge_model != spec:
            raise ValueError(
                f"{path} holds judgments by {rec.judge_model!r}, not {spec!r}; "
                "re-judge everything with refresh (CLI: --refresh-judge) or use another run copy"
            )
        old[rec.question_id] = rec
    wanted = options.options()
    return {k: r for k, r in old.items() if r.options == wanted}


async def _judge(
    todo: list[Prediction],
    model: Any,
    options: JudgeOptions,
    path: Path,
    advance: Callable[[], None],
    transcripts: Path | None,
) -> list[JudgeRecord]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:

        def persist(rec: JudgeRecord) -> None:
            f.write(rec.model_dump_json() + "\n")
            f.flush()
            advance()

        writer = TranscriptWriter(transcripts).open() if transcripts is not None else None
        try:
            with record_calls(writer.write if writer is not None else None):
                return await judge_predictions(todo, model, options=options, on_record=persist)
        finally:
            if writer is not None:
                writer.close()
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()


def already_judged(
    preds: list[Prediction], path: Path, spec: str, options: JudgeOptions, refresh: bool
) -> dict[str, JudgeRecord]:
    """Judgments in ``path`` that still hold for ``preds`` (same judge and resolved options, and :func:`_current`)."""
    old = _load_judged(path, spec, options, refresh)
    return {
        p.question_id: old[p.question_id]
        for p in preds
        if p.question_id in old and old[p.question_id].judged and _current(old[p.question_id], p)
    }


async def _run_judge(
    preds: list[Prediction],
    model: Any,
    options: JudgeOptions,
    path: Path,
    refresh: bool,
    show_progress: bool,
    transcripts: Path | None,
) -> list[JudgeRecord]:
    keep = already_judged(preds, path, model.spec, options, refresh)
    todo = [p for p in preds if p.question_id not in keep]
    if refresh and path.exists():  # noqa: ASYNC240 — once per scoring pass
        path.unlink()  # noqa: ASYNC240
    new: list[JudgeRecord] = []
    if todo:
        if show_progress:
            from rich.progress import Progress

            with Progress(transient=False) as bar:
                task = bar.add_task(f"judging with {model.spec}", total=len(todo))
                new = await _judge(todo, model, options, path, lambda: bar.advance(task), transcripts)
        else:
            new = await _judge(todo, model, options, path, lambda: None, transcripts)
    by_id = {**keep, **{r.question_id: r for r in new}}
    records = [by_id[p.question_id] for p in preds]
    _write_jsonl(path, [r.model_dump(mode="json") for r in records])
    return records


def _evidence_info(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """The status part of the evidence summary, rebuilt from an existing ``evidence.jsonl``."""
    excluded: dict[str, int] = {}
    for r in recs:
        if r["excluded"]:
            excluded[r["excluded"]] = excluded.get(r["excluded"], 0) + 1
    ok = any(r["n_evidence"] for r in recs)
    return {
        "status": "ok" if ok else "n/a",
        "reason": None if ok else "the method reports no evidence units",
        "excluded": excluded,
        "gold_source": "file",
    }


def _judge_summary(
    records: list[dict[str, Any]],
    model: Any,
    n_boot: int,
    seed: int,
    stale: dict[str, Any] | None = None,
    total: int | None = None,
) -> dict[str, Any]:
    specs = sorted({r["judge_model"] for r in records})
    modes = sorted({r["mode"] for r in records})
    presets = sorted({str(r.get("preset")) for r in records})
    option_sets = {json.dumps(r.get("options") or {}, sort_keys=True) for r in records}
    spec = specs[0] if len(specs) == 1 else ", ".join(specs)
    label = comparability_label(spec) if len(specs) == 1 else None
    usage = None
    if model is not None and hasattr(model, "usage_by_stage"):
        judge_usage = model.usage_by_stage().get("judge")
        usage = judge_usage.model_dump() if judge_usage is not None else None
    return {
        "model": spec,
        "mode": ", ".join(modes),
        "preset": ", ".join(presets),
        "options": json.loads(option_sets.pop()) if len(option_sets) == 1 else "mixed",
        "label": label,
        "coverage": {
            "judged": sum(r["score"] is not None for r in records),
            "total": len(records) if total is None else total,
            "errors": sum(r["score"] is None for r in records),
            "failed_answers": sum(bool(r["failed"]) for r in records),
            "reasons": unjudged_reasons(records),
        },
        "stale": stale,
        "usage": usage,
        "fields": ["score"],
        "aggregate": aggregate(records, ["score"], n_boot=n_boot, seed=seed),
    }


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
        metrics: any of ``"lexical"``, ``"evidence"``, ``"judge"``.
        data_root: dataset root for gold answers, labels and gold sessions (joined by question
            id; preferred). Default: the manifest's ``data_root`` when it exists on disk, else the
            copies in the prediction records.
        judge_model: a :class:`~h2hmem.llm.ChatModel` (needed for ``"judge"``; the CLI builds
            ``openai:gpt-4o-mini``, the official judge).
        judge_mode: the ``batching`` option: ``"session"`` (official batching, both presets) or
            ``"question"``; overrides ``judge_options``.
        n_boot: bootstrap resamples for the 95% CIs (default 1,000, spec §3).
        seed: bootstrap seed.
        refresh: re-judge questions already judged in ``scores/judge.jsonl``.
        show_progress: show a rich progress bar while judging.
        selection: a :class:`~h2hmem.run.Selection`: score only those predictions (recorded as
            the summary's ``selection``; the ``scores/`` files then cover only them).
        transcripts: append every judge call to ``RUN_DIR/transcripts-judge.jsonl.gz``
            (format: :mod:`h2hmem.run._transcripts`).
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
        ValueError: unknown metric, preset or judge option, no predictions, a bad record, a question id missing from
            the dataset, ``"judge"`` without a model, or a judge file written by another judge.
    """
    run_dir = Path(run_dir)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {list(METRICS)}")
    unknown_opts = sorted(set(judge_options or {}) - set(JUDGE_OPTION_NAMES))
    if unknown_opts:
        raise ValueError(f"unknown judge option(s) {unknown_opts}; choose from {list(JUDGE_OPTION_NAMES)}")
    options = JudgeOptions(
        preset=cast(Preset, preset),  # validated by JudgeOptions (ValueError on an unknown preset)
        **{**dict(judge_options or {}), **({"batching": judge_mode} if judge_mode else {})},
    )
    if "judge" in metrics and judge_model is None:
        raise ValueError("the judge metric needs a judge model (CLI: --judge-model, default openai:gpt-4o-mini)")
    preds = sorted(read_predictions(run_dir), key=lambda p: question_order(p.question_id))
    if not preds:
        raise ValueError(f"{run_dir / 'predictions.jsonl'} holds no predictions")
    if selection is not None and not selection.is_empty:
        preds = selection.apply(preds, strict=False)
        if not preds:
            raise ValueError(f"{run_dir}: no prediction matches the selection {selection.recorded()}")
    manifest = RunStore(run_dir).read_manifest() or Manifest()
    if manifest.retrieval_only:  # no answers were produced: only retrieval can be scored
        metrics = [m for m in metrics if m == "evidence"]
        if not metrics:
            raise ValueError(f"{run_dir} is a retrieval-only run (no answers): only the evidence metric applies")
    root = Path(data_root) if data_root is not None else manifest.dataset_root()
    gold, mismatches, absent = None, 0, None
    if root is not None:
        preds, gold, mismatches, absent = _gold_from_dataset(preds, root, manifest.split or "all")

    scores = run_dir / "scores"
    scores.mkdir(parents=True, exist_ok=True)
    # offline scores already in scores/ are recomputed too: no line may describe an older prediction
    if "lexical" in metrics or (scores / "lexical.jsonl").is_file():
        write_score_lines(scores / "lexical.jsonl", _lexical(preds))
    evidence_info = None
    if "evidence" in metrics or (scores / "evidence.jsonl").is_file():
        ev_records, evidence_info = score_evidence(preds, gold, absent=absent)
        hashes = {p.question_id: prediction_hash(p) for p in preds}
        write_score_lines(
            scores / "evidence.jsonl",
            [EvidenceScore.model_validate({**r, "prediction_hash": hashes[r["question_id"]]}) for r in ev_records],
        )
    turn_info = None
    info_path = scores / "turn_evidence.info.json"
    if "evidence" in metrics or (scores / "turn_evidence.jsonl").is_file():
        labels = _resolve_labels(evidence_labels, root, info_path)
        if labels is not None:
            turn_records, turn_info = score_turn_evidence(preds, labels.labels)
            turn_info.update(labels=labels.source, labels_meta=labels.meta)
            hashes = {p.question_id: prediction_hash(p) for p in preds}
            write_score_lines(
                scores / "turn_evidence.jsonl",
                [
                    TurnEvidenceScore.model_validate({**r, "prediction_hash": hashes[r["question_id"]]})
                    for r in turn_records
                ],
            )
            atomic_write_text(info_path, json.dumps(turn_info, ensure_ascii=False, indent=1))
    judge_stale = None
    if "judge" in metrics:
        await _run_judge(
            preds,
            judge_model,
            options,
            scores / "judge.jsonl",
            refresh,
            show_progress,
            run_dir / JUDGE_TRANSCRIPTS if transcripts else None,
        )
    elif (scores / "judge.jsonl").is_file():
        judge_stale = _drop_changed_judgments(preds, scores / "judge.jsonl")

    summary = ScoresSummary(
        created_at=now_iso(),
        preset=options.preset,
        run=SummaryRun(
            dir=str(run_dir),
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
    if (scores / "lexical.jsonl").is_file():
        recs = _score_dicts(scores / "lexical.jsonl", LexicalScore, ids)
        summary.metrics.lexical = LexicalSection(
            fields=list(LEXICAL_FIELDS),
            aggregate=Aggregate.model_validate(aggregate(recs, LEXICAL_FIELDS, n_boot=n_boot, seed=seed)),
        )
    if (scores / "evidence.jsonl").is_file():
        recs = _score_dicts(scores / "evidence.jsonl", EvidenceScore, ids)
        if evidence_info is None:
            evidence_info = _evidence_info(recs)
        fields = evidence_metric_names(EVIDENCE_KS)
        included = [r for r in recs if not r["excluded"]]
        summary.metrics.evidence = EvidenceSection(
            **evidence_info,
            fields=fields,
            aggregate=Aggregate.model_validate(aggregate(included, fields, n_boot=n_boot, seed=seed))
            if evidence_info["status"] == "ok"
            else None,
        )
    if (scores / "turn_evidence.jsonl").is_file():
        recs = _score_dicts(scores / "turn_evidence.jsonl", TurnEvidenceScore, ids)
        if turn_info is None and info_path.is_file():
            turn_info = json.loads(info_path.read_text(encoding="utf-8"))
        turn_info = turn_info or {"status": "ok", "reason": None, "excluded": {}}
        fields = turn_metric_names()
        included = [r for r in recs if not r["excluded"]]
        summary.metrics.turn_evidence = TurnEvidenceSection(
            **turn_info,
            fields=fields,
            aggregate=Aggregate.model_validate(aggregate(included, fields, n_boot=n_boot, seed=seed))
            if turn_info["status"] == "ok" and included
            else None,
        )
    if (scores / "judge.jsonl").is_file():
        recs = [r for r in read_score_file(scores / "judge.jsonl") if r["question_id"] in ids]
        if recs:
            summary.metrics.judge = JudgeSection(
                **_judge_summary(
                    recs, judge_model if "judge" in metrics else None, n_boot, seed, stale=judge_stale, total=len(preds)
                )
            )
            summary.label = summary.metrics.judge.label
    write_scores_summary(run_dir, summary)
    return summary.model_dump(mode="json")


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

    Without the ``"judge"`` metric nothing is awaited, so it also works inside a running event loop.

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
        loop_free="judge" not in metrics,
    )
