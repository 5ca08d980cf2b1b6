"""The official tokenizer, the shipped stopword list and the exact-match normaliser."""

from __future__ import annotations

import string
import sys

import pytest
from bm25s.stopwords import STOPWORDS_EN_PLUS
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import word_tokenize
from nltk.tokenize.punkt import PunktSentenceTokenizer

from h2hmem.metrics import (
    TokenizerUnavailableError,
    _tokenize,
    content_tokens,
    english_stopwords,
    normalize_answer,
    tokenize,
)

CONTRACTIONS_2025 = {
    "they've",
    "i'll",
    "i'd",
    "they'll",
    "he's",
    "i'm",
    "he'd",
    "it'd",
    "i've",
    "it'll",
    "she'd",
    "they'd",
    "we'd",
    "we're",
    "we'll",
    "we've",
    "he'll",
    "they're",
    "she'll",
}


def test_stopword_list_is_nltk_current_english_list():
    words = english_stopwords()
    assert len(words) == 198
    assert words == set(STOPWORDS_EN_PLUS) | CONTRACTIONS_2025
    assert {"no", "not", "the", "don't", "i'm"} <= words


def test_contraction_splits_and_punctuation_dropped():
    assert tokenize("I don't know.") == ["i", "do", "n't", "know"]
    assert tokenize('He said "Hello", then left!') == ["he", "said", "hello", "then", "left"]


def test_multi_sentence_period_is_split_off():
    # word_tokenize(text, preserve_line=True) on the whole text would keep "sleep." glued.
    assert word_tokenize("he went to sleep. then he woke.", preserve_line=True)[3] == "sleep."
    assert tokenize("He went to   sleep.\nThen he woke.") == ["he", "went", "to", "sleep", "then", "he", "woke"]


def test_untrained_punkt_splits_after_abbreviation():
    # documented difference from the trained model: "mr." ends a sentence, its period is dropped
    assert tokenize("Mr. Smith came.") == ["mr", "smith", "came"]


def test_unicode_dash_kept_as_token_but_removed_from_content():
    toks = tokenize("2019–2020 season")
    assert toks == ["2019", "–", "2020", "season"]
    assert content_tokens(toks) == ["2019", "2020", "season"]


def test_empty_and_whitespace():
    assert tokenize("") == []
    assert tokenize(" \n\t ") == []
    assert tokenize("... !!") == []


def test_content_tokens_drop_stopwords_keep_negation_clitic():
    assert content_tokens(tokenize("I don't know.")) == ["n't", "know"]
    assert content_tokens(tokenize("No")) == []


def test_normalize_answer():
    assert normalize_answer("  Yes, he DID. ") == "yes he did"
    assert normalize_answer("“Not  mentioned”—") == "not mentioned"
    assert normalize_answer("No.") == normalize_answer("no")


_WORDS = [
    "i",
    "don't",
    "Can't",
    "sleep.",
    "Mr.",
    "e.g.",
    "it's",
    "they're",
    "paris",
    "'quoted'",
    '"hi"',
    "(x)",
    "a,b",
    "3.5",
    "...",
    "--",
    "well;",
    "yes!",
    "no?",
    "it’s",
    "“so”",
    "–",
    "$5",
    "rock'n'roll",
    "o'clock",
    "gonna",
    "U.S.",
    "end.",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(_WORDS) | st.text(alphabet=string.ascii_letters + string.punctuation + " .\n", max_size=12),
        max_size=25,
    )
)
def test_tokenize_equals_punkt_then_word_tokenize(parts):
    text = " ".join(parts)
    norm = " ".join(text.lower().split())
    expected = [
        t
        for s in PunktSentenceTokenizer().tokenize(norm)
        for t in word_tokenize(s, preserve_line=True)
        if t and not all(c in string.punctuation for c in t)
    ]
    assert tokenize(text) == expected


def test_missing_nltk_fails_clearly(monkeypatch):
    _tokenize._tokenizers.cache_clear()
    monkeypatch.setitem(sys.modules, "nltk.tokenize", None)
    try:
        with pytest.raises(TokenizerUnavailableError, match="nltk"):
            tokenize("hello")
    finally:
        _tokenize._tokenizers.cache_clear()


def test_missing_stopword_file_fails_clearly(monkeypatch, tmp_path):
    class _Files:
        @staticmethod
        def files(_pkg):
            return tmp_path

    _tokenize.english_stopwords.cache_clear()
    monkeypatch.setattr(_tokenize, "resources", _Files)
    try:
        with pytest.raises(TokenizerUnavailableError, match="stopwords_en.txt"):
            english_stopwords()
    finally:
        monkeypatch.undo()
        _tokenize.english_stopwords.cache_clear()
        _tokenize._stop_tokens.cache_clear()


def test_tokenize_equals_reference_pipeline_on_real_sample(sample_root):
    from h2hmem.data import load_dataset

    texts = [t for q in load_dataset(sample_root).questions for t in (q.text, q.gold)]
    punkt = PunktSentenceTokenizer()
    for text in texts:
        norm = " ".join(text.lower().split())
        expected = [
            t
            for s in punkt.tokenize(norm)
            for t in word_tokenize(s, preserve_line=True)
            if t and not all(c in string.punctuation for c in t)
        ]
        assert tokenize(text) == expected, text
