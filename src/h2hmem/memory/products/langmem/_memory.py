"""The memory method ``langmem``: LangMem behind h2hmem's memory seam."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from .._adapter import ProductMemory, ProductOptions, ProductStore
from .._endpoint import Endpoint


class LangMemOptions(ProductOptions):
    """LangMem's switches (``--param NAME=VALUE``)."""

    batch_turns: int = Field(4, ge=1)
    """Consecutive turns per extraction call (the evidence of a memory is its batch's turns)."""
    existing_k: int = Field(5, ge=0)
    """Existing memories shown to the manager per batch (LangMem's store manager: 5)."""
    enable_updates: bool = True
    """The manager may rewrite an existing memory with new information (LangMem's default)."""

    build_fields: ClassVar[tuple[str, ...]] = ("batch_turns", "existing_k", "enable_updates")


class LangMemMemory(ProductMemory):
    """LangMem (``langmem``): memories extracted and consolidated by its memory manager, kept in a
    LangGraph SQLite vector store, searched by the question.

    Options: :class:`LangMemOptions` (``top_k``, ``batch_turns``, ``existing_k``, ``enable_updates``).
    """

    name: ClassVar[str] = "langmem"
    distribution: ClassVar[str] = "langmem"
    module: ClassVar[str] = "langmem"
    Options: ClassVar[type[ProductOptions]] = LangMemOptions
    speakers: ClassVar[str] = (
        "every turn is a human message named after its speaker (OpenAI name rules), the name also in its "
        "text ('Kiki: …'): nobody in the observed conversation is the AI"
    )
    evidence_granularity: ClassVar[str] = (
        "a memory names the turns of the batch that created it or last updated it (batch_turns turns)"
    )

    def open_store(self, endpoint: Endpoint, store_dir: Path) -> ProductStore:
        from ._store import LangMemStore

        opts = self.options
        assert isinstance(opts, LangMemOptions)
        return LangMemStore(
            endpoint,
            store_dir,
            batch_turns=opts.batch_turns,
            existing_k=opts.existing_k,
            enable_updates=opts.enable_updates,
        )
