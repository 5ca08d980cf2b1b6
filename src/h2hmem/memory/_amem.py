"""A-Mem: agentic Zettelkasten notes, caption-based (spec/baselines.md, "A-Mem").

Construction, turn by turn in time order (``observe``):

1. the note writer (``ctx.build_chat`` or ``ctx.chat``; temperature 0.3, JSON mode) reads the
   turn's content ``[speaker]: date: text [image: file] [image_description: caption]`` and writes
   keywords, tags and a one-line context (an unparseable reply gives a fallback note, counted);
2. evolution: the 5 existing notes nearest to the new one (cosine) are shown with it; the model
   decides whether to link it to some of them ("strengthen", which also sets its tags) and/or
   rewrite their context and tags ("update_neighbor").

The note store is saved in ``ctx.state_dir`` after every turn, so a repeated or interrupted run
never rebuilds a note that exists. Retrieval: 0.5 · min-max BM25 + 0.5 · cosine over the note
text, keywords, tags and context; top-k 5; optional link-following. Answers use the shared prompt
at temperature 0.1 (the official A-Mem run used 0.5).
"""

from __future__ import annotations

import time

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..data import Session
from ..llm._types import GenerationConfig
from ._amem_notes import (
    Note, NoteStore, analysis_messages, evolution_messages, note_content, parse_analysis, parse_evolution,
    prompts_hash,
)
from ._amem_retrieve import ALPHA, BM25Scorer, hybrid_scores, top_k
from ._prompt import build_answer_messages
from ._protocol import Answer, Evidence, MemoryContext
from ._view import QuestionView
from ._render import image_text

TOP_K = 5
"""Published retrieval top-k."""
NEIGHBOURS = 5
"""Nearest notes considered for evolution (published)."""
BUILD_TEMPERATURE = 0.3
"""Note-writer temperature (official A-Mem: ~0.3)."""
BUILD_MAX_TOKENS = 1024
OFFICIAL_ANSWER_TEMPERATURE = 0.5


class AMemMemory:
    """Agentic memory notes with hybrid retrieval.

    Args:
        ctx: run context (note writer ``build_chat`` or ``chat``, captions, text embedder, state_dir).
        top_k: notes retrieved per question (published 5).
        neighbours: nearest notes shown to the evolution step (published 5).
        alpha: weight of the normalised BM25 score (published 0.5; the cosine gets 1 − alpha).
        follow_links: also show the notes linked from the retrieved ones (published code had it,
            unused: default False); at most ``top_k`` linked notes are added.
        evolve: run the evolution step (published: yes).
        build_temperature, build_max_tokens: note-writer generation settings (published 0.3).
    """

    name: ClassVar[str] = "a-mem"
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, top_k: int = TOP_K, neighbours: int = NEIGHBOURS, alpha: float = ALPHA,
                 follow_links: bool = False, evolve: bool = True, build_temperature: float = BUILD_TEMPERATURE,
                 build_max_tokens: int = BUILD_MAX_TOKENS):
        if top_k < 1 or neighbours < 0 or not 0.0 <= alpha <= 1.0:
            raise ValueError("a-mem: top_k must be >= 1, neighbours >= 0 and alpha within [0, 1]")
        self.ctx = ctx
        self.top_k, self.neighbours, self.alpha = top_k, neighbours, alpha
        self.follow_links, self.evolve = follow_links, evolve
        self.writer = ctx.build_chat or ctx.chat
        self.build_config = GenerationConfig(temperature=build_temperature, max_tokens=build_max_tokens, json_mode=True)
        if ctx.embedder_factory is not None:
            self.embedder = ctx.embedder_factory()
        else:
            from ..embed import load_embedder

            self.embedder = load_embedder("minilm")
        self.path: Path | None = ctx.state_dir / "amem_notes.json" if ctx.state_dir else None
        self.store = NoteStore.open(self.path, self._fingerprint())
        self._vectors: np.ndarray | None = None  # (len(notes), dim), rows follow store.notes
        self._bm25: BM25Scorer | None = None

    def _fingerprint(self) -> dict[str, Any]:
        return {"writer": getattr(self.writer, "spec", type(self.writer).__name__), "prompts": prompts_hash(),
                "build_temperature": self.build_config.temperature, "build_max_tokens": self.build_config.max_tokens,
                "neighbours": self.neighbours, "evolve": self.evolve,
                "embedder": getattr(self.embedder, "name", type(self.embedder).__name__)}

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "modality": self.modality, "top_k": self.top_k, "neighbours": self.neighbours,
                "alpha_bm25": self.alpha, "follow_links": self.follow_links, "evolve": self.evolve,
                "note_writer": getattr(self.writer, "spec", "?"), "build_temperature": self.build_config.temperature,
                "embedder": getattr(self.embedder, "name", "?"),
                "answer_temperature": self.ctx.answer_config.temperature,
                "images": "captions: note content '[speaker]: date: text [image: <file> in <session>] "
                          "[image_description: caption]'; question image as its caption",
                "deviations": [f"answer temperature {self.ctx.answer_config.temperature} (official A-Mem run: "
                               f"{OFFICIAL_ANSWER_TEMPERATURE}), as for the other methods",
                               "unparseable note-writer replies give fallback notes (official code crashed); "
                               "count in stats.analysis_failures"],
                "stats": self.store.stats.model_dump()}

    # ----- construction ----------------------------------------------------------------------

    async def _vectors_now(self) -> np.ndarray:
        """Note vectors, computed once for notes loaded from disk."""
        if self._vectors is None or len(self._vectors) != len(self.store.notes):
            if self.store.notes:
                self._vectors = np.asarray(await self.embedder.embed([n.document() for n in self.store.notes]),
                                           np.float32)
            else:
                self._vectors = None
        return self._vectors if self._vectors is not None else np.zeros((0, 0), np.float32)

    async def _write(self, messages) -> str:
        self.store.stats.construction_calls += 1
        result = await self.writer.chat(messages, self.build_config, stage="memory_build")
        return result.text

    async def _add_turn(self, session: Session, turn_index: int) -> None:
        turn = session.turns[turn_index]
        date = session.date.isoformat() if session.date else (session.raw_date or "date unknown")
        note = Note(id=f"{session.name}/t{turn.index}", session=session.name, turn=turn.index, date=date,
                    content=note_content(session, turn, self.ctx.captions))
        analysis = parse_analysis(await self._write(analysis_messages(note.content)))
        if analysis is None:
            note.fallback = True
            self.store.stats.analysis_failures += 1
        else:
            note.keywords, note.tags, note.context = analysis
        vectors = await self._vectors_now()
        new_vec = np.asarray(await self.embedder.embed([note.document()]), np.float32)
        if self.evolve and self.neighbours and len(self.store.notes):
            document = note.document()
            await self._evolve(note, new_vec[0], vectors)
            vectors = await self._vectors_now()
            if note.document() != document:  # "strengthen" may have replaced its tags
                new_vec = np.asarray(await self.embedder.embed([note.document()]), np.float32)
        self.store.notes.append(note)
        self._vectors = new_vec if len(vectors) == 0 else np.concatenate([vectors, new_vec])
        self._bm25 = None

    async def _evolve(self, note: Note, vec: np.ndarray, vectors: np.ndarray) -> None:
        near = [i for i, _ in top_k(vectors @ vec, self.neighbours)]
        neighbours = [self.store.notes[i] for i in near]
        decision = parse_evolution(await self._write(evolution_messages(note, neighbours)), len(neighbours))
        if decision is None:
            self.store.stats.evolution_failures += 1
            return
        if not decision.should_evolve:
            return
        self.store.stats.evolutions += 1
        if decision.strengthen:
            note.links.extend(neighbours[i].id for i in decision.connections if neighbours[i].id not in note.links)
            self.store.stats.links += len(decision.connections)
            if decision.tags:
                note.tags = decision.tags
        if decision.update_neighbor:
            changed = []
            for k, i in enumerate(near):
                old = self.store.notes[i]
                ctx_new = decision.neighbour_contexts[k] if k < len(decision.neighbour_contexts) else None
                tags_new = decision.neighbour_tags[k] if k < len(decision.neighbour_tags) else None
                update = {}
                if ctx_new and ctx_new != old.context:
                    update["context"] = ctx_new
                if tags_new and tags_new != old.tags:
                    update["tags"] = tags_new
                if update:
                    self.store.notes[i] = old.model_copy(update=update)
                    changed.append(i)
            if changed:
                self.store.stats.neighbour_updates += len(changed)
                fresh = np.asarray(await self.embedder.embed([self.store.notes[i].document() for i in changed]),
                                   np.float32)
                assert self._vectors is not None
                self._vectors[changed] = fresh

    async def observe(self, session: Session) -> None:
        """Turn each not-yet-noted turn of ``session`` into a note (saved after each turn)."""
        if session.absent or not session.turns:
            return
        done = self.store.turns_done.get(session.name, 0)
        for i in range(done, len(session.turns)):
            await self._add_turn(session, i)
            self.store.turns_done[session.name] = i + 1
            self.store.save(self.path)

    # ----- retrieval and answer --------------------------------------------------------------

    async def retrieve(self, query: str) -> list[tuple[Note, float | None]]:
        """Top-k notes by hybrid score (then linked notes with score None when ``follow_links``)."""
        notes = self.store.notes
        if not notes:
            return []
        vectors = await self._vectors_now()
        if self._bm25 is None or self._bm25.n != len(notes):
            self._bm25 = BM25Scorer([n.document() for n in notes])
        qvec = np.asarray(await self.embedder.embed([query]), np.float32)[0]
        scores = hybrid_scores(self._bm25.scores(query), vectors @ qvec, self.alpha)
        hits: list[tuple[Note, float | None]] = [(notes[i], s) for i, s in top_k(scores, self.top_k)]
        if self.follow_links:
            by_id = {n.id: n for n in notes}
            seen = {n.id for n, _ in hits}
            linked = [by_id[lid] for n, _ in list(hits) for lid in n.links if lid in by_id]
            for n in linked:
                if n.id not in seen and len(hits) < 2 * self.top_k:
                    hits.append((n, None))
                    seen.add(n.id)
        return hits

    def _query(self, question: QuestionView) -> str:
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        return " ".join([question.text.strip(), *q_caps])

    @staticmethod
    def _evidence(hits: list[tuple[Note, float | None]]) -> list[Evidence]:
        return [Evidence(session=n.session, turn=n.turn, score=None if s is None else round(s, 6)) for n, s in hits]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The notes' turns ``answer`` would show, best first (no answer-model call)."""
        return self._evidence(await self.retrieve(self._query(question)))

    async def answer(self, question: QuestionView) -> Answer:
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        t0 = time.perf_counter()
        hits = await self.retrieve(self._query(question))
        retrieval_s = time.perf_counter() - t0
        memory = "\n\n".join(n.render() for n, _ in hits) if hits else "(nothing relevant was retrieved)"
        if q_caps:
            memory += "\n\nImage attached to the question: " + " ".join(q_caps)
        result = await self.ctx.chat.chat(build_answer_messages(question, memory), self.ctx.answer_config,
                                          stage="answer")
        return Answer(
            text=result.text.strip(),
            evidence=self._evidence(hits),
            usage=result.usage, cached=result.cached,
            details={"retrieved": len(hits), "retrieval_s": round(retrieval_s, 6), "linked": sum(1 for _, s in hits if s is None), "notes": len(self.store.notes),
                     "fallback_notes": self.store.stats.analysis_failures})
