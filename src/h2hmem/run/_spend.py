"""``--max-cost``: stop a run cleanly before its model calls would cost more than a budget.

Every chat model of the run is wrapped in a :class:`BudgetGuard` sharing one :class:`Budget`.
Before a call is sent, its worst case — prompt tokens (counted as the dry run counts them, chat
format included) at the input price plus ``max_tokens`` at the output price — is reserved; if
what was spent plus what is reserved for calls in flight plus this worst case would pass the
budget, the call is refused with :class:`BudgetExhausted` and every later call too. Cache hits
cost nothing and always pass. The real cost of a reply replaces its reservation.

:class:`BudgetExhausted` is a ``BaseException`` on purpose: method code that catches
``Exception`` around a model call (to fall back, or to record a failed answer) must not turn a
budget stop into an answer. The runner catches it, keeps every answer already recorded, and
marks the run ``stopped: budget`` — rerunning the command (with a higher ``--max-cost`` or none)
resumes exactly where it stopped: no answer is lost or repeated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..llm import (
    ChatResult,
    GenerationConfig,
    Message,
    Prices,
    Stage,
    cached_reply,
    call_cost,
    count_request,
    model_name,
)
from ._wrap import ChatWrapper


class BudgetExhausted(BaseException):
    """The next model call could pass the run's ``--max-cost`` (nothing was sent)."""


class UnpricedModelError(ValueError):
    """``--max-cost`` was given for a model without a known price (add ``--price MODEL=IN/OUT``)."""


@dataclass
class Budget:
    """Shared spending state of one invocation (one event loop: no lock needed)."""

    limit_usd: float
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    refused: str | None = None
    """Why the first call was refused (None while within budget)."""


class BudgetGuard(ChatWrapper):
    """A :class:`~h2hmem.llm.ChatModel` that forwards to ``inner`` while the budget allows.

    Every attribute besides ``chat`` (``spec``, ``count_tokens``, ``usage_by_stage``, ``aclose``…)
    is the inner model's.
    """

    def __init__(self, inner: Any, budget: Budget, prices: Prices | None = None):
        super().__init__(inner)
        self.budget = budget
        self.prices = prices
        if call_cost(inner, 1_000_000, 0, prices) is None:
            raise UnpricedModelError(
                f"--max-cost needs the price of model {model_name(inner)!r}, which is not in the "
                f"built-in table; give it with --price {model_name(inner)}=IN/OUT "
                "(USD per million input/output tokens)"
            )

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        config = config or GenerationConfig()
        b = self.budget
        if b.refused is not None:
            raise BudgetExhausted(b.refused)
        if cached_reply(self.inner, messages, config) is not None:
            return await self.inner.chat(messages, config, stage=stage)
        n = count_request(self.inner, messages)
        prompt = n.prompt_tokens + n.format_tokens
        if config.max_tokens is None:
            if call_cost(self.inner, prompt, 0, self.prices):  # a priced model: no worst case without a limit
                raise ValueError(
                    f"--max-cost cannot bound a call of model {model_name(self.inner)!r} without max_tokens "
                    "(the generation config sets no completion limit)"
                )
            worst = 0.0  # a free (or unpriced) model costs nothing whatever it writes
        else:
            worst = call_cost(self.inner, prompt, config.max_tokens, self.prices) or 0.0
        if b.spent_usd + b.reserved_usd + worst > b.limit_usd:
            b.refused = (
                f"budget of {_usd(b.limit_usd)} cannot cover the next {stage} call: {_usd(b.spent_usd)} spent, "
                f"{_usd(b.reserved_usd)} in flight, and the call could cost up to {_usd(worst)}"
            )
            raise BudgetExhausted(b.refused)
        b.reserved_usd += worst
        try:
            result = await self.inner.chat(messages, config, stage=stage)
        finally:
            b.reserved_usd -= worst
        b.spent_usd += (
            result.usage.cost_usd
            if result.usage.cost_usd
            else (call_cost(self.inner, result.usage.prompt_tokens, result.usage.completion_tokens, self.prices) or 0.0)
        )
        return result


def guard_models(limit_usd: float | None, prices: Prices | None, *models: Any) -> tuple[Budget | None, list[Any]]:
    """``(budget, models wrapped in guards)``; ``(None, models)`` unchanged when there is no limit.
    The same model object given twice gets the same guard."""
    if limit_usd is None:
        return None, list(models)
    budget = Budget(limit_usd)
    guards: dict[int, Any] = {}
    out: list[Any] = []
    for m in models:
        if m is None:
            out.append(None)
            continue
        if id(m) not in guards:
            guards[id(m)] = BudgetGuard(m, budget, prices)
        out.append(guards[id(m)])
    return budget, out


def _usd(v: float) -> str:
    """``$0.0040``, ``$0.0000123``: at least 4 decimals, more for amounts below them (a budget of
    $0.0001 is spent by calls costing millionths), up to 10."""
    whole, _, frac = f"{v:.10f}".rstrip("0").partition(".")
    return f"${whole}.{frac.ljust(4, '0')}"
