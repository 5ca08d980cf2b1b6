"""cognee (``cognee``: documents → chunks → knowledge graph and summaries, on embedded SQLite
(relations and graph) and LanceDB (vectors)) as the memory method ``cognee``."""

from ._memory import CogneeMemory, CogneeOptions

__all__ = ["CogneeMemory", "CogneeOptions"]
