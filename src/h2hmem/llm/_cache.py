"""SQLite request cache: one table, WAL journal, safe for several processes writing at once.

Keys are SHA-256 digests of what changes a model's output (backend, model, base URL, messages
with images replaced by content hashes, generation parameters) — never of concurrency or retry
settings (inspect_ai's rule). Only successful replies are stored.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._cachedir import cache_dir
from .._json import canonical

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""
_COLUMNS = ["key", "model", "text", "finish_reason", "prompt_tokens", "completion_tokens", "created"]


def default_cache_path() -> Path:
    """``$H2HMEM_CACHE_DIR/requests.sqlite`` if that variable is set, else ``~/.cache/h2hmem/requests.sqlite``."""
    return cache_dir() / "requests.sqlite"


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``payload`` as canonical JSON (sorted keys, no whitespace)."""
    return hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()


def open_sqlite_store(
    path: Path, schema: str, table: str, columns: list[str], *, busy_timeout_s: float, what: str
) -> tuple[sqlite3.Connection, Path | None]:
    """Open (creating folders and ``table``) the SQLite file ``path`` in WAL mode, autocommit.

    A file that is not a valid SQLite database, fails ``PRAGMA quick_check`` or holds ``table``
    with other ``columns`` is moved aside as ``<name>.corrupt-<UTC timestamp>`` (with its ``-wal``
    file), with a logged warning naming ``what``, and a fresh store is created in its place.
    Returns the connection (usable from any thread under the caller's lock) and where a corrupt
    file was moved (None when none was).

    Only a file SQLite reads as damaged is moved: a file that cannot be opened at all (a folder, no
    permission, locked past ``busy_timeout_s``, an I/O error) is left where it is.

    Raises:
        ValueError: ``path`` is a folder (names ``what`` and the path).
        OSError: the file cannot be opened (``sqlite3.OperationalError``'s message, naming ``what``).
    """
    if path.is_dir():
        raise ValueError(f"{what} {path} is a folder; give the path of a cache file (it is created when missing)")
    path.parent.mkdir(parents=True, exist_ok=True)

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            status = conn.execute("PRAGMA quick_check").fetchone()
            if status is None or status[0] != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {status[0] if status else 'no result'}")
            conn.execute(schema)
            found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            if found != columns:
                raise sqlite3.DatabaseError(f"unexpected {table!r} table columns {found}")
        except BaseException:
            conn.close()
            raise
        return conn

    try:
        return connect(), None
    except sqlite3.OperationalError as exc:  # cannot open, locked, I/O: not damage, never moved
        raise OSError(f"{what} {path} cannot be opened: {exc}") from exc
    except sqlite3.DatabaseError as exc:  # not a database, malformed, failed quick_check, other columns
        moved = _move_aside(path, exc, what)
        return connect(), moved


def _move_aside(path: Path, exc: Exception, what: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            if suffix == "-wal":
                os.replace(side, target.with_name(target.name + suffix))
            else:
                side.unlink()
    log.warning("%s %s is corrupt (%s); moved it to %s and started a new one", what, path, exc, target)
    return target


@dataclass(frozen=True)
class CacheEntry:
    """A stored reply."""

    model: str
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int


class RequestCache:
    """Reply cache in the SQLite file ``path`` (parent folders created).

    A file that is not a valid SQLite database, fails ``PRAGMA quick_check`` or holds a
    ``requests`` table of another shape is moved aside as ``<name>.corrupt-<UTC timestamp>``
    (with its ``-wal`` file) with a logged warning, and a fresh cache is created in its place.
    Writes are single transactions; concurrent writers (threads or processes) wait up to
    ``busy_timeout_s`` seconds for the write lock.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 60.0):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        # moved_aside: where a corrupt file found at open was moved, if one was
        self.moved_aside: Path | None
        self._conn, self.moved_aside = open_sqlite_store(
            self.path, _SCHEMA, "requests", _COLUMNS, busy_timeout_s=busy_timeout_s, what="request cache"
        )

    def get(self, key: str) -> CacheEntry | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT model, text, finish_reason, prompt_tokens, completion_tokens FROM requests WHERE key = ?",
                (key,),
            ).fetchone()
        return CacheEntry(*row) if row else None

    def put(self, key: str, entry: CacheEntry) -> None:
        """Store ``entry`` under ``key`` (replacing an older one) in one transaction: the connection
        is in autocommit mode, so the single statement is its own transaction (no BEGIN/COMMIT
        round trips; a failed statement leaves nothing behind)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    entry.model,
                    entry.text,
                    entry.finish_reason,
                    entry.prompt_tokens,
                    entry.completion_tokens,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r})"
