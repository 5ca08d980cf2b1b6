"""Running jobs under per-endpoint request budgets: the one scheduler both executors share.

A job holds its ``need`` (requests in flight per endpoint) from start to end; a job starts only when
every endpoint it needs has that much budget left and fewer than ``max_parallel`` jobs are running.
Since each run's model client never has more requests in flight than its ``concurrency``, the
requests on one endpoint never exceed its capacity, however many runs share it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

J = TypeVar("J")
R = TypeVar("R")


class EndpointBudget:
    """Free request slots per endpoint key."""

    def __init__(self, capacities: dict[str, int]):
        self.capacity = dict(capacities)
        self.free = dict(capacities)

    def fits(self, need: dict[str, int]) -> bool:
        return all(self.free.get(k, 0) >= n for k, n in need.items())

    def take(self, need: dict[str, int]) -> None:
        for k, n in need.items():
            self.free[k] -= n

    def give(self, need: dict[str, int]) -> None:
        for k, n in need.items():
            self.free[k] += n


class Outcome(Generic[J, R]):
    """A finished job: its result, or the exception it raised (never both)."""

    def __init__(self, job: J, result: R | None = None, error: BaseException | None = None):
        self.job, self.result, self.error = job, result, error


async def run_jobs(
    jobs: Sequence[J],
    need: Callable[[J], dict[str, int]],
    budget: EndpointBudget,
    start: Callable[[J], Awaitable[R]],
    *,
    max_parallel: int,
    on_done: Callable[[Outcome[J, R]], None] | None = None,
) -> list[Outcome[J, R]]:
    """Run ``start(job)`` for every job, in order of the list as budget frees up.

    A job whose need exceeds an endpoint's whole capacity is started alone on that endpoint (with the
    capacity it has) rather than never. A failing job is returned as an :class:`Outcome` with its
    error; the others go on. Cancellation (Ctrl-C) cancels the running jobs and re-raises.

    Returns:
        One outcome per job, in the order of ``jobs``.
    """
    waiting = list(range(len(jobs)))
    outcomes: dict[int, Outcome[J, R]] = {}
    running: dict[asyncio.Task, tuple[int, dict[str, int]]] = {}

    def clipped(i: int) -> dict[str, int]:
        return {k: min(n, budget.capacity.get(k, n)) for k, n in need(jobs[i]).items()}

    try:
        while waiting or running:
            for i in list(waiting):
                if len(running) >= max_parallel:
                    break
                n = clipped(i)
                if budget.fits(n):
                    budget.take(n)
                    waiting.remove(i)
                    running[asyncio.ensure_future(start(jobs[i]))] = (i, n)
            if not running:  # nothing fits and nothing runs: cannot happen with clipped needs
                raise RuntimeError("scheduler stalled: no job fits the endpoint budgets")
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                i, n = running.pop(t)
                budget.give(n)
                err = t.exception()
                out: Outcome[J, R] = Outcome(jobs[i], None if err else t.result(), err)
                outcomes[i] = out
                if on_done is not None:
                    on_done(out)
    except BaseException:
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    return [outcomes[i] for i in range(len(jobs))]
