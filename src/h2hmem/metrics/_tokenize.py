"""The official lexical tokenizer, stopword list and exact-match normaliser.

Definitions: ``docs/metric-definitions.md`` §1 (bit-compatible with the official scorer):

1. lowercase, collapse whitespace runs to one space, strip;
2. split into sentences with NLTK Punkt (``PunktSentenceTokenizer()`` with default parameters: the
   trained ``punkt_tab`` model cannot be downloaded everywhere; both split lowercase text at
   ". " and differ only around abbreviations such as "mr.");
3. tokenize each sentence with NLTK's Treebank-style word tokenizer (what
   ``word_tokenize(sentence, preserve_line=True)`` runs: "don't" → "do", "n't"; "sleep." →
   "sleep", ".");
4. drop empty tokens and tokens made only of ASCII punctuation.

Nothing here reads downloaded NLTK data, and nothing falls back to another tokenizer: a missing
piece raises :class:`TokenizerUnavailableError` (docs/official-pitfalls.md #13).
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from functools import lru_cache
from importlib import resources
from typing import Any

_WS = re.compile(r"\s+")
_ASCII_PUNCT = frozenset(string.punctuation)

EXTRA_STOP_SYMBOLS: frozenset[str] = frozenset(
    [".", ",", "!", "?", ";", ":", '"', "'", "(", ")", "[", "]", "{", "}", "-", "–", "—", "...", ".."]
)
"""Symbols removed with the stopwords for precision/recall/F1 (docs/metric-definitions.md §1)."""


class TokenizerUnavailableError(RuntimeError):
    """NLTK or the shipped stopword list is missing; lexical scores cannot be computed exactly."""


@lru_cache(maxsize=1)
def _tokenizers():
    try:
        from nltk.tokenize import NLTKWordTokenizer
        from nltk.tokenize.punkt import PunktSentenceTokenizer
    except ImportError as e:  # pragma: no cover - nltk is a core dependency
        raise TokenizerUnavailableError(
            f"lexical metrics need NLTK's Punkt and Treebank tokenizers ({e}); "
            "install nltk>=3.9 (pip install 'nltk>=3.9'). No other tokenizer is used as a fallback."
        ) from None
    # word_tokenize(s, preserve_line=True) is exactly NLTKWordTokenizer().tokenize(s). Both
    # objects are built once. NLTK >= 3.10 wraps each of its ~25 fixed patterns in a per-call
    # ReDoS timeout guard that doubles the cost; the subclass applies the same compiled
    # patterns (same `regex` engine) without the guard, so 2,236 pairs score in under a second.
    # Equality with word_tokenize is checked in tests/metrics/test_tokenize.py.
    return PunktSentenceTokenizer(), _unguarded(NLTKWordTokenizer)()


def _unguarded(cls: type[Any]) -> type:
    def raw(pattern):
        return getattr(pattern, "_rx", pattern)

    attrs: dict[str, Any] = {}
    for name in ("STARTING_QUOTES", "ENDING_QUOTES", "PUNCTUATION"):
        attrs[name] = [(raw(p), sub) for p, sub in getattr(cls, name)]
    for name in ("PARENS_BRACKETS", "DOUBLE_DASHES"):
        p, sub = getattr(cls, name)
        attrs[name] = (raw(p), sub)
    attrs["CONTRACTIONS2"] = [raw(p) for p in cls.CONTRACTIONS2]
    attrs["CONTRACTIONS3"] = [raw(p) for p in cls.CONTRACTIONS3]
    return type("_WordTokenizer", (cls,), attrs)


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """NLTK's current English stopword list (198 words), shipped as ``stopwords_en.txt``.

    Raises:
        TokenizerUnavailableError: the package data file is missing (a broken install).
    """
    try:
        text = resources.files("h2hmem.metrics").joinpath("stopwords_en.txt").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as e:
        raise TokenizerUnavailableError(
            f"package data h2hmem/metrics/stopwords_en.txt is missing ({e}); reinstall h2hmem"
        ) from None
    words = frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))
    if len(words) != 198:
        raise TokenizerUnavailableError(f"h2hmem/metrics/stopwords_en.txt holds {len(words)} words, expected 198")
    return words


@lru_cache(maxsize=1)
def _stop_tokens() -> frozenset[str]:
    return english_stopwords() | EXTRA_STOP_SYMBOLS


def _is_ascii_punct(token: str) -> bool:
    return all(c in _ASCII_PUNCT for c in token)


def tokenize(text: str) -> list[str]:
    """Official lexical tokens of ``text`` (stopwords kept; used for BLEU-1).

    Example: ``tokenize("I don't  sleep. Ok!")`` → ``["i", "do", "n't", "sleep", "ok"]``.

    Raises:
        TokenizerUnavailableError: NLTK is missing.
    """
    sentences, words = _tokenizers()
    norm = _WS.sub(" ", text.lower()).strip()
    if not norm:
        return []
    return [
        tok for sent in sentences.tokenize(norm) for tok in words.tokenize(sent) if tok and not _is_ascii_punct(tok)
    ]


def content_tokens(tokens: list[str]) -> list[str]:
    """``tokens`` without NLTK English stopwords and the extra symbols (for precision/recall/F1)."""
    stop = _stop_tokens()
    return [t for t in tokens if t not in stop]


def normalize_answer(text: str) -> str:
    """Exact-match normal form: lowercase, every Unicode punctuation character removed,
    whitespace runs collapsed to one space, stripped. ``"No."`` → ``"no"``.

    Our own column (docs/metric-definitions.md §1), so punctuation means any Unicode category ``P*``
    (curly quotes and dashes included), not only ASCII.
    """
    return _WS.sub(" ", text.lower().translate(_punct_table())).strip()


@lru_cache(maxsize=1)
def _punct_table() -> dict[int, None]:
    return {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)).startswith("P")}
