"""The LLM judge of leaderboard entries, run in one background thread.

An entry is queued when an administrator approves it (judging costs money: spam never reaches
the judge) and the service has a judge. The worker scores every answered question through a
:data:`JudgeFn`; a question with no answer scores 0 without a call (the rubric's "no answer",
docs/metric-definitions.md §2). Items the judge could not score stay unjudged and lower ``judge_coverage``
(judged / answered questions). The entry's ``judge_status`` says what happened to the answered
questions: ``done`` (every one scored), ``partial`` (some unscored) or ``failed`` (none scored, or the
pass raised), with the counts and the commonest reason in ``judge_error``.
Entries still ``queued``/``running`` when the server stopped are queued again at start-up.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from ..data import Dataset, Question
from ..llm import ChatModel
from ..presets import DEFAULT_PRESET, Preset
from ..records import Prediction
from ._db import Entry, QuestionScore
from ._store import refresh_summary
from ._worker import EntryQueue, record_failure


class JudgeVerdict(BaseModel):
    question_id: str
    score: float | None
    """One of 0, 0.25, 0.5, 0.75, 1; None when the judge gave no valid score."""
    reasoning: str = ""


JudgeFn = Callable[[list[Prediction]], list[JudgeVerdict]]
"""Judges predictions (question, gold, system answer; ``method`` is always empty so the judge
never sees the entry's name); at most one verdict per prediction (a missing one = unjudged)."""


class MetricsJudge:
    """A :data:`JudgeFn` running :func:`h2hmem.metrics.judge_predictions` (the five-level rubric,
    session batches, single re-asks; the model's cache and retries) on an event loop owned by the
    one thread that calls it; :meth:`close` (same thread) closes the model.

    ``preset``: the judge protocol (:class:`h2hmem.metrics.JudgeOptions`): ``paper`` (default)
    sends the official judge request, as the published table was scored; ``harmonized`` the
    strict judge (an off-level score stays unjudged)."""

    def __init__(self, model: ChatModel, preset: Preset = DEFAULT_PRESET) -> None:
        self.model = model
        self.preset = preset
        self.loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, preds: list[Prediction]) -> list[JudgeVerdict]:
        from ..metrics import JudgeOptions, judge_predictions

        self.loop = self.loop or asyncio.new_event_loop()
        records = self.loop.run_until_complete(
            judge_predictions(preds, self.model, options=JudgeOptions(preset=self.preset))
        )
        return [
            JudgeVerdict(question_id=r.question_id, score=r.score, reasoning=r.reasoning or (r.error or ""))
            for r in records
        ]

    def close(self) -> None:
        if self.loop is not None:
            aclose = getattr(self.model, "aclose", None)
            if aclose is not None:
                self.loop.run_until_complete(aclose())
            self.loop.close()
            self.loop = None


def _prediction(q: Question, answer: str) -> Prediction:
    return Prediction(
        question_id=q.id,
        split=q.split,
        dialogue=q.dialogue,
        session=q.session,
        task_type=q.task_type.abbr,
        main_category=q.main_category.value,
        difficulty=q.difficulty,
        question=q.text,
        question_images=[i.key for i in q.images],
        gold=q.gold,
        answer=answer,
    )


def judge_outcome(answered: list[QuestionScore]) -> tuple[str, str]:
    """``(judge_status, judge_error)`` of a judge pass over the ``answered`` questions' rows:
    ``("done", "")`` when every one has a score (or there was none to judge), else ``"partial"`` or
    ``"failed"`` (none scored) with ``"judged K of N answered questions; U unjudged (reason: …)"``."""
    unjudged = [qs for qs in answered if qs.judge_score is None]
    if not unjudged:
        return "done", ""
    reasons = Counter((qs.judge_reasoning or "no verdict").strip()[:200] for qs in unjudged)
    top, n_top = reasons.most_common(1)[0]
    n, k = len(answered), len(answered) - len(unjudged)
    message = (
        f"judged {k} of {n} answered questions; {len(unjudged)} unjudged "
        f"(commonest reason, {n_top}×: {top}); run the judge again once the cause is fixed"
    )
    return ("partial" if k else "failed"), message


class JudgeWorker(EntryQueue):
    """Runs a judge over entries, one at a time, in a daemon thread fed by a queue (a server
    stopping mid-entry leaves it ``running``; :meth:`resume` queues it again on the next start).

    ``model`` and ``preset`` (the judge model spec and judge preset behind ``judge``) are recorded
    with every entry it judges (``Entry.judge_model``, ``Entry.judge_preset``)."""

    thread_name = "h2hmem-judge"

    def __init__(
        self, sessions: sessionmaker, dataset: Dataset, judge: JudgeFn, model: str, preset: Preset = DEFAULT_PRESET
    ) -> None:
        super().__init__()
        self.sessions = sessions
        self.gold = {q.id: q for q in dataset.questions}
        self.judge = judge
        self.model = model
        self.preset = preset

    def enqueue(self, entry_id: int) -> None:
        """Mark the entry ``queued`` and hand it to the worker thread (started on first use)."""
        with self.sessions() as db:
            entry = db.get(Entry, entry_id)
            if entry is None:
                return
            entry.judge_status, entry.judge_model, entry.judge_error = "queued", self.model, ""
            entry.judge_preset = self.preset
            db.commit()
        self.submit(entry_id)

    def resume(self) -> list[int]:
        """Queue again the entries a previous server left ``queued`` or ``running``; returns their ids."""
        with self.sessions() as db:
            ids = list(db.scalars(select(Entry.id).where(Entry.judge_status.in_(("queued", "running")))))
        for i in ids:
            self.enqueue(i)
        return ids

    def close(self) -> None:
        close = getattr(self.judge, "close", None)
        if close is not None:
            close()

    def process(self, entry_id: int) -> None:
        self._run(entry_id)

    def _run(self, entry_id: int) -> None:
        with self.sessions() as db:
            entry = db.get(Entry, entry_id)
            if entry is None:
                return
            entry.judge_status = "running"
            db.commit()
            try:
                items, rows = [], {}
                for qs in entry.questions:
                    rows[qs.question_id] = qs
                    q = self.gold.get(qs.question_id)
                    qs.judge_score, qs.judge_reasoning = None, None
                    if not qs.system_answer.strip():
                        qs.judge_score, qs.judge_reasoning = 0.0, "no answer"
                    elif q is not None:
                        items.append(_prediction(q, qs.system_answer))
                for v in self.judge(items) if items else []:
                    qs = rows.get(v.question_id)
                    if qs is not None:
                        qs.judge_score, qs.judge_reasoning = v.score, v.reasoning
                refresh_summary(entry)
                entry.judge_status, entry.judge_error = judge_outcome([rows[p.question_id] for p in items])
                db.commit()
            except Exception as e:
                record_failure(db, entry_id, e, "judge_status", "judge_error", "judge")
