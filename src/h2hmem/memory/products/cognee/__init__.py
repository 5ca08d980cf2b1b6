"""cognee (``cognee``: documents → chunks → knowledge graph and summaries, on embedded SQLite,
LanceDB and Ladybug stores) as the memory method ``cognee``."""

from ._memory import CogneeMemory, CogneeOptions

__all__ = ["CogneeMemory", "CogneeOptions"]
