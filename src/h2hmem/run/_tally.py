"""Usage and cache accounting per question, owned by the runner (methods report neither).

The runner hands a method its models wrapped in :class:`TalliedChat`; while a question's hook runs
inside :func:`tally_question`, every call the method makes through them — however many, through
``ctx.chat`` or ``ctx.build_chat`` — adds its usage to that question's :class:`Tally`. The tally is a
:mod:`contextvars` variable, so concurrent questions (each its own asyncio task) never mix.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..llm import ChatResult, GenerationConfig, Message, Stage, Usage
from ._wrap import ChatWrapper


@dataclass
class Tally:
    """What the model calls behind one question used."""

    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cached_calls: int = 0
    slot_wait_s: float = 0.0
    """Seconds in which a call of the question waited for one of the run's call slots (:mod:`._slots`) while
    none of its calls held one: time the question only waited. (Two of its calls side by side, one waiting
    while the other runs, add nothing; both waiting count once.)"""
    _waiting: int = field(default=0, repr=False)
    _holding: int = field(default=0, repr=False)
    _blocked_since: float | None = field(default=None, repr=False)

    def slot_change(self, waiting: int = 0, holding: int = 0) -> None:
        """Count calls that start (+1) or stop (−1) waiting for a slot, or holding one, and add to
        :attr:`slot_wait_s` the time in which at least one waited and none held one."""
        now = time.perf_counter()
        self._waiting += waiting
        self._holding += holding
        blocked = self._waiting > 0 and self._holding == 0
        if blocked and self._blocked_since is None:
            self._blocked_since = now
        elif not blocked and self._blocked_since is not None:
            self.slot_wait_s += now - self._blocked_since
            self._blocked_since = None

    @property
    def cached(self) -> bool:
        """True when there was at least one call and every call was a cache hit."""
        return self.calls > 0 and self.cached_calls == self.calls


_current: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("h2hmem_question_tally", default=None)


@contextlib.contextmanager
def tally_question(tally: Tally | None = None) -> Iterator[Tally]:
    """Count the calls made through :class:`TalliedChat` models in this block into ``tally`` (a fresh
    :class:`Tally` when None)."""
    tally = tally if tally is not None else Tally()
    token = _current.set(tally)
    try:
        yield tally
    finally:
        _current.reset(token)


def current_tally() -> Tally | None:
    """The tally of the question running in this task (None outside :func:`tally_question`)."""
    return _current.get()


class TalliedChat(ChatWrapper):
    """A chat model whose every ``chat()`` result is added to the tally of the running question (if any);
    everything else is forwarded to the inner model."""

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        result: ChatResult = await self.inner.chat(messages, config, stage=stage)
        tally = _current.get()
        if tally is not None:
            tally.usage = tally.usage + result.usage
            tally.calls += 1
            tally.cached_calls += bool(result.cached)
        return result


def tallied(model: Any) -> Any:
    """``model`` wrapped in :class:`TalliedChat` (None stays None)."""
    return None if model is None else TalliedChat(model)
