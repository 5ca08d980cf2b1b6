"""The ``lexical`` scorer: the official token-set precision/recall/F1, BLEU-1 and exact match."""

from __future__ import annotations

from typing import ClassVar

from ..records import LexicalScore, LexicalSection, Prediction
from ._lexical import ZERO, lexical_scores
from ._scorer import Scorer, ScoringContext, score_key

LEXICAL_FIELDS: tuple[str, ...] = ("f1", "bleu1", "exact_match", "precision", "recall")
LEXICAL_TITLES = {"f1": "F1 (official, set-based)", "bleu1": "BLEU-1 (official)", "exact_match": "Exact match"}


class LexicalScorer(Scorer):
    """``scores/lexical.jsonl``: :func:`~h2hmem.metrics.lexical_scores` of each answer against the
    gold answer (docs/metric-definitions.md §1, each in [0, 1]); a failed answer scores 0."""

    name = "lexical"
    record_type = LexicalScore
    fields = LEXICAL_FIELDS
    section_type = LexicalSection
    titles: ClassVar[dict[str, str]] = LEXICAL_TITLES

    def score(self, predictions: list[Prediction], context: ScoringContext) -> list[LexicalScore]:
        return [
            LexicalScore(**score_key(p), **(ZERO if p.failed else lexical_scores(p.answer or "", p.gold)).model_dump())
            for p in predictions
        ]
