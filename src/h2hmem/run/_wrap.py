"""The runner's chat-model wrappers share one forwarding base: each overrides ``chat`` and keeps the
inner model's every other attribute (``spec``, ``count_tokens``, ``usage_by_stage``, ``aclose``…)."""

from __future__ import annotations

from typing import Any


class ChatWrapper:
    """Holds ``inner`` and forwards to it every attribute the subclass does not define."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
