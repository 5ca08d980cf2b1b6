"""Token prices and cost.

Default prices are USD per 1M tokens (input, output) from the OpenAI API pricing page
(https://openai.com/api/pricing, standard tier, text tokens), as listed on 2025-04-14 when the
GPT-4.1 family was published; cached-input discounts are not applied. Other models, or newer
prices: ``prices={...}`` here, ``--price MODEL=IN/OUT`` on the command line. Model names match by the longest known prefix, so dated snapshots such as
``gpt-4o-mini-2024-07-18`` get their family's price.
"""

from __future__ import annotations

import logging
import math

log = logging.getLogger(__name__)

Prices = dict[str, tuple[float, float]]

DEFAULT_PRICES: Prices = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}
"""USD per 1M (input, output) tokens; source: OpenAI API pricing page, as listed 2025-04-14."""

_warned: set[str] = set()


def valid_price(pair: tuple[float, float]) -> bool:
    """Both numbers finite and not negative (a NaN price would make every cost NaN: a ``--max-cost``
    that never stops, and ``NaN`` in manifest.json, which is not JSON)."""
    return len(pair) == 2 and all(math.isfinite(x) and x >= 0 for x in pair)


def price_for(model: str, prices: Prices | None = None) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens for ``model``: ``prices`` entries override the defaults;
    the longest key that ``model`` starts with wins; None if none matches."""
    table = {**DEFAULT_PRICES, **(prices or {})}
    if model in table:
        return table[model]
    matches = [k for k in table if model.startswith(k)]
    return table[max(matches, key=len)] if matches else None


def cost_usd(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Prices | None = None, *, warn: bool = True
) -> float:
    """Cost in USD of one call; 0.0 (with one logged warning per model) when the price is unknown."""
    price = price_for(model, prices)
    if price is None:
        if warn and model not in _warned:
            _warned.add(model)
            log.warning(
                "no price known for model %r; its cost is counted as 0 (give it with --price %s=IN/OUT, USD per "
                "million input/output tokens; in Python: prices={%r: (IN, OUT)})",
                model,
                model,
                model,
            )
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
