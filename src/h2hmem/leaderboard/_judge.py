"""The LLM judge of leaderboard entries, run in one background thread.

An entry is queued when an administrator approves it (judging costs money: spam never reaches
the judge) and the service has a judge. The worker scores every answered question through a
:data:`JudgeFn`; a question with no answer scores 0 without a call (the rubric's "no answer",
spec/metrics.md §2). Items the judge could not score stay unjudged and lower ``judge_coverage``.
Entries still ``queued``/``running`` when the server stopped are queued again at start-up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from ..data import Dataset, Question
from ..llm import ChatModel
from ..run import Prediction
from ._db import Entry
from ._store import refresh_summary

log = logging.getLogger(__name__)


class JudgeVerdict(BaseModel):
    question_id: str
    score: float | None
    """One of 0, 0.25, 0.5, 0.75, 1; None when the judge gave no valid score."""
    reasoning: str = ""


JudgeFn = Callable[[list[Prediction]], list[JudgeVerdict]]
"""Judges predictions (question, gold, system answer; ``method`` is always empty so the judge
never sees the entry's name); at most one verdict per prediction (a missing one = unjudged)."""


def metrics_judge(model: ChatModel) -> JudgeFn:
    """A :data:`JudgeFn` running :func:`h2hmem.metrics.judge_predictions` (official rubric,
    session batches, strict parsing, single re-asks; model cache and retries) on one event loop
    owned by the calling thread."""
    from ..metrics import judge_predictions

    loops: dict[int, asyncio.AbstractEventLoop] = {}

    def run(preds: list[Prediction]) -> list[JudgeVerdict]:
        loop = loops.setdefault(threading.get_ident(), asyncio.new_event_loop())
        records = loop.run_until_complete(judge_predictions(preds, model))
        return [JudgeVerdict(question_id=r.question_id, score=r.score, reasoning=r.reasoning or (r.error or ""))
                for r in records]

    return run


def _prediction(q: Question, answer: str) -> Prediction:
    return Prediction(
        question_id=q.id, split=q.split, dialogue=q.dialogue, session=q.session, task_type=q.task_type.abbr,
        main_category=q.main_category.value, difficulty=q.difficulty, question=q.text,
        question_images=[i.key for i in q.images], gold=q.gold, answer=answer,
    )


MAX_JUDGE_ERROR_CHARS = 2000


class JudgeWorker:
    """Runs :data:`JudgeFn` over entries, one entry at a time, in a daemon thread."""

    def __init__(self, sessions: sessionmaker, dataset: Dataset, judge: JudgeFn, model: str) -> None:
        self.sessions = sessions
        self.gold = {q.id: q for q in dataset.questions}
        self.judge = judge
        self.model = model
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="h2hmem-judge")

    def enqueue(self, entry_id: int) -> Future:
        with self.sessions() as db:
            entry = db.get(Entry, entry_id)
            if entry is not None:
                entry.judge_status, entry.judge_model, entry.judge_error = "queued", self.model, ""
                db.commit()
        return self.pool.submit(self._run, entry_id)

    def resume(self) -> list[Future]:
        """Queue again the entries a previous server left ``queued`` or ``running``."""
        with self.sessions() as db:
            ids = list(db.scalars(select(Entry.id).where(Entry.judge_status.in_(("queued", "running")))))
        return [self.enqueue(i) for i in ids]

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

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
                entry.judge_status = "done"
            except Exception as e:  # noqa: BLE001 - any judge failure is recorded on the entry, shown to admins
                log.exception("judge failed for entry %s", entry_id)
                db.rollback()
                entry = db.get(Entry, entry_id)
                entry.judge_status = "failed"
                entry.judge_error = f"{type(e).__name__}: {e}"[:MAX_JUDGE_ERROR_CHARS]
            db.commit()
