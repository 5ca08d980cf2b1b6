"""The sync entry points of the async public functions (``evaluate_run`` → ``aevaluate_run``, …).

Each long public function has an ``a``-prefixed coroutine twin that holds its body; the sync one
is :func:`run_sync` around it: it starts an event loop with :func:`asyncio.run`, and inside a
running loop (a Jupyter notebook, an async web app) it refuses with an error naming the twin to
await — ``asyncio.run`` cannot nest, and a blocked loop would stall the caller's other tasks.
Bottom-layer module (standard library only), beside :mod:`h2hmem._atomic`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


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
        return asyncio.run(make())
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
