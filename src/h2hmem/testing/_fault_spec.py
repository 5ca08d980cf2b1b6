"""Fault rules written as short text, for ``h2hmem testing mock-server --fault SPEC``.

Syntax (one fault per spec; several ``--fault`` options are tried in order, first match wins)::

    KIND[@WHICH][~RATE]

    KIND    http:STATUS[:RETRY_AFTER]   an HTTP error (e.g. http:503, http:429:2 with Retry-After: 2)
            reset                       the connection closed with a TCP reset, no reply
            timeout[:SECONDS]           the reply waits SECONDS (default 30) before it comes
            malformed_json              HTTP 200 with cut-off JSON
            truncated_body              HTTP 200 whose body stops half-way
            empty_choices               HTTP 200 with "choices": []
            missing_choices             HTTP 200 with no "choices"
            finish:length               a reply cut at max_tokens (finish_reason "length")
            finish:content_filter       a withheld reply (content null)
    WHICH   N      the N-th chat request only (1-based, counted since the server started)
            N-M    the N-th to M-th       N-     the N-th and every later one
            %K     every K-th (K, 2K, 3K…)        (no WHICH: every chat request)
    RATE    a probability in (0, 1]: each request WHICH selects fails with it, drawn from a
            generator seeded by ``--seed``, so the same seed and request order fail the same requests

Examples: ``http:503@3`` fails the third request; ``http:429:1@1-2`` rate-limits the first two
(``Retry-After: 1``); ``reset~0.1`` resets one request in ten on average; ``timeout:5@%10``
delays every tenth by five seconds. Faults hit ``/v1/chat/completions`` only.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import TypeVar

from ._faults import Fault, Rule

_SPEC = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<args>[^@~]*))?(?:@(?P<which>[^~]*))?(?:~(?P<rate>.*))?$")
_NO_ARGS = {
    "reset": Fault.reset,
    "malformed_json": Fault.malformed_json,
    "truncated_body": Fault.truncated_body,
    "empty_choices": Fault.empty_choices,
    "missing_choices": Fault.missing_choices,
}
N = TypeVar("N", int, float)
KINDS = ("http", "timeout", "finish", *_NO_ARGS)


class FaultSpecError(ValueError):
    """A fault spec that does not follow the syntax; the message names the spec and the wrong part."""


@dataclass(frozen=True)
class EveryKth:
    """Request numbers ``k, 2k, 3k…`` (a container for :attr:`Rule.requests`)."""

    k: int

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and number > 0 and number % self.k == 0


@dataclass(frozen=True)
class From:
    """Request numbers ``n, n+1, …``."""

    n: int

    def __contains__(self, number: object) -> bool:
        return isinstance(number, int) and number >= self.n


def parse_fault_spec(spec: str, rng: random.Random | None = None) -> Rule:
    """The :class:`~h2hmem.testing.Rule` a spec (syntax above) describes, for the chat endpoint.

    ``rng`` draws the ``~RATE`` failures (default ``random.Random(0)``).

    Raises:
        FaultSpecError: unknown kind, bad status/seconds/reason, bad WHICH or RATE; the message
            names the spec and lists what is allowed.
    """
    m = _SPEC.match(spec.strip())
    if m is None:
        raise FaultSpecError(f"fault spec {spec!r}: expected KIND[:ARGS][@WHICH][~RATE], e.g. 'http:503@3'")
    fault = _fault(spec, m.group("kind"), m.group("args"))
    requests = None if m.group("which") is None else _which(spec, m.group("which"))
    when = None
    if m.group("rate") is not None:
        rate = _number(spec, "RATE", m.group("rate"), float)
        if not 0 < rate <= 1:
            raise FaultSpecError(f"fault spec {spec!r}: RATE must be in (0, 1], got {m.group('rate')!r}")
        draw = rng or random.Random(0)
        when = lambda body: draw.random() < rate  # noqa: E731  (drawn under the script's lock, in request order)
    return Rule(fault, when=when, path="chat", requests=requests)


def _fault(spec: str, kind: str, args: str | None) -> Fault:
    parts = [] if args is None else args.split(":")
    if kind in _NO_ARGS:
        if parts:
            raise FaultSpecError(f"fault spec {spec!r}: {kind} takes no argument")
        return _NO_ARGS[kind]()
    if kind == "http":
        if not 1 <= len(parts) <= 2:
            raise FaultSpecError(f"fault spec {spec!r}: write http:STATUS or http:STATUS:RETRY_AFTER, e.g. http:429:2")
        status = _number(spec, "STATUS", parts[0], int)
        if not 400 <= status <= 599:
            raise FaultSpecError(f"fault spec {spec!r}: STATUS must be an HTTP error status 400-599, got {status}")
        retry = None if len(parts) == 1 else _number(spec, "RETRY_AFTER", parts[1], float)
        if retry is not None and retry < 0:
            raise FaultSpecError(f"fault spec {spec!r}: RETRY_AFTER must be >= 0 seconds")
        return Fault.http(status, retry_after=retry)
    if kind == "timeout":
        if len(parts) > 1:
            raise FaultSpecError(f"fault spec {spec!r}: write timeout or timeout:SECONDS")
        seconds = 30.0 if not parts else _number(spec, "SECONDS", parts[0], float)
        if seconds < 0:
            raise FaultSpecError(f"fault spec {spec!r}: SECONDS must be >= 0")
        return Fault.timeout(seconds)
    if kind == "finish":
        if parts not in (["length"], ["content_filter"]):
            raise FaultSpecError(f"fault spec {spec!r}: write finish:length or finish:content_filter")
        return Fault.finish(parts[0])  # type: ignore[arg-type]
    raise FaultSpecError(f"fault spec {spec!r}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")


def _which(spec: str, which: str) -> Container[int]:
    if which.startswith("%"):
        k = _number(spec, "WHICH", which[1:], int)
        if k < 1:
            raise FaultSpecError(f"fault spec {spec!r}: %K needs K >= 1")
        return EveryKth(k)
    first, dash, last = which.partition("-")
    n = _number(spec, "WHICH", first, int)
    if n < 1:
        raise FaultSpecError(f"fault spec {spec!r}: requests are numbered from 1, got {n}")
    if not dash:
        return range(n, n + 1)
    if not last:
        return From(n)
    m = _number(spec, "WHICH", last, int)
    if m < n:
        raise FaultSpecError(f"fault spec {spec!r}: range {which!r} ends before it starts")
    return range(n, m + 1)


def _number(spec: str, part: str, text: str, kind: Callable[[str], N]) -> N:
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise FaultSpecError(f"fault spec {spec!r}: {part} must be {what}, got {text!r}") from None
