"""Build turns: dialogues build in their order while the builds are CPU only, side by side once they wait.

The runner builds up to ``dialogue_concurrency`` memories at once, and the first questions go out
only when the first dialogue is built. A build that never waits (an index over cached embeddings)
gives the loop back once per session, so four such builds started together would interleave and
the first dialogue's questions would wait for all four. With turns, dialogue *k* starts building
when dialogue *k − 1* has built, or as soon as one of *k − 1*'s steps really waits (a model call of
a note writer, an embedding in a thread): builds that wait on I/O still overlap as before, and the
first questions of a CPU-only method go out after one dialogue's build instead of several.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class BuildTurns:
    """Turns of ``n`` dialogues, in the runner's dialogue order (index 0 first)."""

    def __init__(self, n: int):
        self._passed = [asyncio.Event() for _ in range(n)]

    async def wait(self, i: int) -> None:
        """Return when dialogue ``i`` may start building (at once for the first)."""
        if i > 0:
            await self._passed[i - 1].wait()

    def pass_on(self, i: int) -> None:
        """Let dialogue ``i + 1`` start building (dialogue ``i`` is built, or failed, or waits)."""
        self._passed[i].set()

    @contextlib.contextmanager
    def watch(self, i: int) -> Iterator[None]:
        """Pass the turn on if the block suspends: a callback scheduled on entry runs only when the
        running task gives the loop up inside the block, and is cancelled on exit otherwise."""
        handle = asyncio.get_running_loop().call_soon(self._passed[i].set)
        try:
            yield
        finally:
            handle.cancel()
