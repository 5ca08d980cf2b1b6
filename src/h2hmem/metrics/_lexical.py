"""Per-question lexical scores: set-based precision/recall/F1, BLEU-1 and exact match.

Definitions: ``docs/metric-definitions.md`` §1 (the official ones, bit-compatible). Worked example:
pred "The capital is Paris.", ref "Paris" → content sets {capital, paris} and {paris}:
precision 0.5, recall 1.0, F1 0.6667; BLEU-1 on [the, capital, is, paris] vs [paris] = 1/4
(clipped unigram precision; no brevity penalty since pred is longer). Known flaw kept on purpose: pred "No", ref "No" scores F1 0
("no" is a stopword) but BLEU-1 1.0 and exact match 1.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel

from ._tokenize import content_tokens, normalize_answer, tokenize


class LexicalScores(BaseModel):
    """Lexical scores of one answer, each in [0, 1]."""

    precision: float
    recall: float
    f1: float
    bleu1: float
    exact_match: float
    """1.0 when the normalised answers are equal, else 0.0."""


ZERO = LexicalScores(precision=0.0, recall=0.0, f1=0.0, bleu1=0.0, exact_match=0.0)
"""Scores of a failed answer (the method errored): zero everywhere (docs/metric-definitions.md §3)."""


@lru_cache(maxsize=1)
def _bleu():
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    return sentence_bleu, SmoothingFunction().method4


def bleu1(pred_tokens: list[str], ref_tokens: list[str]) -> float:
    """Official BLEU-1: NLTK ``sentence_bleu([ref], pred, weights=(1, 0, 0, 0),
    smoothing_function=SmoothingFunction().method4)``; 0.0 when either side is empty.

    Equals clipped unigram precision × brevity penalty ``exp(1 − |ref|/|pred|)`` (penalty 1 when
    pred is not shorter than ref).
    """
    if not pred_tokens or not ref_tokens:
        return 0.0
    sentence_bleu, method4 = _bleu()
    # weights=(1,) gives the same float as (1, 0, 0, 0): NLTK sums w·log(p) over the orders with
    # p > 0, and a zero weight adds exactly 0.0; skipping orders 2–4 halves the cost
    # (tests/metrics/test_lexical.py checks the two agree bit for bit).
    return float(sentence_bleu([ref_tokens], pred_tokens, weights=(1,), smoothing_function=method4))


def set_prf(pred_tokens: list[str], ref_tokens: list[str]) -> tuple[float, float, float]:
    """Set-based (precision, recall, F1) of two token lists; 0 for an empty side or no overlap."""
    p, r = set(pred_tokens), set(ref_tokens)
    common = len(p & r)
    if not common:
        return 0.0, 0.0, 0.0
    precision = common / len(p)
    recall = common / len(r)
    return precision, recall, 2 * precision * recall / (precision + recall)


def lexical_scores(pred: str, ref: str) -> LexicalScores:
    """Score the system answer ``pred`` against the gold ``ref`` (``original_answer``).

    Both are stripped first. Precision/recall/F1 use content tokens (stopwords removed);
    BLEU-1 keeps stopwords; exact match compares :func:`normalize_answer` forms.

    Raises:
        TokenizerUnavailableError: NLTK or the shipped stopword list is missing.
    """
    pred, ref = pred.strip(), ref.strip()
    pred_toks, ref_toks = tokenize(pred), tokenize(ref)
    precision, recall, f1 = set_prf(content_tokens(pred_toks), content_tokens(ref_toks))
    return LexicalScores(
        precision=precision,
        recall=recall,
        f1=f1,
        bleu1=bleu1(pred_toks, ref_toks),
        exact_match=float(normalize_answer(pred) == normalize_answer(ref)),
    )
