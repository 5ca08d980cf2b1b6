"""The ``naive-rag`` memory method."""

from ._memory import NaiveRAGMemory

__all__ = ["NaiveRAGMemory"]
