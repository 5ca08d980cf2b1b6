"""Token budgets for full-context methods: count with the model's tokenizer, keep the most recent turns."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

DEFAULT_CONTEXT_TOKENS = 4096
"""Fallback context when the model does not say its own (the official cap was 4,096)."""
PROMPT_OVERHEAD_TOKENS = 256
"""Room kept for the system prompt, the question and the per-task instruction."""


def token_counter(model: Any) -> tuple[Callable[[str], int], str]:
    """``model.count_tokens`` when the backend has one, else a ⌈chars/4⌉ estimate (recorded by callers)."""
    fn = getattr(model, "count_tokens", None)
    if callable(fn):
        return fn, "model"
    return (lambda text: math.ceil(len(text) / 4)), "chars/4"


def context_budget(model: Any, context_tokens: int | None, answer_tokens: int | None) -> int:
    """Tokens available for memory: the context window minus the answer and prompt overhead.

    ``answer_tokens`` None (an answer config with no ``max_tokens`` limit) reserves nothing for the answer.
    """
    window = context_tokens or getattr(model, "context_tokens", None) or DEFAULT_CONTEXT_TOKENS
    return max(0, int(window) - (answer_tokens or 0) - PROMPT_OVERHEAD_TOKENS)


def keep_most_recent(costs: list[int], budget: int) -> int:
    """Index of the first unit to keep so that the kept suffix of ``costs`` fits ``budget``.

    Example: costs [5, 5, 5], budget 11 → 1 (keep the last two). Returns ``len(costs)`` when
    not even the last unit fits.
    """
    total = 0
    for i in range(len(costs) - 1, -1, -1):
        if total + costs[i] > budget:
            return i + 1
        total += costs[i]
    return 0
