"""cognee's side of the adapter: dated documents in, chunks or chunk summaries out.

- Store: cognee's own embedded stores under the dialogue's store folder: its SQLite metadata
  database, LanceDB vectors and its SQLite graph backend (``turso``: a local file) in
  ``store/system/databases``, the documents in ``store/data``. Not its default graph store,
  Ladybug (cognee's Kuzu fork): Ladybug's native module cannot be loaded in a process that has loaded
  Kuzu's (Graphiti's), and its JSON extension is downloaded on first use. The databases run in this
  process (cognee's worker subprocesses are switched off), so a killed run leaves no orphan process
  and the build marker decides what is reused.
- One store at a time: cognee keeps its configuration in process-global settings objects and the
  environment. Every operation on a store takes :func:`cognee_lock` (one per event loop) and first
  points cognee at its own folders and endpoint (:meth:`CogneeStore._activate`), so the dialogues
  of a run are built and searched one after another.
- Model: cognee's default structured-output path (``litellm_native``) with provider ``openai`` and
  model ``openai/<endpoint model>``: litellm does not know that name, so cognee asks for a JSON
  object (``response_format: json_object``) with its pydantic schema written into the system
  prompt, and validates the reply. Embeddings go through litellm as ``openai/text-embedding-3-small``
  (a name litellm knows, so it passes ``dimensions``; the endpoint serves its own embedder whatever
  the name) and are counted with tiktoken's ``cl100k_base``.
- Documents: ``batch_turns`` consecutive turns make one document (a ``DataItem`` labelled
  ``session3/t0-7``) whose text is their turn lines (``[2024-03-20] Kiki: text [Image …: caption]``),
  so the conversation's dates and the speakers' names are in what cognee reads; cognee has no time
  field of its own for a document. ``cognify`` then chunks each new document (``chunk_size``) and
  makes, per chunk, one graph-extraction call (``KnowledgeGraph``) and one summary call
  (``SummarizedContent``).
- Search: ``cognee.search`` with ``CHUNKS`` or ``SUMMARIES`` on the dialogue's dataset. A chunk
  is mapped back to the turns whose whole line it holds (the turn lines and the session's date are
  kept beside the store in ``turns.json``); a summary to the turns of the chunk it summarizes.
- Offline, no hidden calls: telemetry off (``TELEMETRY_DISABLED``), litellm's bundled model-cost map
  (``LITELLM_LOCAL_MODEL_COST_MAP``), tiktoken's files from litellm's bundled copy (litellm points
  ``TIKTOKEN_CACHE_DIR`` there), no connection test (``COGNEE_SKIP_CONNECTION_TEST``), no session
  cache and its feedback-detection call on every search (``CACHING``, ``AUTO_FEEDBACK``), no log file.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from pathlib import Path
from typing import Any, TypedDict

from ...._atomic import atomic_write_text
from ....data import Session
from .._adapter import Hit
from .._endpoint import Endpoint
from .._feed import TurnRecord, batch_name, batches, turn_metadata

DATASET = "h2hmem"
"""The cognee dataset of a store (each store holds one dialogue)."""

CHUNK_COLLECTION = "DocumentChunk_text"
"""cognee's vector collection of chunk texts (where a summary's ``source_chunk_id`` is found)."""

EMBEDDING_MODEL = "openai/text-embedding-3-small"
"""The embedding model name cognee gives litellm (litellm refuses ``dimensions`` for names it does not
know); the endpoint serves the run's embedder whatever the request names."""


class SessionLines(TypedDict):
    """What ``turns.json`` keeps of a session fed to the store: its date and its turn lines."""

    date: str
    turns: list[tuple[int, str]]


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def cognee_lock() -> asyncio.Lock:
    """The lock every cognee store of this event loop takes around each operation (cognee's
    configuration is process-global, so two stores cannot be used at once)."""
    loop = asyncio.get_running_loop()
    lock = _LOCKS.get(loop)
    if lock is None:
        lock = _LOCKS[loop] = asyncio.Lock()
    return lock


def _offline_environment() -> None:
    """The switches cognee and litellm read from the environment (some when first imported)."""
    os.environ["TELEMETRY_DISABLED"] = "1"
    os.environ["COGNEE_LOG_FILE"] = "false"
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ["LITELLM_TELEMETRY"] = "False"
    os.environ["COGNEE_SKIP_CONNECTION_TEST"] = "true"
    os.environ["GRAPH_DATABASE_PROVIDER"] = "turso"
    os.environ["GRAPH_DATABASE_SUBPROCESS_ENABLED"] = "false"
    os.environ["VECTOR_DB_SUBPROCESS_ENABLED"] = "false"
    os.environ["ENABLE_BACKEND_ACCESS_CONTROL"] = "false"
    os.environ["CACHING"] = "false"  # cognee's session cache (a Redis-like store) and the model calls
    os.environ["AUTO_FEEDBACK"] = "false"  # its feedback detection makes on every search


class CogneeStore:
    """One dialogue's cognee memory in ``store_dir``.

    Args:
        endpoint: where cognee's chat and embedding requests go.
        store_dir: the folder of cognee's databases and files (created by the caller).
        batch_turns: turns per document.
        chunk_size: cognee's chunk size in tokens.
        search: ``"chunks"`` or ``"summaries"`` (cognee's ``CHUNKS`` / ``SUMMARIES`` search).
    """

    def __init__(self, endpoint: Endpoint, store_dir: Path, *, batch_turns: int, chunk_size: int, search: str):
        _offline_environment()
        import cognee

        self.cognee = cognee
        self.endpoint = endpoint
        self.store_dir = store_dir
        self.batch_turns = batch_turns
        self.chunk_size = chunk_size
        self.search_name = search
        # the gateway's client tags each request with the dialogue and session that caused it
        self._http = endpoint.async_http_client() if endpoint.async_http_client is not None else None
        self.turns_path = store_dir / "turns.json"
        self.sessions: dict[str, SessionLines] = self._read_turns()

    def configuration(self) -> dict[str, Any]:
        return {
            "stores": "sqlite metadata, lancedb vectors, sqlite graph (provider 'turso'); embedded, in process",
            "llm": {"provider": "openai", "model": f"openai/{self.endpoint.chat_model}", "output": "json_object"},
            "embedding": {
                "model": EMBEDDING_MODEL,
                "served_by": self.endpoint.embedding_model,
                "dims": self.endpoint.embedding_dims,
            },
            "batch_turns": self.batch_turns,
            "chunk_size": self.chunk_size,
            "search": self.search_name.upper(),
            "cognify": "default tasks (KnowledgeGraph extraction + chunk summaries)",
            "build_calls": "product_build_calls counts documents; each chunk of one is 2 model calls",
        }

    def _activate(self) -> None:
        """Point cognee's process-global configuration at this store and endpoint."""
        config = self.cognee.config
        config.set_graph_database_provider("turso")
        config.system_root_directory(str(self.store_dir / "system"))
        config.data_root_directory(str(self.store_dir / "data"))
        config.set_llm_config(
            {
                "llm_provider": "openai",
                "llm_model": f"openai/{self.endpoint.chat_model}",
                "llm_endpoint": self.endpoint.base_url,
                "llm_api_key": self.endpoint.api_key,
            }
        )
        config.set_embedding_config(
            {
                "embedding_provider": "openai",
                "embedding_model": EMBEDDING_MODEL,
                "embedding_endpoint": self.endpoint.embeddings_url,
                "embedding_api_key": self.endpoint.api_key,
                "embedding_dimensions": self.endpoint.embedding_dims,
            }
        )
        import litellm

        litellm.aclient_session = self._http

    async def add(self, session: Session, records: list[TurnRecord]) -> int:
        from cognee.tasks.ingestion.data_item import DataItem

        documents = [
            DataItem(
                data="\n".join(r.line for r in batch), label=batch_name(batch), external_metadata=turn_metadata(batch)
            )
            for batch in batches(records, self.batch_turns)
        ]
        async with cognee_lock():
            self._activate()
            await self.cognee.add(documents, dataset_name=DATASET)
            await self.cognee.cognify(datasets=[DATASET], chunk_size=self.chunk_size)
        self.sessions[session.name] = {"date": records[0].date, "turns": [(r.turn, _flat(r.line)) for r in records]}
        await asyncio.to_thread(atomic_write_text, self.turns_path, json.dumps(self.sessions, ensure_ascii=False))
        return len(documents)

    async def search(self, query: str, top_k: int) -> list[Hit]:
        from cognee import SearchType
        from cognee.infrastructure.databases.vector import get_vector_engine_async

        kind = SearchType.CHUNKS if self.search_name == "chunks" else SearchType.SUMMARIES
        if not self.sessions:  # nothing was fed (every session absent): cognee refuses to search
            return []
        async with cognee_lock():
            self._activate()
            found = _payloads(
                await self.cognee.search(query_text=query, query_type=kind, datasets=[DATASET], top_k=top_k)
            )
            found = found[:top_k]
            if kind == SearchType.CHUNKS:
                chunks = [str(p.get("text", "")) for p in found]
            else:  # a summary's evidence is the chunk it summarizes
                ids = [str(p.get("source_chunk_id")) for p in found]
                engine = await get_vector_engine_async()
                rows = await engine.retrieve(CHUNK_COLLECTION, [i for i in ids if i != "None"])
                texts = {str(r.id): str(r.payload.get("text", "")) for r in rows}
                chunks = [texts.get(i, "") for i in ids]
        return [self._hit(p, chunk) for p, chunk in zip(found, chunks)]

    def _hit(self, payload: dict[str, Any], chunk: str) -> Hit:
        score = payload.get("score")
        source = self._turns_of(chunk)
        date = self.sessions[source[0]]["date"] if source and source[0] in self.sessions else None
        return Hit(
            text=str(payload.get("text", "")),
            score=float(score) if isinstance(score, (int, float)) else None,
            source=source,
            date=date,
        )

    def _turns_of(self, chunk: str) -> tuple[str, list[int]] | None:
        """The session and turns whose whole line ``chunk`` holds (whitespace ignored); a chunk
        shorter than a line maps to the line that holds it."""
        flat = _flat(chunk)
        for session, lines in self.sessions.items():
            turns = [t for t, line in lines["turns"] if line in flat]
            if not turns and flat:
                turns = [t for t, line in lines["turns"] if flat in line]
            if turns:
                return session, turns
        return None

    def _read_turns(self) -> dict[str, SessionLines]:
        try:
            data = json.loads(self.turns_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return {
            s: {"date": str(v["date"]), "turns": [(int(t), str(line)) for t, line in v["turns"]]}
            for s, v in data.items()
        }

    def close(self) -> None:
        return None


def _flat(text: str) -> str:
    return " ".join(text.split())


def _payloads(results: Any) -> list[dict[str, Any]]:
    """The retrieved items of ``cognee.search``'s result (a list of per-dataset results, or of items)."""
    out: list[dict[str, Any]] = []
    for r in results or []:
        inner = getattr(r, "search_result", r)
        if isinstance(r, dict) and "search_result" in r:
            inner = r["search_result"]
        items = inner if isinstance(inner, list) else [inner]
        out.extend(i for i in items if isinstance(i, dict))
    return out
