"""The run directory's writer and reader: ``manifest.json``, the append-only ``predictions.jsonl``,
``transcripts.jsonl.gz`` (the runner writes through :class:`RunStore`; readers use it or the
functions of :mod:`h2hmem.records`).

Every prediction is appended and flushed the moment it exists, so a crash loses at most the
line being written; that torn line is detected and cut off when the run resumes.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, runs are not guarded
    fcntl = None  # type: ignore[assignment]

from .._atomic import close_durably
from ..data import replace_surrogates
from ._manifest import MANIFEST, Manifest, read_manifest, write_manifest
from ._prediction import Prediction, read_predictions
from ._transcripts import TRANSCRIPTS, TranscriptWriter

PREDICTIONS = "predictions.jsonl"
LOCK = ".lock"


def now_iso() -> str:
    """The current UTC time as ISO 8601 to the second, e.g. ``2026-12-01T12:00:00+00:00``."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextmanager
def exclusive_lock(path: Path, what: str = "") -> Iterator[str | None]:
    """Try once to take an exclusive advisory lock (``flock``) on ``path`` (created with its folder
    when missing); the one lock mechanism of a run directory (:meth:`RunStore.locked`,
    :meth:`RunStore.scores_locked`).

    Yields None while this process holds the lock (the file then reads ``"pid <pid>"``, followed by
    ``", <what>"`` when given), else the holder's description as written in the file; never waits.
    The operating system releases the lock when the process ends, however it ends (SIGKILL
    included), so a crash never leaves a stale lock. On a platform without ``fcntl`` (Windows)
    nothing is locked and None is yielded.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+", encoding="utf-8")
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield _holder_text(fh)
                return
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}" + (f", {what}" if what else ""))
        fh.flush()
        yield None
    finally:
        fh.close()


def _holder_text(fh: IO[str]) -> str:
    """What the lock's holder wrote (``pid …``). The holder truncates the file and writes after it has
    the lock, so a reader can come in between and find it empty: read again for up to ~0.1 s."""
    for _ in range(20):
        fh.seek(0)
        text = fh.read().strip()
        if text:
            return text
        time.sleep(0.005)
    return "another process"


def lock_holder(path: Path) -> str | None:
    """The description of the process holding the lock file ``path`` (``"pid 1234"``), or None when
    no process holds it, the file does not exist or nothing can be locked (no ``fcntl``). Writes
    nothing: a shared lock is tried for an instant on a read-only handle, so a run that starts in that
    same instant is refused as if another run held the directory (it can simply be started again)."""
    if fcntl is None:
        return None
    try:
        fh = open(path, encoding="utf-8")
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_text(fh)
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return None


class RunStore:
    """Reads and writes one run directory (``runs/<run-id>/``)."""

    def __init__(self, run_dir: Path):
        self.dir = Path(run_dir)
        self.manifest_path = self.dir / MANIFEST
        self.predictions_path = self.dir / PREDICTIONS
        self.transcripts = TranscriptWriter(self.dir / TRANSCRIPTS)
        """The run's model-call transcripts (opened by :meth:`open` unless ``transcripts=False``)."""
        self._fh: IO[bytes] | None = None

    @contextmanager
    def locked(self) -> Iterator[str | None]:
        """Hold an exclusive advisory lock (``flock`` on ``<run>/.lock``) while the run writes.

        Yields None when the lock is held, else the holder's description (``"pid 1234"``): two
        processes appending to one ``predictions.jsonl`` would interleave and duplicate records.
        The operating system releases the lock when the process ends, however it ends (SIGKILL
        included), so a crash never leaves a stale lock.
        """
        with exclusive_lock(self.dir / LOCK) as holder:
            yield holder

    @contextmanager
    def scores_locked(self, what: str = "") -> Iterator[str | None]:
        """The same lock as :meth:`locked` on ``<run>/scores/.lock``, held while an evaluation
        writes ``scores/`` (``h2hmem evaluate``): two evaluations at once would both pay the judge
        and could put one's score files beside the other's summary. Separate from the run's lock,
        so an unfinished run can be scored while it is being written. ``what`` joins the holder's
        description (``"pid 1234, h2hmem evaluate (judge) since 2026-12-01T12:00:00+00:00"``)."""
        with exclusive_lock(self.dir / "scores" / LOCK, what) as holder:
            yield holder

    def writer(self) -> str | None:
        """The process writing this run now (the holder of :meth:`locked`'s lock, e.g. ``"pid 1234"``),
        or None (:func:`lock_holder`)."""
        return lock_holder(self.dir / LOCK)

    @property
    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def read_manifest(self) -> Manifest | None:
        """The manifest (:class:`~h2hmem.records.Manifest`); None when there is none.

        Raises:
            ValueError: the manifest is not valid JSON, a field has the wrong type, or it is of a
                newer schema version (names the file and the field).
        """
        return read_manifest(self.dir)

    def write_manifest(self, manifest: Manifest) -> None:
        """Atomic replace (write a temporary file, fsync, rename): never a half-written manifest."""
        write_manifest(self.dir, manifest)

    def repair(self) -> int:
        """Cut a torn last line off ``predictions.jsonl``; returns the number of bytes removed."""
        p = self.predictions_path
        if not p.is_file():
            return 0
        data = p.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        last = data[cut:]
        try:
            Prediction.model_validate_json(last)
            with open(p, "ab") as f:  # complete record missing only its newline
                f.write(b"\n")
            return 0
        except ValueError:
            with open(p, "r+b") as f:
                f.truncate(cut)
            return len(last)

    def predictions(self) -> list[Prediction]:
        """Recorded predictions (the last complete record per question id wins; the runner's own
        ``--retry-failed`` duplicates are expected, so no warning)."""
        if not self.predictions_path.is_file():
            return []
        return read_predictions(self.predictions_path, warn_duplicates=False)

    def open(self, *, transcripts: bool = False) -> None:
        """Open ``predictions.jsonl`` for appending (and the transcript file, cutting a torn tail off)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.predictions_path, "ab")
        if transcripts:
            self.transcripts.open()

    def append(self, pred: Prediction) -> None:
        """Write one record as a single line and flush it to the OS.

        Text that is not valid Unicode (a lone surrogate in a model's reply: JSON allows the
        escape, UTF-8 does not) is written with U+FFFD in its place and the record's
        ``details["invalid_unicode"]`` lists the fields, instead of stopping the run.
        """
        assert self._fh is not None, "RunStore.open() first"
        try:
            line = pred.model_dump_json()
        except ValueError:  # pydantic cannot encode a lone surrogate
            data, bad = replace_surrogates(pred.model_dump(mode="json"))
            data["details"]["invalid_unicode"] = bad
            line = json.dumps(data, ensure_ascii=False)
        self._fh.write(line.encode("utf-8") + b"\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            close_durably(self._fh)
            self._fh = None
        self.transcripts.close()
