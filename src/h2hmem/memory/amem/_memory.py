"""A-Mem: agentic Zettelkasten notes, caption-based (docs/baselines.md, "A-Mem").

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
at temperature 0.1.

That is the preset ``harmonized``. Under ``paper`` (options below, :class:`AMemOptions`): the official
note content and time (``[role]: <timeline_date>:text [image: file] …``, ``<date>_<turn>``), Okapi
BM25 over NLTK word tokens (no stopword removal) on the official labelled note text with the
official min-max, evolution neighbours from that hybrid search on the note content, the official
note-writer and evolution prompts (JSON schemas, neighbours by memory index), and the
official answer request (:mod:`._paper`): its per-type prompt, ``[k] [Time:…] [Session:…]``
context, the question image as an image part, 2,000 answer tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ... import defaults
from ...data import Session
from ...llm import GenerationConfig, Message
from .._method import MemoryMethod
from .._options import AttachQuestionImage, MethodOptions, TopK, preset_option
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import image_text
from .._retrieval import ALPHA, BM25Scorer, OkapiBM25, hybrid_scores, official_minmax, top_k
from .._view import QuestionView
from ._notes import (
    Note,
    NoteStore,
    analysis_messages,
    evolution_messages,
    note_content,
    official_note_content,
    parse_analysis,
    parse_evolution,
    parse_json_object,
    prompts_hash,
)
from ._paper import (
    OFFICIAL_FALLBACK,
    official_analysis,
    official_evolution,
    official_messages,
    official_query,
    read_official_analysis,
    read_reply,
)

NEIGHBOURS = 5
"""Nearest notes considered for evolution (published)."""
BUILD_TEMPERATURE = 0.3
"""Note-writer temperature (official A-Mem: ~0.3)."""
BUILD_MAX_TOKENS = 1024


class AMemOptions(MethodOptions):
    """Options of ``a-mem`` (``docs/protocol.md``)."""

    top_k: TopK = defaults.TOP_K
    neighbours: int = Field(NEIGHBOURS, ge=0, description="nearest notes shown to the evolution step (published 5)")
    alpha: float = Field(
        ALPHA, ge=0.0, le=1.0, description="weight of the normalised BM25 score; the cosine gets 1 - alpha (0.5)"
    )
    follow_links: bool = Field(
        False, description="also show up to top_k notes linked from the retrieved ones (published code: unused)"
    )
    evolve: bool = Field(True, description="run the evolution step (published: yes)")
    build_temperature: float = Field(BUILD_TEMPERATURE, ge=0.0, description="note-writer temperature (published 0.3)")
    build_max_tokens: int = Field(BUILD_MAX_TOKENS, ge=1, description="note-writer new-token limit")
    note_format: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "note content '[role]: <timeline_date>:text [image: file] [image_description: …]' with time "
        "'<date>_<turn>', or '[role]: ISO-date: text [image: file in session] …'",
    )
    retrieval: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "Okapi BM25 (rank_bm25 formula) over NLTK word tokens, no stopword removal, on 'content: … context: … "
        "keywords: … tags: …' with (s−min)/(max−min+1e-6); or bm25s with English stopwords on the note text",
    )
    evolution_neighbours: Literal["hybrid", "cosine"] = preset_option(
        "hybrid",
        "cosine",
        "notes shown to the evolution step: the hybrid search on the new note's content (official) or the "
        "nearest by cosine",
    )
    request: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "answer request: the script's prompt, '[k] [Time:…] [Session:…] content' context, query with "
        "'image description:' and reply reading; or the shared prompt with rendered notes",
    )
    attach_question_image: AttachQuestionImage = preset_option(
        True,
        False,
        "send the question's image as an image part (official: before the text; a text-only model gets the "
        "script's caption prompt) instead of its caption text",
    )
    answer_max_tokens: int | None = preset_option(
        2000, None, "new tokens of the answer call; None = the run's --answer-max-tokens", ge=1
    )
    note_prompts: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "note-writer and evolution prompts: the script's texts with their JSON schemas (properties in the "
        "script's order; system 'You are a helpful assistant.', temperature 0.3, 2,000 tokens; neighbours "
        "listed by memory index, links by index or id; after the last unreadable reply the script's note: "
        "keywords and tags ['对话'], context 'General'), or h2hmem's own (an empty fallback note)",
    )
    analysis_tries: int = preset_option(
        3,
        1,
        "note-writer requests per turn while the reply is unreadable (official analyze_content: 3); each "
        "retry is a new call, keyed by its try number, so it reaches the model, not the request cache",
        ge=1,
    )
    reindex_every: int = preset_option(
        100,
        0,
        "re-index the notes whose context and tags an evolution rewrote only at every N-th evolution, "
        "answers using the index as last rebuilt (official evo_threshold 100, consolidate_memories); 0 = at once",
        ge=0,
    )
    question_image_encoding: Literal["raw", "jpeg1024"] = preset_option(
        "raw",
        "jpeg1024",
        "an attached question image: the file's bytes with the MIME type of its extension and "
        "'detail': 'auto' (official), or a JPEG re-encoded to at most 1,024 px",
    )


class AMemMemory(MemoryMethod[AMemOptions]):
    """Agentic memory notes with hybrid retrieval.

    Args:
        ctx: run context (note writer ``build_chat`` or ``chat``, captions, text embedder, state_dir).
        options: :class:`AMemOptions` (``None`` = from ``params`` under ``ctx.preset``).
    """

    name: ClassVar[str] = "a-mem"
    Options = AMemOptions
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, options: AMemOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        o = self.options
        top_k, neighbours, alpha = o.top_k, o.neighbours, o.alpha
        follow_links, evolve = o.follow_links, o.evolve
        build_temperature, build_max_tokens = o.build_temperature, o.build_max_tokens
        self._doc: Callable[[Note], str] = (
            (lambda n: n.searchable()) if self.options.retrieval == "official" else (lambda n: n.document())
        )
        self.top_k, self.neighbours, self.alpha = top_k, neighbours, alpha
        self.follow_links, self.evolve = follow_links, evolve
        self.writer = ctx.build_chat or ctx.chat
        self.build_config = GenerationConfig(temperature=build_temperature, max_tokens=build_max_tokens, json_mode=True)
        if ctx.embedder_factory is not None:
            self.embedder = ctx.embedder_factory()
        else:
            from ...embed import load_embedder

            self.embedder = load_embedder("minilm")
        self.path: Path | None = ctx.state_dir / "amem_notes.json" if ctx.state_dir else None
        self.store = NoteStore.open(self.path, self._fingerprint())
        self._vectors: np.ndarray | None = None  # (len(notes), dim), rows follow store.notes
        self._bm25: BM25Scorer | OkapiBM25 | None = None

    def _fingerprint(self) -> dict[str, Any]:
        return {
            "writer": getattr(self.writer, "spec", type(self.writer).__name__),
            "prompts": prompts_hash(),
            "build_temperature": self.build_config.temperature,
            "build_max_tokens": self.build_config.max_tokens,
            "neighbours": self.neighbours,
            "evolve": self.evolve,
            **self._build_options(),
            "embedder": getattr(self.embedder, "name", type(self.embedder).__name__),
        }

    def _build_options(self) -> dict[str, Any]:
        """The options that shape the notes, for the store fingerprint (absent when all are h2hmem's, so
        stores written before the presets existed stay valid)."""
        keys = ("note_format", "retrieval", "evolution_neighbours", "note_prompts", "analysis_tries", "reindex_every")
        chosen = {k: getattr(self.options, k) for k in keys}
        harmonized = {k: AMemOptions.preset_table()["harmonized"][k] for k in keys}
        return {} if chosen == harmonized else {"options": chosen}

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "note_writer": getattr(self.writer, "spec", "?"),
            "embedder": getattr(self.embedder, "name", "?"),
            "answer_temperature": self.ctx.answer_config.temperature,
            "images": "captions: note content '[speaker]: date: text [image: <file> in <session>] "
            "[image_description: caption]'; question image as its caption",
            "deviations": [
                "a turn whose note-writer replies stay unreadable gets a fallback note (the script's under "
                "note_prompts=official, else an empty one), counted in stats.analysis_failures; the official "
                "construction script crashed on image turns"
            ],
            "stats": self.store.stats.model_dump(),
        }

    # ----- construction ----------------------------------------------------------------------

    def _indexed_doc(self, note: Note) -> str:
        """The retrieval text the index holds for ``note`` (stale until the next re-indexing, see ``reindex_every``)."""
        return note.indexed if note.indexed is not None else self._doc(note)

    async def _vectors_now(self) -> np.ndarray:
        """Note vectors, computed once for notes loaded from disk."""
        if self._vectors is None or len(self._vectors) != len(self.store.notes):
            if self.store.notes:
                self._vectors = np.asarray(
                    await self.embedder.embed([self._indexed_doc(n) for n in self.store.notes]), np.float32
                )
            else:
                self._vectors = None
        return self._vectors if self._vectors is not None else np.zeros((0, 0), np.float32)

    async def _write(self, messages: list[Message], config: GenerationConfig | None = None) -> str:
        result = await self.writer.chat(messages, config or self.build_config, stage="memory_build")
        self.store.stats.construction_calls += 1  # a reply came (a call refused by --max-cost is not one)
        return result.text

    async def _analyse(self, content: str) -> tuple[list[str], list[str], str] | None:
        """``(keywords, tags, context)`` of the note writer's reply, asking again while the reply is
        unreadable (``analysis_tries`` in all; try ``k`` is sent with ``GenerationConfig.attempt=k``, a
        cache key of its own, so it reaches the model and a rerun replays it); None when none was readable."""
        official = self.options.note_prompts == "official"
        messages, config = official_analysis(content) if official else (analysis_messages(content), self.build_config)
        read = read_official_analysis if official else parse_analysis
        for attempt in range(int(self.options.analysis_tries)):
            if attempt:
                self.store.stats.analysis_retries += 1
            analysis = read(await self._write(messages, config.model_copy(update={"attempt": attempt})))
            if analysis is not None:
                return analysis
        return None

    async def _add_turn(self, session: Session, turn_index: int) -> None:
        turn = session.turns[turn_index]
        date = session.date.isoformat() if session.date else (session.raw_date or "date unknown")
        if self.options.note_format == "official":
            note = Note(
                id=f"{session.name}/t{turn.index}",
                session=session.name,
                turn=turn.index,
                date=date,
                content=official_note_content(session, turn, self.ctx.captions),
                time=f"{session.raw_date or ''}_{turn.index + 1:03d}",
            )
        else:
            note = Note(
                id=f"{session.name}/t{turn.index}",
                session=session.name,
                turn=turn.index,
                date=date,
                content=note_content(session, turn, self.ctx.captions),
            )
        analysis = await self._analyse(note.content)
        if analysis is None:
            note.fallback = True
            self.store.stats.analysis_failures += 1
            if self.options.note_prompts == "official":  # the script's note after its last try
                note.keywords, note.tags, note.context = (
                    list(OFFICIAL_FALLBACK[0]),
                    list(OFFICIAL_FALLBACK[1]),
                    OFFICIAL_FALLBACK[2],
                )
        else:
            note.keywords, note.tags, note.context = analysis
        vectors = await self._vectors_now()
        new_vec = np.asarray(await self.embedder.embed([self._doc(note)]), np.float32)
        evolutions = self.store.stats.evolutions
        if self.evolve and self.neighbours and len(self.store.notes):
            document = self._doc(note)
            await self._evolve(note, new_vec[0], vectors)
            vectors = await self._vectors_now()
            if self._doc(note) != document:  # "strengthen" may have replaced its tags
                new_vec = np.asarray(await self.embedder.embed([self._doc(note)]), np.float32)
        self.store.notes.append(note)
        self._vectors = new_vec if len(vectors) == 0 else np.concatenate([vectors, new_vec])
        self._bm25 = None
        every = int(self.options.reindex_every)
        if every and self.store.stats.evolutions > evolutions and self.store.stats.evolutions % every == 0:
            await self._reindex()

    async def _reindex(self) -> None:
        """Rebuild the whole index from the notes' current text (official ``consolidate_memories``)."""
        self.store.stats.reindexes += 1
        self.store.notes = [
            n.model_copy(update={"indexed": None}) if n.indexed is not None else n for n in self.store.notes
        ]
        self._vectors, self._bm25 = None, None
        await self._vectors_now()

    async def _neighbours_rewritten(self, rows: list[int], old_docs: dict[int, str]) -> None:
        """Index the notes at ``rows`` whose context or tags were just rewritten: at once
        (``reindex_every=0``), or keep their previous indexed text until the next re-indexing."""
        notes = self.store.notes
        self.store.stats.neighbour_updates += len(rows)
        if int(self.options.reindex_every):
            for i in rows:
                if notes[i].indexed is None and self._doc(notes[i]) != old_docs[i]:
                    notes[i] = notes[i].model_copy(update={"indexed": old_docs[i]})
            return
        fresh = np.asarray(await self.embedder.embed([self._doc(notes[i]) for i in rows]), np.float32)
        assert self._vectors is not None
        self._vectors[rows] = fresh
        self._bm25 = None

    async def _evolve(self, note: Note, vec: np.ndarray, vectors: np.ndarray) -> None:
        if self.options.evolution_neighbours == "hybrid":  # official: the retriever's search on the content
            near = [i for i, _ in top_k(await self._hybrid(note.content), self.neighbours)]
        else:
            near = [i for i, _ in top_k(vectors @ vec, self.neighbours)]
        if self.options.note_prompts == "official":
            return await self._evolve_official(note, near)
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
            old_docs = {i: self._indexed_doc(self.store.notes[i]) for i in near}
            for k, i in enumerate(near):
                old = self.store.notes[i]
                ctx_new = decision.neighbour_contexts[k] if k < len(decision.neighbour_contexts) else None
                tags_new = decision.neighbour_tags[k] if k < len(decision.neighbour_tags) else None
                update: dict[str, Any] = {}
                if ctx_new and ctx_new != old.context:
                    update["context"] = ctx_new
                if tags_new and tags_new != old.tags:
                    update["tags"] = tags_new
                if update:
                    self.store.notes[i] = old.model_copy(update=update)
                    changed.append(i)
            if changed:
                await self._neighbours_rewritten(changed, old_docs)

    async def _evolve_official(self, note: Note, near: list[int]) -> None:
        """The script's evolution step (``memory_system.py`` @ b6070899 ``process_memory``): neighbours listed by
        memory index; links named by index or id; neighbour tags/context replaced in order."""
        notes = self.store.notes
        old_docs = {i: self._indexed_doc(notes[i]) for i in near}
        messages, config = official_evolution(note, [(i, notes[i]) for i in near])
        obj = parse_json_object(await self._write(messages, config))
        if obj is None:
            self.store.stats.evolution_failures += 1
            return
        if not obj.get("should_evolve", False):
            return
        self.store.stats.evolutions += 1
        ids = {n.id for n in notes}
        raw_actions = obj.get("actions")
        actions = raw_actions if isinstance(raw_actions, list) else []
        changed: list[int] = []
        for action in actions:
            if action == "strengthen":
                for conn in obj.get("suggested_connections") or []:
                    key = str(conn)
                    conn_id = notes[int(key)].id if key.isdigit() and int(key) < len(notes) else key
                    if conn_id not in note.links and conn_id in ids:
                        note.links.append(conn_id)
                        self.store.stats.links += 1
                tags = obj.get("tags_to_update")
                if isinstance(tags, list) and tags:
                    note.tags = [str(t) for t in tags]
            elif action == "update_neighbor":
                contexts = obj.get("new_context_neighborhood") or []
                tag_lists = obj.get("new_tags_neighborhood") or []
                for k in range(min(len(near), len(tag_lists))):
                    i, tag = near[k], tag_lists[k]
                    context = contexts[k] if k < len(contexts) and isinstance(contexts[k], str) else notes[i].context
                    notes[i] = notes[i].model_copy(
                        update={
                            "tags": [str(t) for t in tag] if isinstance(tag, list) else [str(tag)],
                            "context": context,
                        }
                    )
                    changed.append(i)
        if changed:  # the script re-indexed these only at every 100th evolution (reindex_every)
            await self._neighbours_rewritten(sorted(set(changed)), old_docs)

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
        scores = await self._hybrid(query)
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

    async def _hybrid(self, query: str) -> np.ndarray:
        """Hybrid score of every note for ``query``: alpha · normalised BM25 + (1 − alpha) · cosine."""
        notes = self.store.notes
        vectors = await self._vectors_now()
        official = self.options.retrieval == "official"
        if self._bm25 is None or self._bm25.n != len(notes):
            docs = [self._indexed_doc(n) for n in notes]
            self._bm25 = OkapiBM25(docs) if official else BM25Scorer(docs)
        qvec = np.asarray(await self.embedder.embed([query]), np.float32)[0]
        if official:
            mixed: np.ndarray = self.alpha * official_minmax(self._bm25.scores(query)) + (1 - self.alpha) * (
                vectors @ qvec
            )
            return mixed
        return hybrid_scores(self._bm25.scores(query), vectors @ qvec, self.alpha)

    def _query(self, question: QuestionView) -> str:
        if self.options.request == "official":
            return official_query(question, self.ctx.captions)
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        return " ".join([question.text.strip(), *q_caps])

    @staticmethod
    def _evidence(hits: list[tuple[Note, float | None]]) -> list[Evidence]:
        return [Evidence(session=n.session, turn=n.turn, score=None if s is None else round(s, 6)) for n, s in hits]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The notes' turns ``answer`` would show, best first (no answer-model call)."""
        return self._evidence(await self.retrieve(self._query(question)))

    async def answer(self, question: QuestionView) -> Answer:
        if self.options.request == "official":
            return await self._answer_official(question)
        q_caps = [image_text(ref, self.ctx.captions) for ref in question.images]
        t0 = time.perf_counter()
        hits = await self.retrieve(self._query(question))
        retrieval_s = time.perf_counter() - t0
        memory = "\n\n".join(n.render() for n, _ in hits) if hits else "(nothing relevant was retrieved)"
        if q_caps:
            memory += "\n\nImage attached to the question: " + " ".join(q_caps)
        result = await self.ctx.chat.chat(
            build_answer_messages(question, memory), self.ctx.answer_config, stage="answer"
        )
        return Answer(
            text=result.text.strip(),
            evidence=self._evidence(hits),
            details={
                "retrieved": len(hits),
                "retrieval_s": round(retrieval_s, 6),
                "linked": sum(1 for _, s in hits if s is None),
                "notes": len(self.store.notes),
                "fallback_notes": self.store.stats.analysis_failures,
            },
        )

    async def _answer_official(self, question: QuestionView) -> Answer:
        t0 = time.perf_counter()
        hits = await self.retrieve(official_query(question, self.ctx.captions))
        retrieval_s = time.perf_counter() - t0
        messages, n_images = official_messages(
            question,
            [n for n, _ in hits],
            self.ctx.captions,
            attach_image=self.options.attach_question_image,
            sees_images=bool(getattr(self.ctx.chat, "supports_images", False)),
            image_encoding=self.options.question_image_encoding,
        )
        config = self.ctx.answer_config
        if self.options.answer_max_tokens is not None:
            config = config.model_copy(update={"max_tokens": int(self.options.answer_max_tokens)})
        result = await self.ctx.chat.chat(messages, config, stage="answer")
        return Answer(
            text=read_reply(result.text),
            evidence=[
                Evidence(session=n.session, turn=n.turn, score=None if s is None else round(s, 6)) for n, s in hits
            ],
            details={
                "retrieved": len(hits),
                "retrieval_s": round(retrieval_s, 6),
                "notes": len(self.store.notes),
                "question_images_attached": n_images,
                "fallback_notes": self.store.stats.analysis_failures,
            },
        )
