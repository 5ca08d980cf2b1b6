"""Optional re-ranking of ``h2h``'s candidates by the answer model (``rerank=true``; off by default).

The retriever's best :data:`RERANK_CANDIDATES` turns are shown to the answer model, numbered, with
the question; it replies with the numbers of the turns needed to answer, most useful first. Those
turns move to the front in that order; the others keep the retriever's order behind them. A reply
with no usable number leaves the ranking as it was. One extra model call per question (counted in
the answer's usage and ``details.rerank_calls``), with a short reply (:data:`RERANK_CONFIG`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...llm import GenerationConfig, Message

RERANK_CANDIDATES = 15
"""Turns shown to the model (the top of the retriever's ranking)."""
RERANK_CONFIG = GenerationConfig(temperature=0.0, max_tokens=48)
"""Deterministic, and a list of numbers is short."""
RERANK_SYSTEM = (
    "You pick the conversation turns needed to answer a question. Reply only with the numbers of "
    "the needed turns, most useful first, separated by commas (e.g. 4, 1). Include a turn that states "
    "a cause, a reason or what a word like 'it' or 'that' refers to when the question needs it."
)


def rerank_messages(question: str, candidates: Sequence[str]) -> list[Message]:
    """System and user messages: the question and the candidates numbered from 1."""
    listed = "\n".join(f"[{n}] {text}" for n, text in enumerate(candidates, start=1))
    return [
        Message(role="system", content=RERANK_SYSTEM),
        Message(role="user", content=f"Question: {question}\n\nTurns:\n{listed}\n\nNumbers of the needed turns:"),
    ]


def parse_ranking(reply: str, n: int) -> list[int]:
    """0-based candidate positions named in ``reply`` (numbers 1…``n``), first mention kept, in order.

    Example: "3, 1, 3 and 17" with n = 15 → [2, 0] (17 is out of range, the second 3 a repeat).
    """
    out: list[int] = []
    for m in re.finditer(r"\d+", reply):
        pos = int(m.group()) - 1
        if 0 <= pos < n and pos not in out:
            out.append(pos)
    return out


def apply_ranking(order: Sequence[int], picked: Sequence[int]) -> list[int]:
    """``order`` with its entries at positions ``picked`` moved to the front, in ``picked``'s order.

    Example: order [7, 3, 9, 1], picked [2, 0] → [9, 7, 3, 1].
    """
    front = [order[p] for p in picked]
    chosen = set(front)
    return front + [i for i in order if i not in chosen]
