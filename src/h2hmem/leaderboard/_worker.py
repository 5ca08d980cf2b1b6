"""One daemon thread working through entry ids from a queue (the scorer and the judge use it)."""

from __future__ import annotations

import logging
import queue
import threading

from sqlalchemy.orm import Session

from ._db import Entry

log = logging.getLogger(__name__)
MAX_ERROR_CHARS = 2000
"""Longest error text kept on an entry."""


def record_failure(db: Session, entry_id: int, exc: Exception, state_field: str, error_field: str, what: str) -> None:
    """Undo the failed work and mark the entry: ``state_field = "failed"``, ``error_field`` = the
    error's type and message (shown to administrators); the traceback goes to the log. Commits."""
    log.exception("%s failed for entry %s", what, entry_id)
    db.rollback()
    entry = db.get(Entry, entry_id)
    if entry is not None:
        setattr(entry, state_field, "failed")
        setattr(entry, error_field, f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS])
    db.commit()


class EntryQueue:
    """Entry ids handled one at a time by :meth:`process` in a daemon thread started on first use.

    Subclasses implement :meth:`process` (record their own failures on the entry) and may
    implement :meth:`close` (called in the worker thread when it stops).
    """

    thread_name = "h2hmem-worker"

    def __init__(self) -> None:
        self.queue: queue.Queue[int | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def submit(self, entry_id: int) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
                self.thread.start()
        self.queue.put(entry_id)

    def wait_idle(self, timeout_s: float = 60.0) -> bool:
        """Wait until every submitted id was processed; False when ``timeout_s`` passed first."""
        with self.queue.all_tasks_done:
            return self.queue.all_tasks_done.wait_for(lambda: self.queue.unfinished_tasks == 0, timeout_s)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop after the current entry (waits at most ``timeout_s``; the thread is a daemon)."""
        with self.lock:
            thread, self.thread = self.thread, None
        if thread is not None:
            self.queue.put(None)
            thread.join(timeout_s)

    def process(self, entry_id: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _loop(self) -> None:
        try:
            while (entry_id := self.queue.get()) is not None:
                try:
                    self.process(entry_id)
                except Exception:
                    log.exception("%s: entry %s", self.thread_name, entry_id)
                finally:
                    self.queue.task_done()
            self.queue.task_done()
        finally:
            self.close()
