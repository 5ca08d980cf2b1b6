"""The ``murag`` memory method."""

from ._memory import MuRAGMemory

__all__ = ["MuRAGMemory"]
