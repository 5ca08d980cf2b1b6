"""Work that depends only on a memory's state, done once per state and reused by every question.

A method's answer prompt is often mostly a function of what it has observed: Full (Text)'s whole
rendered, tokenized and head-truncated history is the same for every question asked after the same
sessions (under the ``full`` protocol: one context per dialogue). A :class:`PerState` holds such
values until the method observes again (``clear()`` in ``observe``), so answering N questions costs
one rendering and one tokenization per state instead of N.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class PerState:
    """Values keyed by what else they depend on, valid until :meth:`clear` (the state changed).

    Example: ``self._per_state.get(("cut", budget), lambda: self._cut(lines, budget))`` computes the
    cut once per (state, budget); ``observe`` calls ``self._per_state.clear()``.

    Single event loop: ``compute`` is synchronous, so no two questions compute the same key at once.
    ``computed`` counts the values computed since construction (tests count work with it).
    """

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self.computed = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value stored under ``key`` for the current state, computed by ``compute()`` if missing."""
        try:
            value: T = self._values[key]
        except KeyError:
            value = self._values[key] = compute()
            self.computed += 1
        return value

    def clear(self) -> None:
        """Forget every value: the memory's state changed."""
        self._values.clear()
