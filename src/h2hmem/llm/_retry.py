"""Retry policy, configured once for every backend: exponential backoff with jitter on transient
errors (429, 5xx, connection failures, timeouts, unusable replies), honouring ``Retry-After``."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from .. import defaults
from ._errors import ModelError

log = logging.getLogger(__name__)
T = TypeVar("T")


class RetryPolicy(BaseModel):
    """How failed calls are retried. Not part of the cache key.

    Wait before retry ``n`` (1-based): the server's ``Retry-After`` when it sent one (capped at
    ``max_retry_after_s``), else ``min(initial_backoff_s * 2**(n-1) + U(0, initial_backoff_s), max_backoff_s)``.
    Defaults: 5 retries (the brief's default), 1 s initial backoff, 60 s cap — common client
    settings (the openai client uses 0.5–8 s; we allow longer for rate limits).
    """

    model_config = ConfigDict(frozen=True)
    max_retries: int = Field(defaults.MAX_RETRIES, ge=0)
    initial_backoff_s: float = Field(1.0, ge=0)
    max_backoff_s: float = Field(60.0, ge=0)
    max_retry_after_s: float = Field(300.0, ge=0)


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.transient


class _Wait:
    def __init__(self, policy: RetryPolicy):
        self.policy = policy

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(max(float(retry_after), 0.0), self.policy.max_retry_after_s)
        p = self.policy
        n = state.attempt_number
        return min(
            p.initial_backoff_s * 2.0 ** min(n - 1, 60) + random.uniform(0, p.initial_backoff_s), p.max_backoff_s
        )


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    wait = state.next_action.sleep if state.next_action else 0.0
    log.info("retry %d after %.2fs: %s", state.attempt_number, wait, exc)


async def call_with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Await ``fn()``; on a transient :class:`ModelError` wait and call again, at most
    ``policy.max_retries`` times; then (or on a non-transient error) re-raise the last error.

    The first attempt runs without the retry machinery (most calls succeed; setting up tenacity
    costs ~40 µs per call); its transient failure is replayed as tenacity's first attempt, so the
    waits, logging and attempt count are those of one tenacity loop."""
    try:
        return await fn()
    except BaseException as exc:
        if policy.max_retries == 0 or not _is_transient(exc):
            raise
        first = exc
    replayed = False

    async def attempt_fn() -> T:
        nonlocal replayed
        if not replayed:
            replayed = True
            raise first
        return await fn()

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=_Wait(policy),
        retry=retry_if_exception(_is_transient),
        reraise=True,
        before_sleep=_log_retry,
    )
    async for attempt in retrying:
        with attempt:
            result = await attempt_fn()
    return result
