"""The seam glue every product adapter shares: a :class:`~h2hmem.memory.MemoryMethod` over a
:class:`ProductStore`.

:class:`ProductMemory` does what is the same for every product: typed options, the endpoint, one
store per dialogue under ``ctx.state_dir`` with its build marker (a completely built store is
reused, any other rebuilt), sessions fed in time order, the search for each question, the answer
with the shared prompt and reader model (``build_answer_messages``), evidence mapped back to turns,
and the ``describe()`` the manifest records (product distribution, version, configuration). A
product's subpackage supplies its :class:`ProductStore` (what is specific to the product) and a
small subclass naming it.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import ConfigDict

from ... import defaults
from ...data import Session
from .._method import MemoryMethod
from .._options import MethodOptions, TopK
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_text
from .._view import QuestionView
from ._endpoint import Endpoint, product_endpoint
from ._extra import product_version, require_product
from ._feed import TurnRecord, evidence_of, session_records
from ._marker import BuildMarker

TIE_POOL = 10
"""Memories asked of a product beyond ``top_k``, so ties at the top-k boundary are broken by text."""
SCORE_DIGITS = 6
"""Scores equal to this many decimals are ties (a store's float noise must not decide a rerun's prompt)."""


class ProductError(RuntimeError):
    """The product raised while building or searching its memory; the message names the product,
    its version and its own error. The runner records it on the questions it affects."""


@dataclass(frozen=True)
class Hit:
    """One memory the product returned for a query, best first."""

    text: str
    """The memory as the product stores it (an extracted fact, a stored message…)."""
    score: float | None = None
    """The product's own relevance score, when it gives one."""
    source: tuple[str, list[int]] | None = None
    """``(session, turns)`` the memory came from; turns empty = the whole session; None = unknown."""
    date: str | None = None
    """The conversation date of its source (ISO, or as written), when known."""


class ProductOptions(MethodOptions):
    """Options every product adapter takes; a product's model adds its own switches, each documented by
    the docstring under it (the one-line doc ``h2hmem methods show`` prints)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    top_k: TopK = defaults.TOP_K

    build_fields: ClassVar[tuple[str, ...]] = ()
    """Options that change what goes into the store (part of the store's fingerprint)."""


class ProductStore(Protocol):
    """What a product adapter implements: its store for one dialogue."""

    def configuration(self) -> dict[str, Any]:
        """The product configuration the store was built with (no paths, no keys)."""
        ...

    async def add(self, session: Session, records: list[TurnRecord]) -> int:
        """Feed one session's turns (in order); returns how many model-facing product calls it made."""
        ...

    async def search(self, query: str, top_k: int) -> list[Hit]:
        """The product's memories for ``query``, best first, at most ``top_k``."""
        ...

    def close(self) -> None:
        """Release the store's files (locks, connections)."""
        ...


class ProductMemory(MemoryMethod[ProductOptions]):
    """A memory product as a memory method (one instance per dialogue).

    Subclasses set :attr:`name`, :attr:`distribution`, :attr:`module`, :attr:`Options` and
    implement :meth:`open_store`. Options are the fields of :attr:`Options` (``--param NAME=VALUE``).

    Raises:
        ProductMissingError: the product's extra is not installed (one line naming it).
        MethodOptionsError: an unknown option or a value of the wrong type.
    """

    name: ClassVar[str]
    Options: ClassVar[type[ProductOptions]] = ProductOptions
    distribution: ClassVar[str]
    """The product's distribution on the package index (``mem0ai``)."""
    module: ClassVar[str]
    """The module imported to check that it is installed (``mem0``)."""
    modality: ClassVar[str] = "caption"
    speakers: ClassVar[str] = ""
    """How the conversation's speakers are given to the product (for ``describe()``)."""
    evidence_granularity: ClassVar[str] = ""
    """What a retrieved memory can be traced back to (for ``describe()``)."""

    def __init__(self, ctx: MemoryContext, options: ProductOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        require_product(self.module, self.distribution, self.name)
        self.version = product_version(self.distribution)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._store: ProductStore | None = None
        self._marker: BuildMarker | None = None
        self._endpoint: Endpoint | None = None
        self._configuration: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._resources = AsyncExitStack()
        self.stats: dict[str, float] = {
            "sessions_fed": 0,
            "sessions_reused": 0,
            "turns_fed": 0,
            "product_build_calls": 0,
            "build_s": 0.0,
        }

    @classmethod
    def third_party(cls) -> tuple[str, ...]:
        """The product's distribution, whose version the manifest's environment records."""
        return (cls.distribution,)

    @classmethod
    def run_identity(cls) -> dict[str, Any]:
        """Part of the run's identity (the runner adds it): the product's distribution and installed
        version, so a run never resumes under another version of the product."""
        return {"product": cls.distribution, "version": product_version(cls.distribution)}

    # ----- what a product supplies --------------------------------------------------------------
    def open_store(self, endpoint: Endpoint, store_dir: Path) -> ProductStore:
        """Open (create or reuse) the product's store in ``store_dir``."""
        raise NotImplementedError

    # ----- the seam -----------------------------------------------------------------------------
    def fingerprint(self, endpoint: Endpoint) -> dict[str, Any]:
        """What a saved store depends on: product, version, build options, endpoint models."""
        opts = self.options.model_dump(mode="json")
        return {
            "product": self.distribution,
            "version": self.version,
            "options": {k: opts[k] for k in self.options.build_fields},
            "endpoint": endpoint.describe(),
        }

    async def _ready(self) -> ProductStore:
        if self._store is None:
            endpoint = await product_endpoint(self.ctx, self._resources)
            folder = self.ctx.state_dir
            if folder is None:
                self._tmp = tempfile.TemporaryDirectory(prefix=f"h2hmem-{self.name}-")
                folder = Path(self._tmp.name)
            marker = await asyncio.to_thread(BuildMarker(folder / self.name, self.fingerprint(endpoint)).open)
            try:
                self._store = await asyncio.to_thread(self.open_store, endpoint, marker.store_dir)
            except Exception as e:
                raise self._error("opening its store", e) from e
            self._endpoint, self._marker = endpoint, marker
            self._configuration = self._store.configuration()
        return self._store

    async def observe(self, session: Session) -> None:
        """Feed ``session`` to the product (skipped when a reused store holds it already).

        Raises:
            ProductError: the product failed; the store is left dirty and rebuilt by the next run.
        """
        store = await self._ready()
        assert self._marker is not None
        records = session_records(session, self.ctx.captions)
        if not records:
            return
        if self._marker.has(session.name):
            self.stats["sessions_reused"] += 1
            return
        await asyncio.to_thread(self._marker.begin, session.name)
        t0 = time.perf_counter()
        async with self._lock:
            try:
                calls = await store.add(session, records)
                self._check()
            except Exception as e:
                raise self._error(f"taking in {session.name}", e) from e
        self.stats["build_s"] += time.perf_counter() - t0
        self.stats["sessions_fed"] += 1
        self.stats["turns_fed"] += len(records)
        self.stats["product_build_calls"] += calls

    def _query(self, question: QuestionView) -> str:
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        return " ".join([question.text.strip(), *q_caps])

    async def _hits(self, question: QuestionView) -> list[Hit]:
        store = await self._ready()
        assert self._marker is not None
        await asyncio.to_thread(self._marker.seal)  # asked a question: every session so far went in whole
        async with self._lock:
            try:
                hits = await store.search(self._query(question), self.options.top_k + TIE_POOL)
                self._check()
            except Exception as e:
                raise self._error("searching its memory", e) from e
        if all(h.score is not None for h in hits):
            # equal scores come back in any order from vector stores (a rebuilt store's ids differ), also
            # at the top-k boundary: ask for TIE_POOL more, break ties by text, then cut, so the same
            # memories give the same prompt (and a cache hit) on a rerun
            hits = sorted(hits, key=lambda h: (-round(h.score or 0.0, SCORE_DIGITS), h.text))
        return hits[: self.options.top_k]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The turns behind the memories ``answer`` would show, best first (no answer-model call;
        the product may embed the query)."""
        return evidence_of((h.source, h.score) for h in await self._hits(question))

    async def answer(self, question: QuestionView) -> Answer:
        """Search the product's memory and answer with the shared prompt and the run's answer model.

        Raises:
            ProductError: the product failed (recorded on this question by the runner).
        """
        t0 = time.perf_counter()
        hits = await self._hits(question)
        retrieval_s = time.perf_counter() - t0
        memory = "\n".join(render_hit(h) for h in hits) or "(nothing relevant was retrieved)"
        if question.images:
            memory += "\n\nImage attached to the question: " + " ".join(
                image_text(r, self.ctx.captions) for r in question.images
            )
        result = await self.ctx.chat.chat(
            build_answer_messages(question, memory), self.ctx.answer_config, stage="answer"
        )
        return Answer(
            text=result.text.strip(),
            evidence=evidence_of((h.source, h.score) for h in hits),
            details={"retrieved": len(hits), "retrieval_s": round(retrieval_s, 6), "memories": [h.text for h in hits]},
        )

    async def aclose(self) -> None:
        """Release the product's store (its files stay for a later run to reuse)."""
        store, self._store = self._store, None
        if store is not None:
            await asyncio.to_thread(store.close)
        await self._resources.aclose()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def describe(self) -> dict[str, Any]:
        store = self._store
        return {
            "method": self.name,
            "modality": self.modality,
            "product": {"distribution": self.distribution, "version": self.version},
            "configuration": self._configuration if store is None else store.configuration(),
            "endpoint": self._endpoint.describe() if self._endpoint is not None else None,
            "store_reused": self._marker.reused if self._marker is not None else None,
            "speakers": self.speakers,
            "dates": "the session's own date (never the wall clock)",
            "images": "memory images as their captions inline in the turn text; question images as captions",
            "evidence": self.evidence_granularity,
            "answer": "shared answer prompt (build_answer_messages) with the run's answer model",
            "stats": {k: round(v, 6) if isinstance(v, float) else v for k, v in self.stats.items()},
        }

    def _check(self) -> None:
        """Re-raise a spend-guard stop the product met as an HTTP error (outside ``except Exception``:
        the runner stops the run instead of recording a product failure)."""
        if self._endpoint is not None:
            self._endpoint.check()

    def _error(self, doing: str, e: Exception) -> ProductError:
        return ProductError(f"{self.distribution} {self.version} failed {doing}: {type(e).__name__}: {e}")


def render_hit(hit: Hit) -> str:
    """A retrieved memory as one context line: ``"(session3, 2024-03-20) Kiki adopted a cat."``."""
    where = ", ".join(x for x in ((hit.source[0] if hit.source else None), hit.date) if x)
    text = " ".join(hit.text.split())
    return f"({where}) {text}" if where else text
