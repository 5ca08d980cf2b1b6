"""Metrics: lexical scores, LLM judge, evidence recall@k, aggregation (spec/metrics.md)."""

from ._lexical import LexicalScores, bleu1, lexical_scores, set_prf
from ._tokenize import TokenizerUnavailableError, content_tokens, english_stopwords, normalize_answer, tokenize

__all__ = [
    "LexicalScores", "TokenizerUnavailableError", "bleu1", "content_tokens", "english_stopwords",
    "lexical_scores", "normalize_answer", "set_prf", "tokenize",
]
