"""Facts about known OpenAI-compatible models: context window and tiktoken encoding."""

from __future__ import annotations

CONTEXT_TOKENS: dict[str, int] = {
    "gpt-4o": 128_000,  # OpenAI model docs
    "gpt-4o-mini": 128_000,  # OpenAI model docs
    "gpt-4.1": 1_047_576,  # OpenAI model docs (GPT-4.1 family: 1,047,576 tokens)
    "gpt-4-turbo": 128_000,  # OpenAI model docs
    "gpt-4": 8_192,  # OpenAI model docs
    "gpt-3.5-turbo": 16_385,  # OpenAI model docs
    "qwen2.5-vl": 32_768,  # Qwen2.5-VL model cards (default config, without YaRN)
    "qwen2-vl": 32_768,  # Qwen2-VL model cards
}
"""Context window (tokens) by model-name prefix (lower case; an ``org/`` prefix is ignored)."""

DEFAULT_CONTEXT_TOKENS = 8_192
"""Assumed context window of an unknown model (conservative); override with ``context_tokens``."""


def _norm(model: str) -> str:
    return model.rsplit("/", 1)[-1].lower()


def _lookup(model: str, table: dict[str, int]) -> int | None:
    name = _norm(model)
    matches = [k for k in table if name.startswith(k)]
    return table[max(matches, key=len)] if matches else None


def context_tokens_for(model: str) -> int:
    """Context window of ``model`` (longest matching prefix in :data:`CONTEXT_TOKENS`), else
    :data:`DEFAULT_CONTEXT_TOKENS`."""
    return _lookup(model, CONTEXT_TOKENS) or DEFAULT_CONTEXT_TOKENS


def encoding_for(model: str) -> str:
    """tiktoken encoding used to count ``model``'s tokens: ``o200k_base`` for gpt-4o, gpt-4.1 and
    o-series models, else ``cl100k_base`` (exact for gpt-4/3.5, an approximation for other vendors)."""
    name = _norm(model)
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base"
    return "cl100k_base"
