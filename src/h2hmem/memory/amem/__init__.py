"""The ``amem`` memory method."""

from ._memory import AMemMemory

__all__ = ["AMemMemory"]
