"""mem0's side of the adapter: its configuration, how turns go in, how memories come out.

- Store: mem0's ``Memory`` with the ``openai`` LLM and embedder providers pointed at the endpoint,
  Qdrant in local on-disk mode and mem0's SQLite history, both inside the dialogue's store folder;
  ``user_id`` = the dialogue (the store holds nothing else).
- Turns: every turn is a ``user`` message whose content is the shared turn line
  ``[2024-03-20] Kiki: text [Image …: caption]`` and whose ``name`` is the speaker: the
  conversation is observed, so nobody in it is mem0's assistant. ``batch_turns`` consecutive turns
  go in per ``add`` call (one extraction call each with ``infer``); the batch's session, turns and
  date ride in the memory's metadata (``h2hmem_session`` / ``h2hmem_turns`` / ``h2hmem_date``) and
  ``created_at`` is the session's date.
- Dates: the open-source ``add`` takes no timestamp, and mem0 2.x writes *today's* date into its
  extraction prompt (``## Observation Date`` / ``## Current Date``). The adapter gives mem0's prompt
  builder the session's date instead (wrapping ``mem0.memory.main.generate_additive_extraction_prompt``
  for the calls it makes), so the prompt carries the conversation's own date, never the wall clock,
  and a rebuild sends byte-identical requests (cache hits).
- Telemetry: ``MEM0_TELEMETRY=False`` is set before mem0 is imported (mem0 reads it at import);
  its PostHog client and remote notice fetch are then never used.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ....data import Session
from .._adapter import Hit
from .._endpoint import Endpoint
from .._feed import DATE_KEY, TurnRecord, batches, metadata_turns, turn_metadata

_OBSERVATION_DATE: contextvars.ContextVar[str | None] = contextvars.ContextVar("h2hmem_mem0_date", default=None)


def import_mem0() -> Any:
    """``mem0.Memory`` with telemetry off (the switch is read when mem0 is first imported)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    import mem0
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry

    # in case mem0 was imported before the variable was set (main keeps its own copy of the switch,
    # which also decides whether a shared "migrations" Qdrant store is opened in ~/.mem0)
    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False

    _date_prompts(main)
    return mem0.Memory


def _date_prompts(main: Any) -> None:
    """Make mem0's extraction prompt carry the session date set in :data:`_OBSERVATION_DATE`."""
    original: Callable[..., str] = main.generate_additive_extraction_prompt
    if getattr(original, "h2hmem_dated", False):
        return

    def dated(*args: Any, **kwargs: Any) -> str:
        date = _OBSERVATION_DATE.get()
        if date is not None:
            kwargs.setdefault("current_date", date)
            kwargs.setdefault("timestamp", date)
        return original(*args, **kwargs)

    dated.h2hmem_dated = True  # type: ignore[attr-defined]
    main.generate_additive_extraction_prompt = dated


class Mem0Store:
    """One dialogue's mem0 memory in ``store_dir``.

    Args:
        endpoint: where mem0's chat and embedding requests go.
        store_dir: the folder for Qdrant and the history database (created by the caller).
        user_id: mem0's ``user_id`` for every memory (the dialogue id).
        infer: mem0's LLM extraction on (memories = extracted facts) or off (memories = the turns).
        batch_turns: turns per ``add`` call with ``infer`` (without it, every turn is its own call).
        threshold: mem0's search score threshold (its default 0.1).
    """

    def __init__(
        self, endpoint: Endpoint, store_dir: Path, *, user_id: str, infer: bool, batch_turns: int, threshold: float
    ):
        memory_cls = import_mem0()
        self.user_id = user_id
        self.infer = infer
        self.batch_turns = batch_turns if infer else 1
        self.threshold = threshold
        self._llm = {"model": endpoint.chat_model, "api_key": endpoint.api_key, "openai_base_url": endpoint.base_url}
        self._embedder = {
            "model": endpoint.embedding_model,
            "api_key": endpoint.api_key,
            "openai_base_url": endpoint.embeddings_url,
            "embedding_dims": endpoint.embedding_dims,
        }
        config = {
            "llm": {"provider": "openai", "config": self._llm},
            "embedder": {"provider": "openai", "config": self._embedder},
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "h2hmem",
                    "path": str(store_dir / "qdrant"),
                    "embedding_model_dims": endpoint.embedding_dims,
                    "on_disk": True,
                },
            },
            "history_db_path": str(store_dir / "history.db"),
        }
        self.memory = memory_cls.from_config(config)
        # the gateway's client tags each request with its dialogue/session (openai 3.x annotates httpx2
        # clients but takes httpx ones)
        if endpoint.http_client is not None:
            from openai import OpenAI

            self.memory.llm.client = OpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                http_client=endpoint.http_client(),  # type: ignore[arg-type, unused-ignore]
            )
            self.memory.embedding_model.client = OpenAI(
                api_key=endpoint.api_key,
                base_url=endpoint.embeddings_url,
                http_client=endpoint.http_client(),  # type: ignore[arg-type, unused-ignore]
            )

    def configuration(self) -> dict[str, Any]:
        return {
            "llm": {"provider": "openai", "model": self._llm["model"]},
            "embedder": {
                "provider": "openai",
                "model": self._embedder["model"],
                "dims": self._embedder["embedding_dims"],
            },
            "vector_store": "qdrant (local, on disk)",
            "infer": self.infer,
            "batch_turns": self.batch_turns,
            "threshold": self.threshold,
            "bm25": importlib.util.find_spec("fastembed") is not None,
            "entity_linking": importlib.util.find_spec("spacy") is not None,
        }

    async def add(self, session: Session, records: list[TurnRecord]) -> int:
        calls = 0
        for batch in batches(records, self.batch_turns):
            messages = [{"role": "user", "content": r.line, "name": r.speaker} for r in batch]
            metadata: dict[str, Any] = dict(turn_metadata(batch))
            when = session.date or None
            if when is not None:
                metadata["created_at"] = dt.datetime.combine(when, dt.time(12), tzinfo=dt.timezone.utc).isoformat()
            await asyncio.to_thread(self._add, messages, metadata, batch[0].date)
            calls += 1
        return calls

    def _add(self, messages: list[dict[str, str]], metadata: dict[str, Any], date: str) -> None:
        token = _OBSERVATION_DATE.set(date if date != "?" else "unknown")
        try:
            self.memory.add(messages, user_id=self.user_id, metadata=metadata, infer=self.infer)
        finally:
            _OBSERVATION_DATE.reset(token)

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
        db = getattr(self.memory, "db", None)
        if db is not None and hasattr(db, "close"):
            db.close()

    async def search(self, query: str, top_k: int) -> list[Hit]:
        found = await asyncio.to_thread(
            self.memory.search, query, top_k=top_k, filters={"user_id": self.user_id}, threshold=self.threshold
        )
        hits = []
        for r in found.get("results", []):
            meta = r.get("metadata") or {}
            hits.append(
                Hit(
                    text=str(r.get("memory", "")),
                    score=float(r["score"]) if r.get("score") is not None else None,
                    source=metadata_turns(meta),
                    date=str(meta[DATE_KEY]) if DATE_KEY in meta else None,
                )
            )
        return hits
