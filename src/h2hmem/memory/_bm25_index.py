"""``bm25s``'s index, built with array operations instead of a Python loop over the documents.

``bm25s.BM25.build_index_from_ids`` (the step its documentation names for overriding) counts each
document's words with a ``Counter`` and scores them with a few NumPy calls per document: ~5 ms for the
~300 turns of one dialogue, in one event-loop step of the run (the index is built when a dialogue's
first question is asked; ``bench/README.md``, finding 12). :func:`bm25_retriever` returns a
``bm25s.BM25`` whose build does the same arithmetic on all (document, word) pairs at once, for the
Lucene variant h2hmem uses, and hands the result to ``bm25s``'s own sparse-matrix builder: the index
arrays are bit for bit those of ``bm25s`` (``tests/memory/test_bm25_index.py`` compares them), and
queries are scored by ``bm25s`` itself. Any other variant or back-end falls back to ``bm25s``'s build.

Per (document d, word w) with count ``tf`` (float32, as ``bm25s`` counts), length ``l_d``, mean length
``l_avg`` and ``df`` documents holding w (every step in ``bm25s``'s order and precision):
``idf = float32(log(1 + (N − df + 0.5) / (df + 0.5)))``,
``score = float32(idf · tf / (k1 · ((1 − b) + b · l_d / l_avg) + tf))``, the quotient in float64.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ._bm25s_import import import_bm25s

_BM25: Any = import_bm25s().BM25  # not `import bm25s`: that starts JAX's GPU back-end where JAX is installed

_NUMPY_2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
"""bm25s's division runs in float64 under NumPy 2's promotion rules (a NumPy float64 scalar plus a float32
array); NumPy 1 did it in float32. The arrays below follow NumPy 2, so NumPy 1 keeps bm25s's build."""


class ArrayBuiltBM25(_BM25):  # type: ignore[misc]  # bm25s ships no type information
    """``bm25s.BM25`` whose index build runs on arrays (module docstring). Anything the arrays below do
    not reproduce exactly is left to ``bm25s``: another variant or sparse back-end, NumPy 1, parameters
    that are NumPy scalars other than float64, word ids outside ``0 … n_vocab − 1`` (``bm25s`` raises),
    sizes its index dtype cannot hold, an empty corpus."""

    def build_index_from_ids(
        self,
        unique_token_ids: list[int],
        corpus_token_ids: list[list[int]],
        show_progress: bool = True,
        leave_progress: bool = False,
    ) -> dict[str, Any]:
        words = self._word_ids(unique_token_ids, corpus_token_ids)
        if words is None:
            return super().build_index_from_ids(  # type: ignore[no-any-return]
                unique_token_ids, corpus_token_ids, show_progress=show_progress, leave_progress=leave_progress
            )
        lengths, flat = words
        self.nonoccurrence_array = None  # as bm25s sets it for a variant without one (Lucene)
        return lucene_scores(
            lengths, flat, len(unique_token_ids), self.k1, self.b, self.dtype, self.int_dtype, self._np_csc
        )

    def _word_ids(
        self, unique_token_ids: list[int], corpus_token_ids: list[list[int]]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Each document's length and every word id in order, flattened — or None where the arrays
        would not reproduce ``bm25s`` exactly (the class docstring's cases)."""
        variant = (getattr(self, "method", None), getattr(self, "idf_method", None), getattr(self, "csc_backend", None))
        if not _NUMPY_2 or variant != ("lucene", "lucene", "numpy"):
            return None
        if not all(type(x) in (int, float, np.float64) for x in (self.k1, self.b)):
            return None
        n_vocab, n_docs = len(unique_token_ids), len(corpus_token_ids)
        if n_vocab == 0 or sorted(unique_token_ids) != list(range(n_vocab)):
            return None
        if max(n_vocab, n_docs) > int(np.iinfo(self.int_dtype).max):
            return None
        lengths = np.array([len(ids) for ids in corpus_token_ids])
        if not lengths.any():
            return None
        flat = np.fromiter(itertools.chain.from_iterable(corpus_token_ids), dtype=np.int64, count=int(lengths.sum()))
        if flat.min() < 0 or flat.max() >= n_vocab:
            return None
        return lengths, flat


def bm25_retriever() -> ArrayBuiltBM25:
    """A new ``bm25s.BM25`` (its defaults: Lucene, k1 = 1.5, b = 0.75) with the array-built index."""
    return ArrayBuiltBM25()


def lucene_scores(
    lengths: np.ndarray,
    flat: np.ndarray,
    n_vocab: int,
    k1: float,
    b: float,
    dtype: str,
    int_dtype: str,
    to_csc: Any,
) -> dict[str, Any]:
    """``bm25s``'s ``scores`` dict (``data``, ``indices``, ``indptr``, ``num_docs``) of the Lucene
    variant for documents of ``lengths`` words (int array, one per document) whose word ids
    ``0 … n_vocab − 1`` are ``flat``, document after document; ``to_csc`` is ``bm25s``'s builder of
    the sparse matrix (``BM25._np_csc``), which orders the entries by (word, document)."""
    n_docs = len(lengths)
    avg_doc_len = lengths.mean()  # as bm25s: the int64 array's mean, float64
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    pairs, counts = np.unique(doc_of * n_vocab + flat, return_counts=True)
    docs, words = np.divmod(pairs, n_vocab)
    df = np.bincount(words, minlength=n_vocab)
    idf = np.zeros(n_vocab, dtype=dtype)
    for value in np.unique(df[df > 0]).tolist():  # math.log on Python floats, as bm25s (not np.log)
        idf[df == value] = math.log(1 + (n_docs - value + 0.5) / (value + 0.5))
    length_part = k1 * ((1 - b) + b * lengths.astype(np.float64) / avg_doc_len)
    tf = counts.astype(dtype)
    scores = (idf[words] * (tf / (length_part[docs] + tf))).astype(dtype)
    data, indices, indptr = to_csc(
        data=scores, rows=docs.astype(int_dtype), cols=words.astype(int_dtype), shape=(n_docs, n_vocab)
    )
    return {"data": data.astype(dtype), "indices": indices, "indptr": indptr, "num_docs": n_docs}
