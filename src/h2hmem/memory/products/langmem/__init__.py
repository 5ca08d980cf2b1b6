"""LangMem (``langmem``, on a LangGraph SQLite store) as the memory method ``langmem``."""

from ._memory import LangMemMemory, LangMemOptions

__all__ = ["LangMemMemory", "LangMemOptions"]
