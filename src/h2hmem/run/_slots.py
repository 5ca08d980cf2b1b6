"""Call slots: at most ``concurrency`` answer-model calls of a run in flight, with questions prepared ahead.

The runner starts up to twice ``concurrency`` questions at once and bounds the *calls* here, not the
questions. A question's own work before its call (retrieval, prompt rendering) then runs while the
calls of other questions are in flight, and when a reply frees a slot a prepared request is sent at
once, instead of after the next question's retrieval. Waiting for a slot is not the question's
latency: the wait is added to the question's tally (:func:`~h2hmem.run._tally.note_slot_wait`) and
the runner subtracts it from ``latency_s``, as it never counted the wait for a question slot.

The model client keeps its own concurrency limit (shared with the memory-build calls); this one holds
for any ``chat_model`` object a caller passes, whatever its own limit.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..llm import ChatResult, GenerationConfig, Message, Stage
from ._tally import note_slot_wait


class SlottedChat:
    """A chat model whose ``chat()`` holds one of ``slots`` for the call; everything else is
    forwarded to the inner model.

    ``slots``: the run's semaphore of ``concurrency`` slots (created on the run's event loop), shared
    by every dialogue's ``ctx.chat``. A call never holds a slot while waiting for another, so the
    slots cannot deadlock.
    """

    def __init__(self, inner: Any, slots: asyncio.Semaphore):
        self.inner = inner
        self.slots = slots

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        t0 = time.perf_counter()
        async with self.slots:
            note_slot_wait(time.perf_counter() - t0)
            result: ChatResult = await self.inner.chat(messages, config, stage=stage)
        return result


def slotted(model: Any, slots: asyncio.Semaphore) -> Any:
    """``model`` wrapped in :class:`SlottedChat` (None stays None)."""
    return None if model is None else SlottedChat(model, slots)
