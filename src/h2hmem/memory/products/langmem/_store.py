"""LangMem's side of the adapter: its memory manager over a persistent LangGraph store.

- Extraction: LangMem's ``create_memory_manager`` (trustcall tool calls, schema ``Memory``) with a
  LangChain ``ChatOpenAI`` pointed at the endpoint. For each batch of turns, the store is searched
  with the batch's text (LangMem's store manager does the same) and the hits go to the manager as
  ``existing`` memories, which it may update (``enable_updates``) or leave; new memories are put.
- Store: LangGraph's ``SqliteStore`` with its vector index (``sqlite-vec``; embeddings from the
  endpoint through LangChain ``OpenAIEmbeddings``), in the dialogue's store folder: the store a
  LangMem user deploys with, made persistent. Namespace ``("memories",)``.
- Reproducible requests: LangMem names each extraction prompt's conversation ``<session_{uuid4}>``
  and gives new memories ``uuid4`` keys that later prompts show. The adapter derives both from
  content instead (the session tag from the prompt's own text, a new memory's key from its source
  turns), so a rebuild sends byte-identical requests (cache hits) — the only change to LangMem's
  behaviour.
- Turns: LangChain ``HumanMessage``s whose text is the shared turn line (date, speaker name,
  image caption) and whose ``name`` is the speaker; nobody in the observed conversation is the AI.
- Provenance: each memory's value carries ``h2hmem_session`` / ``h2hmem_turns`` / ``h2hmem_date``
  of the batch that created it, or last updated it.
- Telemetry: LangSmith tracing off (``LANGSMITH_TRACING=false``, ``LANGCHAIN_TRACING_V2=false``).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from ....data import Session
from .._adapter import Hit
from .._endpoint import Endpoint
from .._feed import DATE_KEY, TurnRecord, batches, metadata_turns, turn_metadata

NAMESPACE = ("memories",)
_SESSION_TAG = re.compile(r"session_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _quiet() -> None:
    os.environ["LANGSMITH_TRACING"] = "false"
    os.environ["LANGCHAIN_TRACING_V2"] = "false"


def _manager_class() -> Any:
    from langmem.knowledge.extraction import MemoryManager

    class ContentTaggedManager(MemoryManager):  # type: ignore[misc]
        """LangMem's manager with the prompt's ``<session_{uuid4}>`` tag derived from the conversation."""

        def _prepare_messages(self, messages: list[Any], max_steps: int = 1) -> list[dict[str, Any]]:
            prepared: list[dict[str, Any]] = super()._prepare_messages(messages, max_steps)
            text = prepared[-1]["content"]
            digest = hashlib.sha256(_SESSION_TAG.sub("session", text).encode("utf-8")).hexdigest()
            tag = f"session_{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
            prepared[-1] = {**prepared[-1], "content": _SESSION_TAG.sub(tag, text)}
            return prepared

    return ContentTaggedManager


class LangMemStore:
    """One dialogue's LangMem memory in ``store_dir``.

    Args:
        endpoint: where LangMem's chat and embedding requests go.
        store_dir: folder of the SQLite store (created by the caller).
        batch_turns: turns per extraction call.
        existing_k: memories found in the store and shown to the manager per batch (LangMem's
            store manager's ``query_limit`` default is 5).
        enable_updates: the manager may rewrite an existing memory (LangMem's default: yes).
        instructions: LangMem's extraction instructions; None = its default.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        store_dir: Path,
        *,
        batch_turns: int,
        existing_k: int,
        enable_updates: bool,
    ):
        _quiet()
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings
        from langgraph.store.sqlite import SqliteStore

        self.endpoint = endpoint
        self.batch_turns = batch_turns
        self.existing_k = existing_k
        self.enable_updates = enable_updates
        # LangChain's fields are pydantic aliases (base_url → openai_api_base): passed by name
        client: dict[str, Any] = {"base_url": endpoint.base_url, "api_key": endpoint.api_key}
        if endpoint.http_client is not None and endpoint.async_http_client is not None:
            client.update(http_client=endpoint.http_client(), http_async_client=endpoint.async_http_client())
        embeddings = OpenAIEmbeddings(
            **{**client, "base_url": endpoint.embeddings_url},
            model=endpoint.embedding_model,
            dimensions=endpoint.embedding_dims,
            check_embedding_ctx_length=False,  # no tiktoken download: texts are sent as they are
        )
        conn = _connect(store_dir / "langmem.sqlite")
        self.store = SqliteStore(
            conn, index={"dims": endpoint.embedding_dims, "embed": embeddings, "fields": ["content"]}
        )
        self.store.setup()
        self.model = ChatOpenAI(**client, model_name=endpoint.chat_model, temperature=0)
        self.manager = _manager_class()(self.model, enable_inserts=True, enable_updates=enable_updates)

    def configuration(self) -> dict[str, Any]:
        return {
            "manager": "create_memory_manager (schema Memory, inserts on, deletes off)",
            "enable_updates": self.enable_updates,
            "chat": {"client": "langchain_openai.ChatOpenAI", "model": self.endpoint.chat_model, "temperature": 0},
            "store": "langgraph SqliteStore (sqlite-vec index, cosine)",
            "embeddings": {"model": self.endpoint.embedding_model, "dims": self.endpoint.embedding_dims},
            "batch_turns": self.batch_turns,
            "existing_k": self.existing_k,
        }

    async def add(self, session: Session, records: list[TurnRecord]) -> int:
        from langchain_core.messages import HumanMessage

        calls = 0
        for batch in batches(records, self.batch_turns):
            messages = [HumanMessage(content=r.line, name=_message_name(r.speaker)) for r in batch]
            text = "\n".join(r.line for r in batch)
            existing = await asyncio.to_thread(self.store.search, NAMESPACE, query=text, limit=self.existing_k)
            shown = [(item.key, "Memory", {"content": item.value["content"]}) for item in existing]
            extracted = await self.manager.ainvoke({"messages": messages, "existing": shown})
            calls += 1
            known = {item.key for item in existing}
            meta = turn_metadata(batch)
            new = 0
            for memory in extracted:
                content = getattr(memory.content, "content", None)
                if not isinstance(content, str):
                    continue  # a removal or another schema: deletes are off, Memory is the only schema
                key = memory.id if memory.id in known else f"{meta['h2hmem_session']}-t{batch[0].turn}-{new}"
                new += memory.id not in known
                await asyncio.to_thread(self.store.put, NAMESPACE, key, {"content": content, **meta})
        return calls

    def close(self) -> None:
        self.store.conn.close()

    async def search(self, query: str, top_k: int) -> list[Hit]:
        items = await asyncio.to_thread(self.store.search, NAMESPACE, query=query, limit=top_k)
        return [
            Hit(
                text=str(item.value.get("content", "")),
                score=item.score,
                source=metadata_turns(item.value),
                date=str(item.value[DATE_KEY]) if DATE_KEY in item.value else None,
            )
            for item in items
        ]


def _connect(path: Path) -> Any:
    """A SQLite connection that can load the ``sqlite-vec`` extension: the standard library's when
    its SQLite allows extensions, else ``pysqlite3`` (Python builds such as pyenv's default lack
    ``enable_load_extension``; the ``langmem`` extra installs ``pysqlite3-binary`` on Linux)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        sqlite_ext: Any = importlib.import_module("pysqlite3.dbapi2")
    except ImportError as e:
        raise RuntimeError(
            "this Python's sqlite3 cannot load extensions (needed by the sqlite-vec index); install pysqlite3-binary"
        ) from e
    return sqlite_ext.connect(str(path), check_same_thread=False, isolation_level=None)


def _message_name(speaker: str) -> str:
    """The speaker as an OpenAI message ``name`` (letters, digits, ``_`` and ``-`` only)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", speaker).strip("_")[:64] or "speaker"
