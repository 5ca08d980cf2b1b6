"""The memory method ``cognee``: cognee behind h2hmem's memory seam."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from .._adapter import ProductMemory, ProductOptions, ProductStore
from .._endpoint import Endpoint


class CogneeOptions(ProductOptions):
    """cognee's switches (``--param NAME=VALUE``)."""

    search: Literal["chunks", "summaries"] = "chunks"
    """What a question retrieves: cognee's ``CHUNKS`` (conversation chunks, by vector similarity) or
    ``SUMMARIES`` (its model's summary of each chunk)."""
    batch_turns: int = Field(8, ge=1)
    """Consecutive turns per document given to ``cognee.add`` (per chunk: one graph extraction and one summary call)."""
    chunk_size: int = Field(1024, ge=32)
    """cognee's chunk size in tokens: a longer document is cut into several chunks (the default keeps a batch whole)."""

    build_fields: ClassVar[tuple[str, ...]] = ("batch_turns", "chunk_size")


class CogneeMemory(ProductMemory):
    """cognee (``cognee``): the conversation as dated documents, cognified into chunks, a knowledge
    graph of entities and relations, and chunk summaries; the question searches chunks or summaries.

    cognee's configuration is process-global, so the dialogues' stores are built and searched one
    at a time (a lock shared by every ``cognee`` instance of the process).

    Options: :class:`CogneeOptions` (``top_k``, ``search``, ``batch_turns``, ``chunk_size``).
    """

    name: ClassVar[str] = "cognee"
    distribution: ClassVar[str] = "cognee"
    module: ClassVar[str] = "cognee"
    Options: ClassVar[type[ProductOptions]] = CogneeOptions
    speakers: ClassVar[str] = (
        "documents of turn lines 'Speaker: text' (with the date): cognee's graph extraction makes each "
        "speaker a person entity by name; there are no user/assistant roles in cognee"
    )
    evidence_granularity: ClassVar[str] = (
        "a chunk (or the summary of a chunk) names the turns whose lines it holds: a batch of batch_turns "
        "turns when the batch is one chunk, fewer when cognee cut it"
    )

    def open_store(self, endpoint: Endpoint, store_dir: Path) -> ProductStore:
        from ._store import CogneeStore

        opts = self.options
        assert isinstance(opts, CogneeOptions)
        return CogneeStore(
            endpoint, store_dir, batch_turns=opts.batch_turns, chunk_size=opts.chunk_size, search=opts.search
        )
