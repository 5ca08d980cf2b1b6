"""Token, call and cost accounting of model calls (in predictions, manifests, judge summaries)."""

from __future__ import annotations

from ._base import Record


class Usage(Record):
    """Tokens, calls and cost. ``+`` adds two usages."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    """Model calls actually sent (cache hits excluded)."""
    cached_calls: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    """Summed wall time of the calls (seconds)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
