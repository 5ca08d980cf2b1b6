"""Persistent embedding cache: one SQLite table of float32 vectors keyed by (model, text hash).

Every method, run and rerun that embeds the same text with the same model reads the vector
back instead of computing it again (an embedding is a pure function of model and text). The
file lives beside the request cache (``$H2HMEM_CACHE_DIR/embeddings.sqlite`` or
``~/.cache/h2hmem/embeddings.sqlite``); WAL journal, so several processes may share it.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np

from ..llm import default_cache_path, open_sqlite_store

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (model, text_sha256)
) WITHOUT ROWID
"""
_COLUMNS = ["model", "text_sha256", "dim", "vector", "created"]
_CHUNK = 500
"""Keys per ``SELECT … IN (…)`` (SQLite allows 32,766 host parameters; smaller keeps each query light)."""


def default_embedding_cache_path(beside: str | Path | None = None) -> Path:
    """``embeddings.sqlite`` in the folder of the request cache file ``beside`` (a run's
    ``--cache-path``), by default that of :func:`~h2hmem.llm.default_cache_path`."""
    return Path(beside or default_cache_path()).expanduser().with_name("embeddings.sqlite")


def text_digest(text: str) -> bytes:
    """SHA-256 (32 raw bytes) of the UTF-8 text: the exact text, no normalisation."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Vectors in the SQLite file ``path`` (parent folders created).

    ``get_many(model, digests)`` → ``{digest: vector}`` for those present; ``put_many(model,
    {digest: vector})`` stores float32 rows in one transaction. A corrupt file, or one whose
    ``embeddings`` table has another shape, is moved aside (as for the request cache) and a
    fresh one created. Thread-safe; concurrent writer processes wait up to ``busy_timeout_s``.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 60.0):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self.damaged = 0
        """Stored vectors found damaged by :meth:`get_many` (treated as absent) since this cache was opened."""
        self.moved_aside: Path | None
        self._conn, self.moved_aside = open_sqlite_store(
            self.path, _SCHEMA, "embeddings", _COLUMNS, busy_timeout_s=busy_timeout_s, what="embedding cache"
        )

    def get_many(self, model: str, digests: list[bytes], dim: int | None = None) -> dict[bytes, np.ndarray]:
        """Stored vectors (float32, shape ``(dim,)``) of the ``digests`` present for ``model``;
        rows of another ``dim`` (when given), of a length that is not ``4 × dim`` bytes, or holding a
        value that is not finite (damaged bytes: SQLite's own checks pass over a changed value) are
        treated as absent, so they are computed again and replaced; damaged rows are logged (a
        warning naming the file and the count) and counted in :attr:`damaged`."""
        out: dict[bytes, np.ndarray] = {}
        damaged = 0
        with self._lock:
            for lo in range(0, len(digests), _CHUNK):
                part = digests[lo : lo + _CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT text_sha256, dim, vector FROM embeddings WHERE model = ? AND text_sha256 IN ({marks})",
                    (model, *part),
                ).fetchall()
                for digest, d, blob in rows:
                    if dim is not None and d != dim:
                        continue
                    vector = np.frombuffer(blob, dtype=np.float32) if len(blob) == 4 * d else None
                    if vector is None or not np.isfinite(vector).all():
                        damaged += 1
                        continue
                    out[bytes(digest)] = vector.copy()
        if damaged:
            self.damaged += damaged
            log.warning(
                "embedding cache %s: %d stored vector%s of %s damaged (wrong length or not finite); computing %s again",
                self.path,
                damaged,
                "" if damaged == 1 else "s",
                model,
                "it" if damaged == 1 else "them",
            )
        return out

    def put_many(self, model: str, vectors: dict[bytes, np.ndarray]) -> None:
        """Store (replacing) every ``digest → vector`` of ``model`` in one transaction. A vector holding
        a value that is not finite is not stored (logged): :meth:`get_many` would call it damaged on
        every read and have it computed, and paid for, again."""
        now = time.time()
        rows = [
            (model, d, int(v.shape[-1]), np.ascontiguousarray(v, dtype=np.float32).tobytes(), now)
            for d, v in vectors.items()
            if np.isfinite(v).all()
        ]
        if len(rows) < len(vectors):
            log.warning(
                "embedding cache %s: %d vector(s) of %s not stored: the model returned values that are not finite",
                self.path,
                len(vectors) - len(rows),
                model,
            )
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def count(self, model: str | None = None) -> int:
        """Vectors stored (for ``model`` only, when given)."""
        with self._lock:
            if model is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:  # pragma: no cover - closing twice
                pass

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"
