"""The transport floor: the same number of requests, at the same concurrency, with prompts of the
same size, sent by a bare aiohttp loop (no dataset, memory, cache, retries or records).

What the floor adds over N·L/C is the environment — the mock server's own work per request,
the HTTP stack, and CPU time taken by other processes on a shared machine — so
``harness wall ÷ floor wall`` is what the harness itself costs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

QUESTIONS_PER_MEMORY = 90
"""Requests sharing one memory text, as a dyadic dialogue's ~90 questions share theirs."""


def floor_step(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: base_url, calls, concurrency, prompt_chars (mean user-message length)."""
    import aiohttp

    n, c, chars = int(spec["calls"]), int(spec["concurrency"]), max(int(spec["prompt_chars"]), 20)

    def body(i: int) -> dict[str, Any]:
        memory = (f"[2024-01-{i // QUESTIONS_PER_MEMORY % 28 + 1:02d}] Speaker: word " * (chars // 40 + 1))[:chars]
        return {
            "model": "mock",
            "messages": [
                {"role": "system", "content": "Answer from memory."},
                {"role": "user", "content": f"Memory:\n{memory}\nQuestion: q{i}?"},
            ],
            "temperature": 0.1,
            "max_tokens": 1024,
        }

    async def go() -> None:
        sem = asyncio.Semaphore(c)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def one(i: int) -> None:
                async with sem:
                    async with session.post(f"{spec['base_url']}/chat/completions", json=body(i)) as resp:
                        await resp.read()
                        if resp.status != 200:
                            raise RuntimeError(f"mock server answered HTTP {resp.status}")

            await asyncio.gather(*(one(i) for i in range(n)))

    cpu0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(go())
    return {"wall_s": round(time.perf_counter() - t0, 3), "cpu_s": round(time.process_time() - cpu0, 3), "questions": n}
