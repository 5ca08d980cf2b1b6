"""SQLite request cache: one table, WAL journal, safe for several processes writing at once.

Keys are SHA-256 digests of what changes a model's output (backend, model, base URL, messages
with images replaced by content hashes, generation parameters) — never of concurrency or retry
settings (inspect_ai's rule). Only successful replies are stored.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    base = os.environ.get("H2HMEM_CACHE_DIR")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "h2hmem"
    return root / "requests.sqlite"


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of ``payload`` as canonical JSON (sorted keys, no whitespace)."""
    data = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self.moved_aside: Path | None = None
        """Where a corrupt file found at open was moved, if one was."""
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            self.moved_aside = self._move_aside(exc)
            self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            status = conn.execute("PRAGMA quick_check").fetchone()
            if status is None or status[0] != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {status[0] if status else 'no result'}")
            conn.execute(_SCHEMA)
            columns = [row[1] for row in conn.execute("PRAGMA table_info(requests)")]
            if columns != _COLUMNS:
                raise sqlite3.DatabaseError(f"unexpected 'requests' table columns {columns}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, exc: Exception) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        os.replace(self.path, target)
        for suffix in ("-wal", "-shm"):
            side = self.path.with_name(self.path.name + suffix)
            if side.exists():
                if suffix == "-wal":
                    os.replace(side, target.with_name(target.name + suffix))
                else:
                    side.unlink()
        log.warning("request cache %s is corrupt (%s); moved it to %s and started a new one",
                    self.path, exc, target)
        return target

    def get(self, key: str) -> CacheEntry | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT model, text, finish_reason, prompt_tokens, completion_tokens FROM requests WHERE key = ?",
                (key,)).fetchone()
        return CacheEntry(*row) if row else None

    def put(self, key: str, entry: CacheEntry) -> None:
        """Store ``entry`` under ``key`` (replacing an older one) in one transaction."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, entry.model, entry.text, entry.finish_reason, entry.prompt_tokens,
                     entry.completion_tokens, time.time()))
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r})"
