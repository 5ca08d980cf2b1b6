"""The ``h2h`` memory method."""

from ._memory import H2HMemory

__all__ = ["H2HMemory"]
