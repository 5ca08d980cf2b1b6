"""The parsed-dataset cache: a dataset read once is read again in ~0.1 s instead of ~0.5 s (the full
dataset: 25 dialogues, 7,078 turns, 1,387 images), at the start of every run, evaluation and check.

An entry is the loaded :class:`~h2hmem.data.Dataset` and the warnings found while reading it,
pickled under ``<cache dir>/datasets/`` (``$H2HMEM_CACHE_DIR`` or ``~/.cache/h2hmem``). Its key is a
SHA-256 over everything the result depends on:

- every file and folder under the dataset root — relative name, kind, size and modification
  time in nanoseconds (links followed: a linked file counts with its target's), so an edited,
  added, removed or renamed file, image or folder is a miss;
- the real path of the root and the split asked for;
- the reader's own code (the bytes of every module of ``h2hmem.data``), h2hmem's version, and
  the Python and pydantic versions (pickles of one are not read by another).

Rules that keep it from ever returning a stale dataset:

- only a load with no error is stored (an error is raised or reported again by a new load);
- only a *settled* dataset is stored: every file's modification time more than
  :data:`SETTLE_S` seconds before the load began (a file written within the clock's granularity
  of the load could change again with the same size and time: git's "racily clean" case);
- the key is computed before the load and again after it; a dataset that changed while being
  read is not stored;
- an entry that cannot be read (torn, from another version) is a miss, and is replaced.

``H2HMEM_DATASET_CACHE=0`` turns it off; :func:`~h2hmem.data.load_dataset` takes ``cache=False``.
At most :data:`KEEP` entries are kept (least recently used removed first).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
import platform
import stat
from dataclasses import dataclass
from pathlib import Path

import pydantic

from .._atomic import atomic_write_text
from .._cachedir import cache_dir
from .._version import __version__
from ._issues import Issue
from ._schema import Dataset

log = logging.getLogger(__name__)

CACHE_ENV = "H2HMEM_DATASET_CACHE"
"""Set to ``0`` to read every dataset from its files."""
FORMAT = 1
"""Version of the entry layout; part of the key."""
SETTLE_S = 10.0
"""A dataset with a file modified less than this many seconds before the load is not stored."""
KEEP = 8
"""Entries kept; the least recently used beyond this are removed."""


@dataclass(frozen=True)
class Fingerprint:
    """What a dataset's files looked like at one moment."""

    key: str
    """SHA-256 hex of the files, the root, the split and the reader's code and versions."""
    newest_mtime: float
    """The latest modification time among the files and folders (seconds since the epoch)."""


def enabled() -> bool:
    """False when ``H2HMEM_DATASET_CACHE`` is ``0``/``false``/``no``/``off``."""
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def fingerprint(base: Path, split: str) -> Fingerprint:
    """Walk ``base`` (links followed, each real folder once) and hash what the key names.

    Raises:
        OSError: the root cannot be listed.
    """
    real = Path(os.path.realpath(base))
    h = hashlib.sha256()
    for part in (f"format {FORMAT}", __version__, platform.python_version(), pydantic.VERSION, _code_digest()):
        h.update(part.encode() + b"\0")
    h.update(f"{real}\0{split}\0".encode())
    newest = 0.0
    seen: set[object] = set()  # each real folder once: a link's target is walked once
    stack = [(real, "", _identity(real, os.stat(real)))]
    while stack:
        folder, rel, ident = stack.pop()
        if ident in seen:
            continue
        seen.add(ident)
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            name = f"{rel}/{e.name}" if rel else e.name
            try:
                st = os.stat(e.path)  # links followed, as the reader follows them
            except OSError:
                h.update(f"{name}\0broken\0".encode())
                continue
            newest = max(newest, st.st_mtime)
            if stat.S_ISDIR(st.st_mode):
                h.update(f"{name}\0dir\0{st.st_mtime_ns}\0".encode())
                stack.append((Path(e.path), name, _identity(e.path, st)))
            else:
                h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return Fingerprint(h.hexdigest(), newest)


def _identity(path: str | Path, st: os.stat_result) -> object:
    """A real folder's identity: (device, inode), or its real path where the file system reports no
    inode (``st_ino`` 0, e.g. some network drives), where inodes would merge every folder into one."""
    return (st.st_dev, st.st_ino) if st.st_ino else os.path.realpath(path)


@functools.cache
def _code_digest() -> str:
    """SHA-256 of the bytes of every module of this package (an edited reader is another key). Read
    once per process: the reader that runs is the one imported, whatever the files say later."""
    here = Path(__file__).parent
    h = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _entry(key: str) -> Path:
    return cache_dir() / "datasets" / f"{key}.pickle"


def lookup(fp: Fingerprint) -> tuple[Dataset, list[Issue]] | None:
    """The stored dataset and its warnings for ``fp``, or None (a miss: no entry, or one that
    cannot be read, which is removed)."""
    path = _entry(fp.key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        ds, issues = pickle.loads(data)
        if not isinstance(ds, Dataset) or not all(isinstance(i, Issue) for i in issues):
            raise TypeError("not a dataset entry")
    except Exception as e:  # a torn or foreign file: read the dataset from its files instead
        log.debug("dataset cache entry %s unreadable (%s); reading the files", path, e)
        path.unlink(missing_ok=True)
        return None
    try:
        os.utime(path)  # most recently used: kept longest
    except OSError:
        pass
    return ds, list(issues)


def store(before: Fingerprint, started: float, base: Path, split: str, ds: Dataset, issues: list[Issue]) -> bool:
    """Store ``ds`` and its warnings under ``before``'s key when the dataset is settled and did
    not change while it was read (``base`` fingerprinted again). Never raises: a cache that cannot
    be written only costs the next load its time. Returns whether it was stored."""
    if before.newest_mtime > started - SETTLE_S:
        return False
    try:
        if fingerprint(base, split).key != before.key:
            return False
        path = _entry(before.key)
        atomic_write_text(path, pickle.dumps((ds, issues), protocol=pickle.HIGHEST_PROTOCOL))
        _prune(path.parent)
    except Exception as e:  # disk full, read-only home: the load itself succeeded
        log.debug("dataset cache not written (%s: %s)", type(e).__name__, e)
        return False
    return True


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
