"""The files of one evaluation (``scores/*.jsonl``, side files, ``summary.json``), put in place as a set.

:func:`h2hmem.metrics.evaluate_run` stages every file it writes: each is written in full to a
hidden temporary file beside its destination (``scores/.lexical.jsonl.<random>.tmp``) and flushed
to disk. Only when every file is staged are they renamed into place, ``summary.json`` last, and
the folder synced. So a write that fails (a full disk, a file-size limit, an I/O error) leaves the
previous set exactly as it was: the failed evaluation's temporary files are removed and the error
is a :class:`~h2hmem.LocalIOError` naming the destination. A process killed during the renames
(microseconds) can leave some new files beside the older summary; the next evaluation rewrites the
whole set, and removes temporary files an earlier one left behind (:meth:`ScoreSet.sweep`).

The judge's ``judge.jsonl`` lines appended while it judges are not part of the set: they are
written the moment each judgment exists, so that a stopped pass resumes without paying again
(readers take the last line of a question); the compacted file is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from pydantic import BaseModel

from .._atomic import TMP_SUFFIX, write_beside
from .._localio import local_io
from ._jsonfile import record_text
from ._summary import SCORES_SUMMARY, ScoresSummary


class ScoreSet:
    """Stage the files of one evaluation under ``scores_dir`` and :meth:`commit` them together.

    Use as a context manager: leaving the block by an exception :meth:`discard`\\ s what was staged.

    Raises (every method that writes):
        LocalIOError: a temporary file or a rename failed (names the destination).
    """

    def __init__(self, scores_dir: str | Path):
        self.dir = Path(scores_dir)
        self._staged: dict[str, Path] = {}  # destination name -> its temporary file, in staging order

    def __enter__(self) -> ScoreSet:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.discard()

    @property
    def staged(self) -> list[str]:
        """Destination names staged so far (relative to the scores folder), in order."""
        return list(self._staged)

    def stage_text(self, name: str, text: str) -> None:
        """Write ``text`` (UTF-8) as the next content of ``scores/<name>``; staging a name again
        replaces its earlier content."""
        dest = self.dir / name
        with local_io(dest):
            tmp = write_beside(dest, text, fsync=True)
        old = self._staged.pop(name, None)
        if old is not None:
            old.unlink(missing_ok=True)
        self._staged[name] = tmp

    def stage_lines(self, name: str, records: Iterable[BaseModel]) -> None:
        """Stage ``scores/<name>`` as one JSON line per record, in the given order (the format of
        :func:`~h2hmem.records.write_score_lines`)."""
        self.stage_text(name, "".join(r.model_dump_json() + "\n" for r in records))

    def commit(self, summary: ScoresSummary) -> None:
        """Stage ``summary.json``, then rename every staged file into place, the summary last, and
        sync the folder. After it returns, the set is the new one."""
        self.stage_text(SCORES_SUMMARY.name, record_text(summary))
        names = [n for n in self._staged if n != SCORES_SUMMARY.name] + [SCORES_SUMMARY.name]
        for name in names:
            with local_io(self.dir / name):
                os.replace(self._staged[name], self.dir / name)
            del self._staged[name]
        _sync_dir(self.dir)

    def discard(self) -> None:
        """Remove the temporary files staged and not committed (never raises)."""
        for tmp in self._staged.values():
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        self._staged.clear()

    def sweep(self) -> int:
        """Remove the temporary files an earlier evaluation left behind (killed while staging);
        call it while holding the scores lock. Returns how many were removed."""
        n = 0
        for tmp in self.dir.glob(f".*{TMP_SUFFIX}") if self.dir.is_dir() else ():
            try:
                tmp.unlink()
                n += 1
            except OSError:
                pass
        return n


def _sync_dir(path: Path) -> None:
    """fsync a folder so the renames in it survive a machine crash (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse to sync a folder; the renames are still done
    finally:
        os.close(fd)
