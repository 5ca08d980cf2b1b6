"""A-Mem's hybrid retriever: 0.5 · min-max-normalised BM25 + 0.5 · cosine (docs/baselines.md).

BM25 is ``bm25s`` (Lucene variant, k1 = 1.5, b = 0.75, English stopwords removed); the cosine is
between unit vectors from the text embedder (all-MiniLM-L6-v2 in the paper).
"""

from __future__ import annotations

import functools
import re
from typing import Any

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


_BM25_TOKEN = re.compile(r"(?u)\b\w\w+\b")
"""``bm25s.tokenize``'s default ``token_pattern`` (scikit-learn's CountVectorizer words)."""


@functools.lru_cache(maxsize=1)
def _bm25_stopwords() -> frozenset[str]:
    from ._bm25s_import import import_bm25s

    return frozenset(import_bm25s().stopwords.STOPWORDS_EN)


def query_words(query: str) -> list[str]:
    """The words of ``query`` as ``bm25s.tokenize([query], stopwords="en", return_ids=False)[0]``
    gives them (lowercased, its token pattern, its English stopwords removed, order and repeats
    kept), without its per-call progress-bar set-up: a query is scored for every question."""
    stop = _bm25_stopwords()
    return [w for w in _BM25_TOKEN.findall(query.lower()) if w not in stop]


class BM25Scorer:
    """BM25 scores of a query against a fixed list of documents (rebuild when documents change)."""

    def __init__(self, documents: list[str]):
        from ._bm25_index import bm25_retriever
        from ._bm25s_import import import_bm25s

        bm25s = import_bm25s()

        self.n = len(documents)
        self.retriever = bm25_retriever()  # bm25s, its index built on arrays (same index, ~5× less CPU)
        if documents:
            tokens = bm25s.tokenize(documents, stopwords="en", show_progress=False)
            self.retriever.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """Shape ``(n,)``; zeros when no query word is in the documents' vocabulary."""
        if self.n == 0:
            return np.zeros(0)
        vocab = self.retriever.vocab_dict
        words = [w for w in query_words(query) if w in vocab]
        if not words:
            return np.zeros(self.n)
        return np.asarray(self.retriever.get_scores(words), dtype=np.float64)


def official_minmax(scores: np.ndarray) -> np.ndarray:
    """The official A-Mem normalisation: ``(s − min) / (max − min + 1e-6)`` when ``max > min``, else the
    raw scores (``retrievers.py`` @ b6070899, ``HybridRetriever.search``)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size and s.max() > s.min():
        out: np.ndarray = (s - s.min()) / (s.max() - s.min() + 1e-6)
        return out
    return s


@functools.lru_cache(maxsize=1)
def _nltk_tokenizers() -> tuple[Any, Any]:  # nltk ships no type information
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(), NLTKWordTokenizer()


@functools.lru_cache(maxsize=65536)  # the index is rebuilt after every note: each text is tokenised once
def word_tokens(text: str) -> tuple[str, ...]:
    """``nltk.word_tokenize(text.lower())`` as the official retriever tokenised (punctuation kept).

    Sentences are split with an untrained ``PunktSentenceTokenizer`` (the trained English model is
    a download); words with NLTK's Treebank tokenizer, as ``word_tokenize`` does.
    """
    sentences, words = _nltk_tokenizers()
    return tuple(t for s in sentences.tokenize(text.lower()) for t in words.tokenize(s))


class OkapiBM25:
    """Okapi BM25 as ``rank_bm25.BM25Okapi`` computes it (k1 = 1.5, b = 0.75, epsilon = 0.25), over
    :func:`word_tokens` without stopword removal (preset ``paper``).

    ``idf(w) = ln((N − n_w + 0.5) / (n_w + 0.5))``; a negative idf is replaced by
    ``epsilon × mean idf``; ``score(d) = Σ_{w in query} idf(w) · f(w,d)·(k1+1) / (f(w,d) + k1·(1 − b + b·|d|/avgdl))``
    (a repeated query word counts each time).

    Example: documents ``["a cat", "a dog"]``, query ``"cat"``: idf(cat) = ln(1.5/1.5) = 0 → scores [0, 0].
    """

    def __init__(self, documents: list[str], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        import math
        from collections import Counter

        self.k1, self.b = k1, b
        self.n = len(documents)
        docs = [word_tokens(d) for d in documents]
        self.freqs = [Counter(d) for d in docs]
        self.lengths = np.array([len(d) for d in docs], dtype=np.float64)
        self.avgdl = float(self.lengths.mean()) if self.n else 0.0
        df: Counter[str] = Counter(w for f in self.freqs for w in f)
        self.idf = {w: math.log(self.n - c + 0.5) - math.log(c + 0.5) for w, c in df.items()}
        floor = epsilon * (sum(self.idf.values()) / len(self.idf)) if self.idf else 0.0
        self.idf = {w: (floor if v < 0 else v) for w, v in self.idf.items()}

    def scores(self, query: str) -> np.ndarray:
        """Shape ``(n,)``."""
        out = np.zeros(self.n)
        if not self.n:
            return out
        norm = self.k1 * (1 - self.b + self.b * self.lengths / (self.avgdl or 1.0))
        for w in word_tokens(query):
            idf = self.idf.get(w, 0.0)
            if not idf:
                continue
            f = np.array([d.get(w, 0) for d in self.freqs], dtype=np.float64)
            out += idf * f * (self.k1 + 1) / (f + norm)
        return out
