"""The sync entry points of the async public functions (``evaluate_run`` → ``aevaluate_run``, …).

Each long public function has an ``a``-prefixed coroutine twin that holds its body; the sync one
is :func:`run_sync` around it: it starts an event loop with :func:`asyncio.run`, and inside a
running loop (a Jupyter notebook, an async web app) it refuses with an error naming the twin to
await — ``asyncio.run`` cannot nest, and a blocked loop would stall the caller's other tasks.
Bottom-layer module (standard library only), beside :mod:`h2hmem._atomic`.

Interrupts: in the main thread, :func:`run_sync` handles SIGINT itself as ``asyncio.run`` does —
the first one cancels the coroutine, which finalises its files (a run's manifest, an evaluation's
score set) and the call then raises :class:`KeyboardInterrupt` — with one difference: another
SIGINT within :data:`REPEAT_GRACE_S` of the first is taken as the same stop and ignored, where
``asyncio.run`` raised :class:`KeyboardInterrupt` at once, in the middle of the finalisation. GNU
``timeout`` and process managers signal both the command and its process group, so one stop
arrives twice. A later SIGINT still forces the exit.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

REPEAT_GRACE_S = 2.0
"""An interrupt this soon (seconds) after the first is the same stop delivered again, and is ignored."""


class InRunningLoopError(RuntimeError):
    """A sync entry point was called inside a running event loop; await its async twin instead."""


def in_running_loop() -> bool:
    """True when called from code that an event loop is running (a coroutine, a notebook cell)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(make: Callable[[], Coroutine[Any, Any, T]], twin: str, *, args: str = "...", loop_free: bool = False) -> T:
    """Run the coroutine ``make()`` to completion from sync code and return its result.

    Args:
        make: builds the coroutine (called only when it can run, so no coroutine is left un-awaited).
        twin: the async twin's name, e.g. ``"aevaluate_run"``; the sync name is it without the ``a``.
        args: the arguments shown in the hint, e.g. ``"config, ..."``.
        loop_free: the call will not wait on anything (e.g. scoring without the judge), so inside a
            running loop it is run to completion in place instead of being refused.

    Raises:
        InRunningLoopError: called inside a running event loop (and not ``loop_free``), or a
            ``loop_free`` coroutine did wait; the message says to ``await {twin}(...)``.
    """
    if not in_running_loop():
        return _run_interruptible(make)
    name = twin.removeprefix("a")
    hint = f"use `await {twin}({args})` in a notebook or async code"
    if not loop_free:
        raise InRunningLoopError(f"{name}() cannot run inside a running event loop; {hint}")
    coro = make()
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value  # the coroutine's return value
        return result
    coro.close()
    raise InRunningLoopError(f"{name}() had to wait on the event loop, which is already running; {hint}")


class _Interrupts:
    """SIGINT while :func:`_run_interruptible` runs: the first cancels the main task, a repeat
    within :data:`REPEAT_GRACE_S` is ignored, a later one raises :class:`KeyboardInterrupt`."""

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.first: float | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.first is not None and now - self.first < REPEAT_GRACE_S:
            return  # the same stop, delivered to the process and to its group
        first, self.first = self.first, now
        if first is None and self.task is not None and not self.task.done():
            self.task.cancel()
            self.task.get_loop().call_soon_threadsafe(lambda: None)  # wake the loop, as asyncio.run does
            return
        raise KeyboardInterrupt()


def _run_interruptible(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(make())`` with the SIGINT handling described in the module docstring (main
    thread only; elsewhere, or when SIGINT is not Python's default handler, plain ``asyncio.run``)."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        return asyncio.run(make())
    interrupts = _Interrupts()

    async def main() -> T:
        interrupts.task = asyncio.current_task()
        return await make()

    previous = signal.signal(signal.SIGINT, interrupts)  # asyncio.run then leaves SIGINT to it
    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if interrupts.first is not None:
            raise KeyboardInterrupt() from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
