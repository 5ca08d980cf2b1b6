"""Graphiti (``graphiti-core``, Zep's open-source engine, on an embedded Kuzu graph) as the memory
method ``graphiti``."""

from ._memory import GraphitiMemory, GraphitiOptions

__all__ = ["GraphitiMemory", "GraphitiOptions"]
