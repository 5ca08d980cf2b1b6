"""The array-built BM25 index (``memory/_bm25_index.py``) is ``bm25s``'s own, bit for bit, and is built
without ``bm25s``'s per-document loop."""

from __future__ import annotations

import pickle
import random

import bm25s
import bm25s.scoring
import numpy as np
import pytest

from h2hmem.data import load_dataset
from h2hmem.memory._bm25_index import ArrayBuiltBM25, bm25_retriever
from h2hmem.memory._retrieval import BM25Scorer

WORDS = "cat dog lake Kiki Almond the a is umbrella station session photo cake 2024 tea green blue".split()


def _both(documents: list[str], **kwargs) -> tuple[bm25s.BM25, bm25s.BM25]:
    """bm25s's own index and the array-built one, each from its own tokenisation (``index`` adds the
    empty word to the vocabulary it is given)."""
    theirs, ours = bm25s.BM25(**kwargs), ArrayBuiltBM25(**kwargs)
    theirs.index(bm25s.tokenize(documents, stopwords="en", show_progress=False), show_progress=False)
    ours.index(bm25s.tokenize(documents, stopwords="en", show_progress=False), show_progress=False)
    return theirs, ours


def _assert_same(theirs: bm25s.BM25, ours: bm25s.BM25, queries: list[str]) -> None:
    for key in ("data", "indices", "indptr"):
        a, b = theirs.scores[key], ours.scores[key]
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), key
    assert theirs.scores["num_docs"] == ours.scores["num_docs"] and theirs.vocab_dict == ours.vocab_dict
    for q in queries:
        words = [w for w in bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)[0]]
        words = [w for w in words if w in theirs.vocab_dict]
        if words:
            assert theirs.get_scores(words).tobytes() == ours.get_scores(words).tobytes(), q


def test_the_sample_dialogues_index_bit_for_bit(sample_root):
    ds = load_dataset(sample_root)
    for d in ds.dialogues:
        docs = [t.text for s in d.sessions for t in s.turns]
        if docs:
            theirs, ours = _both(docs)
            _assert_same(theirs, ours, [q.text for q in d.questions[:20]])


def test_random_corpora_index_bit_for_bit():
    rng = random.Random(26)
    for _ in range(200):
        docs = [" ".join(rng.choices(WORDS, k=rng.randint(0, 30))) for _ in range(rng.randint(1, 40))]
        if not any(w.lower() not in ("the", "a", "is") for d in docs for w in d.split()):
            continue  # nothing but stopwords: bm25s cannot index it (BM25Scorer never asks)
        theirs, ours = _both(docs)
        _assert_same(theirs, ours, [" ".join(rng.choices(WORDS, k=4)) for _ in range(5)])


def test_other_variants_use_bm25s_build():
    docs = ["the cat sat on the mat", "a dog barked at the cat", "cat cat dog", "tea"]
    for method in ("robertson", "atire", "bm25l", "bm25+"):
        theirs, ours = _both(docs, method=method)
        _assert_same(theirs, ours, ["cat dog", "tea"])


def test_the_index_skips_bm25s_per_document_loop(monkeypatch):
    counted: list[int] = []
    real = bm25s.scoring._get_counts_from_token_ids
    monkeypatch.setattr(
        bm25s.scoring,
        "_get_counts_from_token_ids",
        lambda ids, *a, **k: counted.append(len(ids)) or real(ids, *a, **k),
    )
    docs = ["the cat sat on the mat", "a dog barked at the cat", "cat cat dog", "tea for two"]
    scorer = BM25Scorer(docs)
    assert counted == []  # no Counter per document
    bm25s.BM25().index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    assert len(counted) == len(docs)  # bm25s's own build: one per document
    # "cat": in docs 0, 1 (once each) and 2 (twice); doc 2 is the shortest: highest score
    s = scorer.scores("cat")
    assert s[3] == 0.0 and s[2] > s[0] > 0.0 and s[2] > s[1] > 0.0


@pytest.mark.parametrize("docs", [["tea"], ["cat", "", "dog dog"]])
def test_small_corpora(docs):
    theirs, ours = _both(docs)
    _assert_same(theirs, ours, ["tea", "dog cat"])


def test_parameters_bm25s_computes_otherwise_fall_back():
    """A NumPy float32 ``b`` makes bm25s compute ``b · l_d`` in float32: the array build leaves it to bm25s;
    Python numbers and float64 take the array build and still match."""
    rng = random.Random(5)
    docs = [" ".join(rng.choices(WORDS, k=rng.randint(1, 60))) for _ in range(30)]
    for k1, b in ((1.2, 0.7), (2, 1), (np.float64(1.5), np.float64(0.75)), (1.5, np.float32(0.7))):
        theirs, ours = _both(docs, k1=k1, b=b)
        _assert_same(theirs, ours, ["cat dog tea", "lake"])


def test_word_ids_outside_the_vocabulary_fail_as_in_bm25s():
    """Ids beyond the vocabulary are bm25s's error, not a silently shifted index."""
    for corpus in ([[0, 5], [0]], ([[0, 2], [1]], {"a": 0, "b": 1})):
        with pytest.raises(IndexError):
            bm25s.BM25().index(corpus, show_progress=False)
        with pytest.raises(IndexError):
            bm25_retriever().index(corpus, show_progress=False)


def test_documents_as_arrays_and_a_pickled_index():
    corpus = ([np.array([0, 1, 1]), np.array([1, 2])], {"a": 0, "b": 1, "c": 2})
    theirs, ours = bm25s.BM25(), bm25_retriever()
    theirs.index(([d.copy() for d in corpus[0]], dict(corpus[1])), show_progress=False)
    ours.index(([d.copy() for d in corpus[0]], dict(corpus[1])), show_progress=False)
    again = pickle.loads(pickle.dumps(ours))
    for key in ("data", "indices", "indptr"):
        assert theirs.scores[key].tobytes() == ours.scores[key].tobytes() == again.scores[key].tobytes()
