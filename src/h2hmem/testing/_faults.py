"""Fault injection for :class:`~h2hmem.testing.MockOpenAIServer`: what can go wrong with one
request (:class:`Fault`) and which requests it hits (:class:`Rule`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

FaultKind = Literal[
    "http", "reset", "timeout", "malformed_json", "truncated_body", "empty_choices", "missing_choices", "finish"
]


@dataclass(frozen=True)
class Fault:
    """One injected failure. Build it with the class methods, e.g. ``Fault.http(429, retry_after=1)``."""

    kind: FaultKind
    status: int = 200
    retry_after: str | None = None
    """Value of the ``Retry-After`` header (seconds as text), or None for no header."""
    retry_after_ms: int | None = None
    """Value of OpenAI's ``retry-after-ms`` header, or None."""
    delay_s: float = 0.0
    finish_reason: str | None = None
    message: str = ""

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        retry_after_ms: int | None = None,
        message: str | None = None,
    ) -> Fault:
        """Reply with HTTP ``status`` and an OpenAI-style error body; ``retry_after`` adds the header."""
        ra = None if retry_after is None else (str(retry_after) if isinstance(retry_after, str) else f"{retry_after:g}")
        return cls(
            "http",
            status=status,
            retry_after=ra,
            retry_after_ms=retry_after_ms,
            message=message or f"mock fault: HTTP {status}",
        )

    @classmethod
    def reset(cls) -> Fault:
        """Close the connection with a TCP reset and no reply at all."""
        return cls("reset")

    @classmethod
    def timeout(cls, delay_s: float = 30.0) -> Fault:
        """Wait ``delay_s`` seconds (past the client's timeout) before answering normally."""
        return cls("timeout", delay_s=delay_s)

    @classmethod
    def malformed_json(cls) -> Fault:
        """HTTP 200 whose body is cut-off JSON (a complete HTTP message)."""
        return cls("malformed_json")

    @classmethod
    def truncated_body(cls) -> Fault:
        """HTTP 200 announcing a longer body than is sent, then closing the connection."""
        return cls("truncated_body")

    @classmethod
    def empty_choices(cls) -> Fault:
        """HTTP 200 with ``"choices": []``."""
        return cls("empty_choices")

    @classmethod
    def missing_choices(cls) -> Fault:
        """HTTP 200 with no ``choices`` key."""
        return cls("missing_choices")

    @classmethod
    def finish(cls, reason: Literal["length", "content_filter"]) -> Fault:
        """A normal reply whose ``finish_reason`` is ``reason``; for ``content_filter`` the
        message content is ``null``, as OpenAI sends it."""
        return cls("finish", finish_reason=reason)


Predicate = Callable[[dict[str, Any]], bool]


@dataclass
class Rule:
    """Which requests get ``fault`` (``None`` = a normal reply).

    ``when``: ``None`` matches every request; a string matches requests whose JSON body
    contains it; a callable gets the parsed body. ``path``: restrict to ``"chat"`` or
    ``"embeddings"``. ``times``: how many matching requests it applies to (``None`` = forever).
    ``requests``: the request numbers it applies to (1-based, counted per endpoint over all
    requests the server received, e.g. ``range(3, 6)`` for the third to fifth; ``None`` = any).
    """

    fault: Fault | None
    when: str | Predicate | None = None
    times: int | None = None
    path: Literal["chat", "embeddings"] | None = None
    requests: Container[int] | None = None
    hits: int = field(default=0, init=False)

    def matches(self, endpoint: str, body: dict[str, Any], body_text: str, number: int = 0) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.path is not None and self.path != endpoint:
            return False
        if self.requests is not None and number not in self.requests:
            return False
        if self.when is None:
            return True
        if isinstance(self.when, str):
            return self.when in body_text
        return bool(self.when(body))


ScriptItem = Fault | Rule | None


def to_rules(script: Sequence[ScriptItem] | None) -> list[Rule]:
    """Normalise a script: a bare ``Fault`` is ``Rule(fault, times=1)``; ``None`` is one normal reply."""
    rules: list[Rule] = []
    for item in script or ():
        if isinstance(item, Rule):
            rules.append(item)
        elif isinstance(item, Fault) or item is None:
            rules.append(Rule(item, times=1))
        else:
            raise TypeError(f"script items must be Fault, Rule or None, got {type(item).__name__}")
    return rules


class Script:
    """Ordered rules; each request takes the first rule that still matches (first match wins,
    so ``[None, None, Fault.http(500)]`` fails exactly the third request)."""

    def __init__(self, script: Sequence[ScriptItem] | None = None):
        self._lock = threading.Lock()
        self._rules = to_rules(script)
        self._numbers: dict[str, int] = {}

    def replace(self, script: Sequence[ScriptItem] | None) -> None:
        with self._lock:
            self._rules = to_rules(script)

    def next_fault(self, endpoint: str, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            number = self._numbers[endpoint] = self._numbers.get(endpoint, 0) + 1
            if not self._rules:
                return None
            text = json.dumps(body, ensure_ascii=False)
            for rule in self._rules:
                if rule.matches(endpoint, body, text, number):
                    rule.hits += 1
                    return rule.fault
        return None
