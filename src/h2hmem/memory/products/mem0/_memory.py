"""The memory method ``mem0``: mem0 open source behind h2hmem's memory seam."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from .._adapter import ProductMemory, ProductOptions, ProductStore
from .._endpoint import Endpoint


class Mem0Options(ProductOptions):
    """mem0's switches (``--param NAME=VALUE``)."""

    infer: bool = True
    """mem0's LLM extraction: memories are the facts its model extracts (True) or the turns as given (False)."""
    batch_turns: int = Field(2, ge=1)
    """Consecutive turns per ``add`` call with ``infer`` (one extraction call each; the evidence of a
    memory is its batch's turns). mem0's own LoCoMo evaluation adds two messages at a time."""
    threshold: float = Field(0.1, ge=0.0, le=1.0)
    """mem0's search threshold: memories scoring below it are not returned (mem0's default)."""

    build_fields: ClassVar[tuple[str, ...]] = ("infer", "batch_turns")


class Mem0Memory(ProductMemory):
    """mem0 (``mem0ai``): LLM-extracted memories in a local Qdrant store, searched by the question.

    Options: :class:`Mem0Options` (``top_k``, ``infer``, ``batch_turns``, ``threshold``).
    """

    name: ClassVar[str] = "mem0"
    distribution: ClassVar[str] = "mem0ai"
    module: ClassVar[str] = "mem0"
    Options: ClassVar[type[ProductOptions]] = Mem0Options
    speakers: ClassVar[str] = (
        "every turn is a 'user' message named after its speaker, the name also in its text "
        "('Kiki: …'): the conversation is observed, nobody in it is mem0's assistant"
    )
    evidence_granularity: ClassVar[str] = (
        "a memory names the turns of the add() call it came from: batch_turns turns with infer, one turn without"
    )

    def open_store(self, endpoint: Endpoint, store_dir: Path) -> ProductStore:
        from ._store import Mem0Store

        opts = self.options
        assert isinstance(opts, Mem0Options)
        return Mem0Store(
            endpoint,
            store_dir,
            user_id=self.ctx.dialogue_id,
            infer=opts.infer,
            batch_turns=opts.batch_turns,
            threshold=opts.threshold,
        )
