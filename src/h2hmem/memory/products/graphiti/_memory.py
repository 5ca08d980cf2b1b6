"""The memory method ``graphiti``: Graphiti on Kuzu behind h2hmem's memory seam."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from .._adapter import ProductMemory, ProductOptions, ProductStore
from .._endpoint import Endpoint


class GraphitiOptions(ProductOptions):
    """Graphiti's switches (``--param NAME=VALUE``)."""

    batch_turns: int = Field(1, ge=1)
    """Turns per episode (Graphiti's usage: one message per episode; more = fewer calls, coarser evidence)."""
    search: Literal["rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder"] = "rrf"
    """Edge search recipe: hybrid BM25 + cosine fused by RRF (``Graphiti.search``'s), MMR, node
    distance, episode mentions, or reranked by the model (one extra call per question)."""

    build_fields: ClassVar[tuple[str, ...]] = ("batch_turns",)


class GraphitiMemory(ProductMemory):
    """Graphiti (``graphiti-core``): a temporal knowledge graph of entities and facts extracted from
    dated episodes, on an embedded Kuzu database; the question retrieves facts (edges).

    Options: :class:`GraphitiOptions` (``top_k``, ``batch_turns``, ``search``).
    """

    name: ClassVar[str] = "graphiti"
    distribution: ClassVar[str] = "graphiti-core"
    module: ClassVar[str] = "graphiti_core"
    Options: ClassVar[type[ProductOptions]] = GraphitiOptions
    speakers: ClassVar[str] = (
        "episodes of type 'message' whose lines are 'Speaker: text', Graphiti's own message format: "
        "each speaker becomes an entity by name"
    )
    evidence_granularity: ClassVar[str] = "a fact names the turns of the episode it was first extracted from"

    def open_store(self, endpoint: Endpoint, store_dir: Path) -> ProductStore:
        from ._store import GraphitiStore

        opts = self.options
        assert isinstance(opts, GraphitiOptions)
        return GraphitiStore(
            endpoint, store_dir, dialogue_id=self.ctx.dialogue_id, batch_turns=opts.batch_turns, search=opts.search
        )
