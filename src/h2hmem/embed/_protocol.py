"""The :class:`Embedder` protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Texts → unit vectors.

    ``await embed(texts)`` returns a float32 array of shape ``(len(texts), dim)`` whose rows are
    L2-normalised, so a dot product is the cosine similarity. ``embed([])`` returns shape ``(0, dim)``.
    """

    name: str
    dim: int

    async def embed(self, texts: list[str]) -> np.ndarray: ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32); all-zero rows stay zero."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms == 0, 1.0, norms)).astype(np.float32)
