"""Example h2hmem scorer plugin: ``answer-length``, the length of each answer in whitespace tokens.

``h2hmem evaluate RUN --metrics lexical,answer-length`` writes ``scores/answer-length.jsonl`` (one
:class:`AnswerLengthScore` per question) and the section ``metrics["answer-length"]`` of
``scores/summary.json``: micro/macro means with bootstrap CIs per split, sub-type, category,
difficulty and dialogue, like every metric. A failed answer has no length: its line says
``excluded: "failed_answer"`` and it is left out of the aggregate (``n`` and ``n_total`` count the
answered questions only).
Walk-through: ``docs/custom-metric.md`` in the h2hmem repository.
"""

from __future__ import annotations

from h2hmem.metrics import Scorer, ScoringContext, score_key
from h2hmem.records import Prediction, ScoreKey

__all__ = ["AnswerLengthScore", "AnswerLengthScorer", "answer_tokens"]


def answer_tokens(answer: str) -> int:
    """Whitespace-separated tokens of ``answer`` (``str.split()``: runs of spaces, tabs and
    newlines separate; leading and trailing whitespace is ignored)."""
    return len(answer.split())


class AnswerLengthScore(ScoreKey):
    """One line of ``scores/answer-length.jsonl``: the question's labels, ``failed``,
    ``prediction_hash`` (from :class:`~h2hmem.records.ScoreKey`) and the answer's length."""

    answer_tokens: int | None = None
    """Whitespace-separated tokens of the answer; None for a failed answer (no answer to count)."""
    excluded: str | None = None
    """``"failed_answer"`` when the method failed on the question (left out of the aggregate)."""


class AnswerLengthScorer(Scorer):
    """The ``answer-length`` metric: tokens per answer, failed answers excluded."""

    name = "answer-length"
    record_type = AnswerLengthScore
    fields = ("answer_tokens",)
    titles = {"answer_tokens": "Answer length (whitespace tokens)"}

    def score(self, predictions: list[Prediction], context: ScoringContext) -> list[AnswerLengthScore]:
        return [
            AnswerLengthScore(**score_key(p), answer_tokens=None, excluded="failed_answer")
            if p.failed
            else AnswerLengthScore(**score_key(p), answer_tokens=answer_tokens(p.answer or ""))
            for p in predictions
        ]
