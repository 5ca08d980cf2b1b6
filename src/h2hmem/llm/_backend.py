"""The thin backend interface the central :class:`~h2hmem.llm.ModelClient` drives.

A backend sends one request and turns its outcome into a :class:`BackendReply` or a typed
:class:`~h2hmem.llm.ModelError`; it never retries, caches or counts usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ._types import GenerationConfig, Message


@dataclass(frozen=True)
class BackendReply:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    queue_s: float = 0.0
    """Seconds the request waited inside the backend before it was served (a local model
    serving one request at a time); the client does not count it as latency."""


class Backend(Protocol):
    kind: str
    """Backend family, e.g. ``"openai"`` or ``"local"`` (part of the cache key)."""
    model: str
    """Model name sent to the server / shown in errors."""
    supports_images: bool
    context_tokens: int

    def identity(self) -> dict[str, Any]:
        """Everything besides messages and generation parameters that changes the output
        (model, base URL, image encoding…): part of the cache key."""
        ...

    def count_tokens(self, text: str) -> int: ...

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, description: str, timeout_s: float
    ) -> BackendReply:
        """One attempt. ``messages`` hold only image parts whose files exist (and only when
        ``supports_images``). Raises :class:`~h2hmem.llm.ModelError` subclasses."""
        ...

    async def aclose(self) -> None: ...
