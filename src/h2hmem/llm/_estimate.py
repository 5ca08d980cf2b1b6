"""Counting a request before it is sent: prompt tokens, a cache look-up, a worst-case cost.

Used by dry runs (nothing is sent) and by the budget guard (``--max-cost``), so both count a
request exactly the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._cache import CacheEntry
from ._images import flatten_text, prepare_messages
from ._prices import Prices, price_for
from ._types import GenerationConfig, ImagePart, Message, TextPart

IMAGE_TOKENS = 765
"""Prompt tokens counted per image sent: OpenAI's high-detail cost of a 1024 × 1024 image (our
images are scaled to a 1,024-px long side): 85 base + 170 × 4 tiles (OpenAI vision pricing docs)."""

MESSAGE_OVERHEAD_TOKENS = 3
"""Chat-format tokens per message (``<|start|>role…<|end|>``), plus the same again per request
for the reply's priming (OpenAI cookbook, "How to count tokens with tiktoken")."""


@dataclass(frozen=True)
class RequestCount:
    """What one request would send."""

    text_tokens: int
    """Tokens of the message texts, as the server receives them (text parts joined by newlines)."""
    images: int
    """Image parts sent as pixels."""
    messages: int

    @property
    def prompt_tokens(self) -> int:
        """Text tokens + :data:`IMAGE_TOKENS` per image (the chat-format overhead is apart)."""
        return self.text_tokens + IMAGE_TOKENS * self.images

    @property
    def format_tokens(self) -> int:
        """:data:`MESSAGE_OVERHEAD_TOKENS` per message and per request."""
        return MESSAGE_OVERHEAD_TOKENS * (self.messages + 1)


def count_request(model: Any, messages: list[Message]) -> RequestCount:
    """Count ``messages`` as ``model`` (a :class:`~h2hmem.llm.ModelClient`) would send them: images
    replaced by text for text-only models or missing files, tokens counted with the model's
    tokenizer (``model.count_tokens``; cl100k when it has none)."""
    prepared, _ = prepare_messages(messages, send_images=bool(getattr(model, "supports_images", False)))
    count: Callable[[str], int]
    model_count = getattr(model, "count_tokens", None)
    if callable(model_count):
        count = model_count
    else:
        from ._tokens import count_tokens

        count = count_tokens
    text_tokens = images = 0
    for m in prepared:
        flat = flatten_text(m.content)
        if flat is not None:
            text_tokens += count(flat)
        elif isinstance(m.content, list):  # holds images: text parts go on the wire one by one
            text_tokens += sum(count(p.text) for p in m.content if isinstance(p, TextPart))
            images += sum(isinstance(p, ImagePart) for p in m.content)
    return RequestCount(text_tokens=text_tokens, images=images, messages=len(prepared))


def cached_reply(model: Any, messages: list[Message], config: GenerationConfig) -> CacheEntry | None:
    """The request cache's reply to this request, without sending or storing anything (None when
    ``model`` has no cache, is refreshing it, or has no entry)."""
    cache = getattr(model, "cache", None)
    if cache is None or getattr(model, "refresh", False) or not hasattr(model, "cache_key"):
        return None
    prepared, _ = prepare_messages(messages, send_images=bool(getattr(model, "supports_images", False)))
    entry: CacheEntry | None = cache.get(model.cache_key(prepared, config))
    return entry


def model_name(model: Any) -> str:
    """The name prices are looked up by: the backend's model (``gpt-4o-mini``), else the spec's tail."""
    backend = getattr(model, "backend", None)
    name = getattr(backend, "model", None)
    return str(name) if name else str(getattr(model, "spec", "?")).partition(":")[2] or "?"


def is_free(model: Any) -> bool:
    """True for in-process models (no per-token price)."""
    return getattr(getattr(model, "backend", None), "kind", None) == "local" or str(
        getattr(model, "spec", "")
    ).startswith("local:")


def call_cost(model: Any, prompt_tokens: int, completion_tokens: int, prices: Prices | None) -> float | None:
    """USD of a call of ``model``; 0.0 for local models; None when no price is known."""
    if is_free(model):
        return 0.0
    price = price_for(model_name(model), prices)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
