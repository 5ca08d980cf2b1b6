"""Background scoring of uploaded entries: ``queued`` → ``scoring`` → ``scored`` (or ``failed``).

The upload request only validates and stores the files, so the submitter gets a receipt at once;
this worker re-reads the stored files (validation is deterministic), scores them against the
server's gold and stores per-question rows and the summary. Entries left ``queued``/``scoring``
by a stopped server are queued again at start-up.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from ..data import Dataset
from ._db import Entry, QuestionScore
from ._format import MAX_ROWS
from ._scoring import QuestionResult, score_submission, summarise
from ._store import stored_files
from ._validate import SubmissionReport, check_submission
from ._worker import EntryQueue, record_failure

ScoreFn = Callable[[SubmissionReport, Dataset], list[QuestionResult]]


class ScoreWorker(EntryQueue):
    """Scores entries one at a time in a daemon thread (``score`` defaults to :func:`score_submission`)."""

    thread_name = "h2hmem-scorer"

    def __init__(
        self, sessions: sessionmaker, dataset: Dataset, score: ScoreFn | None = None, *, max_rows: int = MAX_ROWS
    ) -> None:
        super().__init__()
        self.sessions = sessions
        self.dataset = dataset
        self.score = score or score_submission
        self.max_rows = max_rows

    def resume(self) -> list[int]:
        """Queue the entries a previous server left ``queued`` or ``scoring``; returns their ids."""
        with self.sessions() as db:
            ids = list(
                db.scalars(select(Entry.id).where(Entry.score_status.in_(("queued", "scoring"))).order_by(Entry.id))
            )
        for i in ids:
            self.submit(i)
        return ids

    def process(self, entry_id: int) -> None:
        with self.sessions() as db:
            entry = db.get(Entry, entry_id)
            if entry is None or entry.score_status == "scored":
                return
            entry.score_status = "scoring"
            db.commit()
            try:
                report = check_submission(stored_files(entry), self.dataset, require_both=True, max_rows=self.max_rows)
                if not report.ok:
                    raise ValueError(f"the stored files no longer validate: {report.errors[0]}")
                results = self.score(report, self.dataset)
                entry.questions = [QuestionScore(**r.model_dump()) for r in results]
                entry.summary = summarise(results)
                entry.score_status, entry.score_error = "scored", ""
                db.commit()
            except Exception as e:
                record_failure(db, entry_id, e, "score_status", "score_error", "scoring")
