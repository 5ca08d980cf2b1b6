"""``VectorIndex``: exact top-k cosine search by numpy brute force (enough at H2HMem's scale,
~7k turns: see design/DEPENDENCIES.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ._protocol import l2_normalise


class VectorIndex:
    """Vectors with string ids. Vectors are L2-normalised on ``add`` and queries on ``search``,
    so scores are cosine similarities in [-1, 1]."""

    def __init__(self, dim: int | None = None):
        self.dim = dim
        self._ids: list[str] = []
        self._id_set: set[str] = set()
        self._vectors = np.zeros((0, dim or 0), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return list(self._ids)

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        """Append ``vectors`` (shape ``(len(ids), dim)``). Raises ``ValueError`` on a shape mismatch
        or an id already present (ids are unique)."""
        v = np.asarray(vectors, dtype=np.float32)
        if v.ndim != 2 or v.shape[0] != len(ids):
            raise ValueError(f"vectors must have shape ({len(ids)}, dim), got {v.shape}")
        if self.dim is None:
            self.dim = v.shape[1]
            self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        if v.shape[1] != self.dim:
            raise ValueError(f"vectors have dim {v.shape[1]}, index has dim {self.dim}")
        dup = [i for i in ids if i in self._id_set]
        if dup or len(set(ids)) != len(ids):
            raise ValueError(f"duplicate ids: {sorted(set(dup) or {i for i in ids if ids.count(i) > 1})[:5]}")
        self._append(ids, l2_normalise(v) if len(v) else v)

    def _append(self, ids: list[str], unit_vectors: np.ndarray) -> None:
        self._ids.extend(ids)
        self._id_set.update(ids)
        if len(unit_vectors):
            self._vectors = np.concatenate([self._vectors, unit_vectors.astype(np.float32)])

    def search(self, query: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Top-``k`` (id, cosine) per query, best first; ties keep insertion order.

        ``query``: shape ``(dim,)`` (one query) or ``(q, dim)``. Returns one list per query, each
        of ``min(k, len(self))`` pairs.
        """
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        q = np.asarray(query, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.ndim != 2:
            raise ValueError(f"query must have shape (dim,) or (q, dim), got {q.shape}")
        if len(self) == 0 or k == 0:
            return [[] for _ in range(len(q))]
        if q.shape[1] != self.dim:
            raise ValueError(f"query has dim {q.shape[1]}, index has dim {self.dim}")
        scores = l2_normalise(q) @ self._vectors.T
        k = min(k, len(self))
        results = []
        for row in scores:
            if k < len(row):
                part = np.argpartition(-row, k - 1)[:k]
                # include every score tied with the k-th so the stable sort picks by insertion order
                part = np.flatnonzero(row >= row[part].min())
            else:
                part = np.arange(len(row))
            order = part[np.lexsort((part, -row[part]))][:k]
            results.append([(self._ids[i], float(row[i])) for i in order])
        return results

    def save(self, path: str | Path) -> None:
        """Write ``<path>`` (``.npz`` with the vectors) and ``<path stem>.ids.json`` atomically."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        ids_path = path.with_suffix(".ids.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, vectors=self._vectors)
        tmp_ids = ids_path.with_name(ids_path.name + ".tmp")
        tmp_ids.write_text(json.dumps({"dim": self.dim, "ids": self._ids}), encoding="utf-8")
        os.replace(tmp, path)
        os.replace(tmp_ids, ids_path)

    @classmethod
    def load(cls, path: str | Path) -> VectorIndex:
        """Read what :meth:`save` wrote. Raises ``ValueError`` naming the file if they disagree."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        ids_path = path.with_suffix(".ids.json")
        with np.load(path) as data:
            vectors = data["vectors"]
        meta = json.loads(ids_path.read_text(encoding="utf-8"))
        ids = meta.get("ids")
        if not isinstance(ids, list) or len(ids) != len(vectors):
            raise ValueError(f"{ids_path}: field 'ids' must list {len(vectors)} ids (one per vector in {path})")
        dim = meta.get("dim") or (vectors.shape[1] if vectors.ndim == 2 else None)
        if vectors.ndim != 2 or (dim is not None and len(vectors) and vectors.shape[1] != dim):
            raise ValueError(f"{path}: 'vectors' has shape {vectors.shape}, expected (n, {dim})")
        if len(set(ids)) != len(ids):
            raise ValueError(f"{ids_path}: field 'ids' holds duplicates")
        index = cls(dim)
        index._vectors = np.zeros((0, dim or 0), dtype=np.float32)
        index._append(ids, vectors)  # stored rows are already unit vectors: keep them bit-exact
        return index
