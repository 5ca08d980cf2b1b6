"""The error for a failure of the harness's *own* files: predictions, transcripts, manifest, scores,
caches, the run store.

A model that fails is the model's problem and is recorded per question; a disk that is full, a
file-size limit (``ulimit -f``) or an I/O error on the machine running h2hmem is not a property of
any question. Such a failure stops the command at once (the CLI exits with code 4) instead of being
recorded as a failed answer, and leaves what was already written readable, so the same command
resumes once space is freed. Bottom-layer module (standard library only).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCAL_IO_EXIT_CODE = 4
"""Exit code of ``h2hmem run`` / ``h2hmem evaluate`` when they stop on a :class:`LocalIOError`."""


class LocalIOError(OSError):
    """Writing (or reading back) one of the harness's own files failed: ENOSPC, EFBIG, EIO, a
    SQLite ``disk I/O error``, ….

    ``path`` is the file; ``reason`` the underlying error (``"[Errno 27] File too large"``). The
    message reads ``local I/O error: <file>: <reason>; free space and rerun to resume`` (for a
    read-only file system: ``make the folder writable …``; an I/O error: ``check the disk …``). A subclass
    of :class:`OSError` (``errno`` is copied from the cause when it has one), so code that handles
    OS errors still sees it.
    """

    def __init__(self, path: str | os.PathLike[str], reason: BaseException | str):
        self.path = Path(path)
        self.reason = _describe(reason)
        errno = reason.errno if isinstance(reason, OSError) else None
        super().__init__(errno, self.reason, str(self.path))

    def __str__(self) -> str:
        return f"local I/O error: {self.path}: {self.reason}; {self.remedy} and rerun to resume"

    @property
    def remedy(self) -> str:
        """What to do before rerunning: depends on the cause (a read-only file system is not full)."""
        if self.errno == errno.EROFS:
            return "make the folder writable (the file system is read-only)"
        if self.errno in (errno.EACCES, errno.EPERM):
            return "make the folder writable"
        if self.errno == errno.EIO or "disk I/O error" in self.reason:
            return "check the disk"
        return "free space"

    def __reduce__(self):  # picklable across processes (sweeps) with the same arguments
        return (type(self), (self.path, self.reason))


def _describe(reason: BaseException | str) -> str:
    if isinstance(reason, str):
        return reason
    if isinstance(reason, OSError) and reason.strerror:
        return f"[Errno {reason.errno}] {reason.strerror}" if reason.errno else reason.strerror
    return f"{type(reason).__name__}: {reason}" if isinstance(reason, sqlite3.Error) else str(reason)


DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO})
"""``errno`` values that are always the local machine's disk (full, file-size limit, quota,
read-only, I/O error), wherever they are raised: never the fault of a question or a model."""


def disk_error(exc: BaseException, where: str | os.PathLike[str]) -> LocalIOError | None:
    """``exc`` as a :class:`LocalIOError` when it is a local disk failure (a :class:`LocalIOError`,
    an :class:`OSError` whose ``errno`` is in :data:`DISK_ERRNOS`, or SQLite's ``disk I/O error`` /
    ``database or disk is full``), else None. The file is ``exc.filename`` when the error names
    one, else ``where`` (the folder being written)."""
    if isinstance(exc, LocalIOError):
        return exc
    if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
        return LocalIOError(exc.filename or where, exc)
    if isinstance(exc, sqlite3.OperationalError) and any(
        s in str(exc) for s in ("disk I/O error", "database or disk is full")
    ):
        return LocalIOError(where, exc)
    return None


@contextmanager
def local_io(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an :class:`OSError` (or a :class:`sqlite3.OperationalError`: ``disk I/O error``,
    ``database or disk is full``) raised inside the block into a :class:`LocalIOError` naming
    ``path``. A :class:`LocalIOError` passes through unchanged."""
    try:
        yield
    except LocalIOError:
        raise
    except (OSError, sqlite3.OperationalError) as e:
        raise LocalIOError(path, e) from e
