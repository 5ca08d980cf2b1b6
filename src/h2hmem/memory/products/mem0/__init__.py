"""mem0 (the open-source ``mem0ai`` package) as the memory method ``mem0``."""

from ._memory import Mem0Memory, Mem0Options

__all__ = ["Mem0Memory", "Mem0Options"]
