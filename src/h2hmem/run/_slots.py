"""Call slots: at most ``concurrency`` calls through ``ctx.chat`` in flight, with questions prepared ahead.

The runner starts up to twice ``concurrency`` questions at once and bounds the *calls* here, not the
questions. A question's own work before its call (retrieval, prompt rendering) then runs while the
calls of other questions are in flight, and when a reply frees a slot a prepared request is sent at
once, instead of after the next question's retrieval. Waiting for a slot is not the question's
latency: the question's tally counts the time in which its calls only waited for a slot
(:meth:`~h2hmem.run._tally.Tally.slot_change`), and the runner subtracts it from ``latency_s``, as it
never counted the wait for a question slot.

The slots bound every call through ``ctx.chat``: the answer calls, and the memory-build calls of a
method that builds with the answer model (no separate build model). The model client keeps its own
concurrency limit as well; the slots hold for any ``chat_model`` object a caller passes, whatever its
own limit. Calls a product makes through the gateway run in the gateway's tasks, outside any
question: their slot wait stays in the question's ``latency_s``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..llm import ChatResult, GenerationConfig, Message, Stage
from ._tally import Tally, current_tally
from ._wrap import ChatWrapper


class SlottedChat(ChatWrapper):
    """A chat model whose ``chat()`` holds one of ``slots`` for the call; everything else is
    forwarded to the inner model.

    ``slots``: the run's semaphore of ``concurrency`` slots (created on the run's event loop), shared
    by every dialogue's ``ctx.chat``. A call never holds a slot while waiting for another, so the
    slots cannot deadlock.
    """

    def __init__(self, inner: Any, slots: asyncio.Semaphore):
        super().__init__(inner)
        self.slots = slots

    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: Stage = "answer"
    ) -> ChatResult:
        tally = current_tally() or Tally()  # outside a question (a build step): counted nowhere
        tally.slot_change(waiting=+1)
        try:
            await self.slots.acquire()
        except BaseException:
            tally.slot_change(waiting=-1)
            raise
        tally.slot_change(waiting=-1, holding=+1)
        try:
            result: ChatResult = await self.inner.chat(messages, config, stage=stage)
        finally:
            self.slots.release()
            tally.slot_change(holding=-1)
        return result


def slotted(model: Any, slots: asyncio.Semaphore) -> Any:
    """``model`` wrapped in :class:`SlottedChat` (None stays None)."""
    return None if model is None else SlottedChat(model, slots)
