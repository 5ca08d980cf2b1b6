"""A-Mem's hybrid retriever: 0.5 · min-max-normalised BM25 + 0.5 · cosine (spec/baselines.md).

BM25 is ``bm25s`` (Lucene variant, k1 = 1.5, b = 0.75, English stopwords removed); the cosine is
between unit vectors from the text embedder (all-MiniLM-L6-v2 in the paper).
"""

from __future__ import annotations

import numpy as np

ALPHA = 0.5
"""Weight of the normalised BM25 score; the cosine gets 1 − ALPHA (published 0.5 / 0.5)."""


def minmax(scores: np.ndarray) -> np.ndarray:
    """``(s − min) / (max − min)``; all zeros when every score is equal (nothing to tell apart)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return s
    lo, hi = float(s.min()), float(s.max())
    return np.zeros_like(s) if hi <= lo else (s - lo) / (hi - lo)


def hybrid_scores(bm25: np.ndarray, cosine: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """``alpha · minmax(bm25) + (1 − alpha) · cosine``, one score per document.

    Example: bm25 [2, 1, 0], cosine [0.1, 0.8, 0.3] → [0.55, 0.65, 0.15].
    """
    bm25 = np.asarray(bm25, dtype=np.float64)
    cosine = np.asarray(cosine, dtype=np.float64)
    if bm25.shape != cosine.shape:
        raise ValueError(f"bm25 and cosine scores differ in shape: {bm25.shape} vs {cosine.shape}")
    return alpha * minmax(bm25) + (1.0 - alpha) * cosine


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Best ``k`` ``(index, score)`` pairs, best first; ties go to the lower index."""
    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores)))[:k]
    return [(int(i), float(scores[i])) for i in order]


class BM25Scorer:
    """BM25 scores of a query against a fixed list of documents (rebuild when documents change)."""

    def __init__(self, documents: list[str]):
        import bm25s

        self._bm25s = bm25s
        self.n = len(documents)
        self.retriever = bm25s.BM25()
        if documents:
            tokens = bm25s.tokenize(documents, stopwords="en", show_progress=False)
            self.retriever.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """Shape ``(n,)``; zeros when no query word is in the documents' vocabulary."""
        if self.n == 0:
            return np.zeros(0)
        words = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        vocab = self.retriever.vocab_dict
        words = [w for w in words if w in vocab]
        if not words:
            return np.zeros(self.n)
        return np.asarray(self.retriever.get_scores(words), dtype=np.float64)
