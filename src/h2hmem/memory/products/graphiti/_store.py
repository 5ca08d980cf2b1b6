"""Graphiti's side of the adapter: episodes in, facts (edges) out, on an embedded Kuzu database.

- Store: ``KuzuDriver`` on a database file in the dialogue's store folder. graphiti-core 0.31.2's
  Kuzu driver never creates the full-text indexes its own searches query
  (``build_indices_and_constraints`` is a no-op for Kuzu, so the first edge search fails with
  "Table RelatesToNode_ doesn't have an index with name edge_name_and_fact"), and lacks the
  ``_database`` attribute ``add_episode(group_id=…)`` reads. The adapter loads Kuzu's bundled
  ``fts`` extension and creates graphiti's own Kuzu index statements (``get_fulltext_indices``)
  once per new database, and sets ``_database`` to None: the two gaps, nothing else changed.
- Model: ``OpenAIGenericClient`` (chat completions with a JSON-schema ``response_format``) and
  ``OpenAIEmbedder`` on the endpoint; the reranker client also points there (only the
  ``cross_encoder`` recipe calls it).
- Episodes: ``batch_turns`` consecutive turns make one ``message`` episode whose body is their
  turn lines (date, speaker name, caption) and whose ``reference_time`` is the session's date (noon
  UTC); its name (``session3/t4-7``) names its turns. ``group_id`` = the dialogue.
- Search: ``search_`` with an edge recipe (``search``), ``group_ids=[dialogue]``; a fact's evidence
  is the turns of the episode it was first extracted from (``edge.episodes[0]``).
- Telemetry: ``GRAPHITI_TELEMETRY_ENABLED=false`` before graphiti is imported.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

from ....data import Session
from .._adapter import Hit
from .._endpoint import Endpoint
from .._feed import TurnRecord, batch_name, batches, parse_batch_name, session_datetime

RECIPES = {
    "rrf": "EDGE_HYBRID_SEARCH_RRF",
    "mmr": "EDGE_HYBRID_SEARCH_MMR",
    "node_distance": "EDGE_HYBRID_SEARCH_NODE_DISTANCE",
    "episode_mentions": "EDGE_HYBRID_SEARCH_EPISODE_MENTIONS",
    "cross_encoder": "EDGE_HYBRID_SEARCH_CROSS_ENCODER",
}
"""The ``search`` option → graphiti's edge search recipe (``graphiti_core.search.search_config_recipes``)."""

UNKNOWN_DATE = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
"""``reference_time`` of a session without a date (the text then shows its raw date or "?")."""


def group_id(dialogue_id: str) -> str:
    """A graphiti group id (letters, digits, ``-``, ``_``): ``multi-party/dialogue3`` → ``multi-party_dialogue3``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", dialogue_id)


class GraphitiStore:
    """One dialogue's Graphiti graph in ``store_dir``.

    Args:
        endpoint: where graphiti's chat and embedding requests go.
        store_dir: the folder of the Kuzu database (created by the caller).
        dialogue_id: the dialogue (its group id).
        batch_turns: turns per episode.
        search: the edge search recipe (a key of :data:`RECIPES`).
    """

    def __init__(self, endpoint: Endpoint, store_dir: Path, *, dialogue_id: str, batch_turns: int, search: str):
        os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
        import kuzu
        from graphiti_core import Graphiti
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.driver.driver import GraphProvider
        from graphiti_core.driver.kuzu_driver import KuzuDriver
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from graphiti_core.graph_queries import get_fulltext_indices
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

        self.endpoint = endpoint
        self.group_id = group_id(dialogue_id)
        self.batch_turns = batch_turns
        self.search_name = search
        path = store_dir / "graph.kuzu"
        new = not path.exists()
        self.driver = KuzuDriver(db=str(path))
        if not hasattr(self.driver, "_database"):
            # read by add_episode(group_id=…), declared (str) on GraphDriver but never set by KuzuDriver
            self.driver._database = None  # type: ignore[assignment]
        conn = kuzu.Connection(self.driver.db)
        try:
            conn.execute("LOAD EXTENSION fts;")
            if new:
                for statement in get_fulltext_indices(GraphProvider.KUZU):
                    conn.execute(statement)
        finally:
            conn.close()
        llm = LLMConfig(
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            model=endpoint.chat_model,
            small_model=endpoint.chat_model,
        )

        def client(base_url: str) -> Any:  # the gateway's client tags each request; else graphiti builds its own
            if endpoint.async_http_client is None:
                return None
            from openai import AsyncOpenAI

            http = endpoint.async_http_client()  # openai 3.x annotates httpx2 clients but takes httpx ones
            return AsyncOpenAI(api_key=endpoint.api_key, base_url=base_url, http_client=http)  # type: ignore[arg-type, unused-ignore]

        embedder = OpenAIEmbedder(
            client=client(endpoint.embeddings_url),
            config=OpenAIEmbedderConfig(
                api_key=endpoint.api_key,
                base_url=endpoint.embeddings_url,
                embedding_model=endpoint.embedding_model,
                embedding_dim=endpoint.embedding_dims,
            ),
        )
        self.graphiti = Graphiti(
            graph_driver=self.driver,
            llm_client=OpenAIGenericClient(config=llm, client=client(endpoint.base_url)),
            embedder=embedder,
            cross_encoder=OpenAIRerankerClient(config=llm),
        )

    def configuration(self) -> dict[str, Any]:
        return {
            "graph": "kuzu (embedded, on disk; fts indexes created by the adapter)",
            "llm_client": "OpenAIGenericClient (json_schema response_format)",
            "model": self.endpoint.chat_model,
            "embedder": {"model": self.endpoint.embedding_model, "dims": self.endpoint.embedding_dims},
            "batch_turns": self.batch_turns,
            "search": f"{self.search_name} ({RECIPES[self.search_name]})",
            "episode_type": "message",
        }

    async def add(self, session: Session, records: list[TurnRecord]) -> int:
        from graphiti_core.nodes import EpisodeType

        when = session_datetime(session) or UNKNOWN_DATE
        calls = 0
        for batch in batches(records, self.batch_turns):
            await self.graphiti.add_episode(
                name=batch_name(batch),
                episode_body="\n".join(r.line for r in batch),
                source=EpisodeType.message,
                source_description=f"conversation among people, {session.name}",
                reference_time=when,
                group_id=self.group_id,
            )
            calls += 1
        return calls

    async def search(self, query: str, top_k: int) -> list[Hit]:
        from graphiti_core.nodes import EpisodicNode
        from graphiti_core.search import search_config_recipes

        recipe = getattr(search_config_recipes, RECIPES[self.search_name]).model_copy(deep=True)
        recipe.limit = top_k
        results = await self.graphiti.search_(query, config=recipe, group_ids=[self.group_id])
        edges = list(results.edges)[:top_k]
        uuids = sorted({e.episodes[0] for e in edges if e.episodes})
        names = {n.uuid: n.name for n in await EpisodicNode.get_by_uuids(self.driver, uuids)} if uuids else {}
        scores = list(getattr(results, "edge_reranker_scores", []) or [])
        hits = []
        for i, edge in enumerate(edges):
            source = parse_batch_name(names.get(edge.episodes[0], "")) if edge.episodes else None
            valid = edge.valid_at.date().isoformat() if edge.valid_at is not None else None
            hits.append(
                Hit(text=edge.fact, score=float(scores[i]) if i < len(scores) else None, source=source, date=valid)
            )
        return hits

    def close(self) -> None:
        self.driver.db.close()
