"""The ``full-mm`` memory method."""

from ._memory import FullMMMemory

__all__ = ["FullMMMemory"]
