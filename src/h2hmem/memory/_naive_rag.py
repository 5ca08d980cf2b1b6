"""Naive RAG: dense retrieval over single turns, images as captions (spec/baselines.md).

- chunk = 1 turn; its text carries the session, date, speaker, text and ``[Image …: caption]``
  (role and date in every chunk);
- embedder: all-MiniLM-L6-v2 (384-d), cosine similarity;
- query = question text (+ the question image's caption); top-k 5; hits with similarity ≤ 0.1 dropped;
- context = the retrieved turns with session, date and speaker, ordered by similarity.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from ..data import Session
from ._prompt import build_answer_messages
from ._protocol import Answer, Evidence, MemoryContext
from ._view import QuestionView
from ._render import image_text, render_turn

TOP_K = 5
"""Published top-k."""
MIN_SIMILARITY = 0.1
"""Official threshold: hits with cosine ≤ 0.1 are dropped."""


class NaiveRAGMemory:
    """Caption-based dense retrieval baseline.

    Args:
        ctx: run context (answer model, captions, shared text embedder).
        top_k: turns retrieved per question (published: 5).
        min_similarity: cosine threshold; hits at or below it are dropped (published: 0.1).
    """

    name: ClassVar[str] = "naive-rag"
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, top_k: int = TOP_K, min_similarity: float = MIN_SIMILARITY):
        if ctx.embedder_factory is None:
            raise ValueError("naive-rag needs a text embedder (MemoryContext.embedder_factory)")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        from ..embed import VectorIndex

        self.ctx = ctx
        self.top_k = top_k
        self.min_similarity = min_similarity
        self.embedder = ctx.embedder_factory()
        self.index = VectorIndex()
        self._chunks: dict[str, tuple[str, int, str]] = {}

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "modality": self.modality, "top_k": self.top_k,
                "min_similarity": self.min_similarity, "embedder": getattr(self.embedder, "name", "?"),
                "chunk": "1 turn: [date] speaker: text [Image <file> in <session>: caption]",
                "images": "captions; file name only when no caption"}

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        ids, texts = [], []
        for turn in session.turns:
            text = f"({session.name}) " + render_turn(session, turn, self.ctx.captions)
            cid = f"{session.name}/t{turn.index}"
            self._chunks[cid] = (session.name, turn.index, text)
            ids.append(cid)
            texts.append(text)
        self.index.add(ids, await self.embedder.embed(texts))

    async def _hits(self, question: QuestionView) -> list[tuple[str, float]]:
        """Retrieved chunk ids with their cosine, best first."""
        query = question.text.strip()
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        if q_caps:
            query += " " + " ".join(q_caps)
        if not len(self.index):
            return []
        qvec = (await self.embedder.embed([query]))[0]
        return [(cid, s) for cid, s in self.index.search(qvec, self.top_k)[0] if s > self.min_similarity]

    def _evidence(self, hits: list[tuple[str, float]]) -> list[Evidence]:
        return [Evidence(session=self._chunks[cid][0], turn=self._chunks[cid][1], score=round(s, 6)) for cid, s in hits]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The turns ``answer`` would show, best first (no model call)."""
        return self._evidence(await self._hits(question))

    async def answer(self, question: QuestionView) -> Answer:
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        t0 = time.perf_counter()
        hits = await self._hits(question)
        retrieval_s = time.perf_counter() - t0
        lines = [self._chunks[cid][2] for cid, _ in hits]
        memory = "\n".join(lines) if lines else "(nothing relevant was retrieved)"
        if q_caps:
            memory += "\n\nImage attached to the question: " + " ".join(q_caps)
        result = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config, stage="answer")
        return Answer(
            text=result.text.strip(),
            evidence=self._evidence(hits),
            usage=result.usage,
            cached=result.cached,
            details={"retrieved": len(hits), "retrieval_s": round(retrieval_s, 6)},
        )
