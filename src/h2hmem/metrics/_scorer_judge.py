"""The ``judge`` scorer: the LLM judge's 0–1 score of each answer (docs/metric-definitions.md §2).

``scores/judge.jsonl`` holds :class:`~h2hmem.metrics.JudgeRecord` lines, appended the moment each
judgment exists (a crash loses nothing) and compacted at the end of the pass; a judged question is
not judged again unless ``refresh`` or its prediction (or gold) changed. When the judge is not
asked for, its earlier lines whose prediction changed since (``run --retry-failed`` redid the
answer) are dropped, and the section is marked ``"stale": {"missing", "dropped", "reason"}`` while
some predictions have no current judgment (its aggregate then covers the unchanged questions only;
reports never use a stale judge as the headline).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._localio import local_io
from ..llm import record_calls
from ..records import (
    Aggregate,
    JudgeSection,
    MetricSection,
    Prediction,
    TranscriptWriter,
    describe_error,
    prediction_hash,
    read_json_lines,
)
from ._aggregate import aggregate
from ._coverage import unjudged_reasons
from ._judge import JudgeRecord, comparability_label, input_hash, judge_predictions
from ._judge_options import JudgeOptions
from ._scorer import Scorer, ScoringContext

KEPT_JUDGMENTS = "judge.kept.jsonl"
"""``scores/judge.kept.jsonl``: the current judgments of the questions outside the last evaluation's
selection (``judge.jsonl`` covers the selection, as the summary does); a later evaluation reuses
them (:func:`already_judged`), so an evaluation of a subset never throws away a paid judgment."""


def _current(rec: JudgeRecord, p: Prediction) -> bool:
    """Whether a judgment still describes prediction ``p`` (same question/gold/answer, same failure
    state, and — for records that carry it — the same prediction hash)."""
    return (
        rec.input_hash == input_hash(p)
        and rec.failed == p.failed
        and (rec.prediction_hash is None or rec.prediction_hash == prediction_hash(p))
    )


def _judge_records(path: Path) -> list[JudgeRecord]:
    out = []
    for n, r in read_json_lines(path):
        try:
            out.append(JudgeRecord.model_validate(r))
        except ValueError as e:  # one line per field, without pydantic's boilerplate (as for predictions)
            raise ValueError(f"{path}: line {n} is not a judge record: {describe_error(e)}") from None
    return out


def _load_judged(path: Path, spec: str, options: JudgeOptions, refresh: bool) -> dict[str, JudgeRecord]:
    """The last judgment of each question in ``path`` (``scores/judge.jsonl``) under ``options``, and
    for questions it lacks, the judgments by the same judge under the same options kept beside it
    (:data:`KEPT_JUDGMENTS`, written by an evaluation of a selection; lines by another judge there are
    passed over, not refused)."""
    if refresh:
        return {}
    old: dict[str, JudgeRecord] = {}
    if path.is_file():
        for rec in _judge_records(path):
            if rec.judge_model != spec:
                raise ValueError(
                    f"{path} holds judgments by {rec.judge_model!r}, not {spec!r}; "
                    "re-judge everything with refresh (CLI: --refresh-judge) or use another run copy"
                )
            old[rec.question_id] = rec
    kept = path.with_name(KEPT_JUDGMENTS)
    if kept.is_file():
        for rec in _judge_records(kept):
            if rec.judge_model == spec and rec.question_id not in old:
                old[rec.question_id] = rec
    wanted = options.options()
    return {k: r for k, r in old.items() if r.options == wanted}


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


def judging_rounds(preds: list[Prediction], path: Path, spec: str, options: JudgeOptions) -> dict[str, int]:
    """Question id → the round to judge it in (:attr:`~h2hmem.records.JudgeScore.attempt`): one more than
    the last record's in ``path`` when that record left the same answer unjudged under the same judge and
    options (its reply was unusable, or the call failed), else absent (round 0). ``--refresh-judge``
    does not reset it: a refresh that replayed the cached unusable replies would change nothing."""
    try:
        old = _load_judged(path, spec, options, refresh=False)
    except ValueError:  # judgments by another judge (a refresh replaces them): nothing to go on
        return {}
    rounds = {}
    for p in preds:
        rec = old.get(p.question_id)
        if rec is not None and not rec.judged and not rec.failed and _current(rec, p):
            rounds[p.question_id] = rec.attempt + 1
    return rounds


async def _judge(
    todo: list[Prediction],
    model: Any,
    options: JudgeOptions,
    path: Path,
    advance: Callable[[], None],
    transcripts: Path | None,
) -> list[JudgeRecord]:
    attempts = judging_rounds(todo, path, model.spec, options)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:

        def persist(rec: JudgeRecord) -> None:
            with local_io(path):  # a full disk stops the pass (exit 4), never an "unjudged" item
                f.write(rec.model_dump_json() + "\n")
                f.flush()
            advance()

        writer = TranscriptWriter(transcripts).open() if transcripts is not None else None
        try:
            with record_calls(writer.write if writer is not None else None):
                records = await judge_predictions(todo, model, options=options, on_record=persist, attempts=attempts)
            if writer is not None:
                writer.close()
            return records
        except BaseException:
            if writer is not None:  # closed quietly: the error being raised says what failed
                with contextlib.suppress(OSError):
                    writer.close()
            raise
        finally:
            aclose = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()


class JudgeScorer(Scorer):
    """``scores/judge.jsonl``: :func:`~h2hmem.metrics.judge_predictions` under the context's
    :class:`~h2hmem.metrics.JudgeOptions`, with the context's model (needs one)."""

    name = "judge"
    record_type = JudgeRecord
    fields = ("score",)
    section_type = JudgeSection
    needs_model = True
    offline = False
    kept_file_name = KEPT_JUDGMENTS

    def __init__(self) -> None:
        self._stale: dict[str, Any] | None = None
        self._used_model: Any = None

    def options(self, context: ScoringContext) -> dict[str, Any]:
        opts: JudgeOptions = context.judge_options or JudgeOptions()
        return {"preset": opts.preset, **opts.options()}

    def title(self, field_name: str) -> str:
        return "LLM judge score"

    async def score(self, predictions: list[Prediction], context: ScoringContext) -> list[JudgeRecord]:
        model, path = context.model, context.scores_dir / self.file_name
        options: JudgeOptions = context.judge_options or JudgeOptions()
        self._used_model = model
        keep = already_judged(predictions, path, model.spec, options, context.refresh)
        todo = [p for p in predictions if p.question_id not in keep]
        # with refresh the lines on file are ignored, not removed: the new ones are appended after
        # them (the last line of a question wins) and the compacted file replaces the whole file
        # only with the evaluation's other files, so a pass that stops leaves the previous set whole
        new: list[JudgeRecord] = []
        if todo:
            if context.show_progress:
                from rich.progress import Progress

                with Progress(transient=False) as bar:
                    task = bar.add_task(f"judging with {model.spec}", total=len(todo))
                    new = await _judge(todo, model, options, path, lambda: bar.advance(task), context.transcripts)
            else:
                new = await _judge(todo, model, options, path, lambda: None, context.transcripts)
        by_id = {**keep, **{r.question_id: r for r in new}}
        return [by_id[p.question_id] for p in predictions]

    def refresh_kept(self, predictions: list[Prediction], context: ScoringContext) -> list[JudgeRecord] | None:
        """Drop the judgments whose prediction changed (the kept ones are returned to be written,
        None when nothing is dropped) and note the section stale when some predictions are left
        without a current judgment."""
        path = context.scores_dir / self.file_name
        by_id = {p.question_id: p for p in predictions}
        records = _judge_records(path)
        kept = {r.question_id: r for r in records if r.question_id in by_id and _current(r, by_id[r.question_id])}
        missing = len(predictions) - len(kept)
        judged = {r.question_id for r in records if r.question_id in by_id}
        self._stale = (
            None
            if not missing
            else {
                "missing": missing,
                "dropped": len(judged) - len(kept),
                "reason": f"{missing} of {len(predictions)} predictions have no current judgment (they changed "
                "since the judge ran, e.g. `run --retry-failed`, or were never judged); judge them with "
                "`h2hmem evaluate RUN --metrics judge`",
            }
        )
        if len(kept) == len(records):
            return None
        return [kept[p.question_id] for p in predictions if p.question_id in kept]

    def kept_outside(self, others: list[Prediction], context: ScoringContext) -> list[JudgeRecord]:
        """The current judgments of the predictions outside the selection: the last line of each such
        question in ``judge.jsonl``, else in ``judge.kept.jsonl``, when it still describes its prediction
        (judged or not: an unjudged line carries its judging round)."""
        if not others:
            return []
        by_id = {p.question_id: p for p in others}
        last: dict[str, JudgeRecord] = {}
        for name in (KEPT_JUDGMENTS, self.file_name):  # judge.jsonl's line wins
            path = context.scores_dir / name
            if path.is_file():
                last.update({r.question_id: r for r in _judge_records(path) if r.question_id in by_id})
        return [r for q, r in last.items() if _current(r, by_id[q])]

    def summarize(self, records: list[dict[str, Any]], context: ScoringContext) -> MetricSection:
        return JudgeSection.model_validate(
            judge_summary(
                records,
                self._used_model,
                context.n_boot,
                context.seed,
                stale=self._stale,
                total=len(context.predictions),
            )
        )


def judge_summary(
    records: list[dict[str, Any]],
    model: Any,
    n_boot: int,
    seed: int,
    stale: dict[str, Any] | None = None,
    total: int | None = None,
) -> dict[str, Any]:
    """The judge section of ``summary.json`` from the judge lines of the scored questions (schema:
    :class:`~h2hmem.records.JudgeSection`); ``usage`` from ``model`` when it ran in this pass."""
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
        "aggregate": Aggregate.model_validate(aggregate(records, ["score"], n_boot=n_boot, seed=seed)),
    }
