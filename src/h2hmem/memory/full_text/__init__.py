"""The ``full-text`` memory method."""

from ._memory import FullTextMemory

__all__ = ["FullTextMemory"]
