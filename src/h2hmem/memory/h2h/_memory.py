"""``h2h``: a memory for observed human–human conversations (our method; ``docs/h2h-memory.md``).

Built on what the H2HMem paper found hard, offline (MiniLM + BM25; the answer model is the only
model call):

1. **who said what to whom** — a :class:`~._people.SpeakerDirectory` resolves name variants
   and ``@mentions``; every turn knows its speaker and addressees, and a question naming a person
   boosts the turns that person said or was addressed in;
2. **when** — session numbers, calendar dates, "first/last session" and "round N" in the question
   (:mod:`._time`) boost the sessions and turns they point at, and turns that refer back to
   that session;
3. **which image** — an image turn is indexed with the turns after it that discuss it, and they
   with its caption (:mod:`._index`);
4. **what changed** — Knowledge Resolution (KR) questions favour later sessions (latest value); a conflict
   (CD) claim is searched without its instruction words and side by side (the sides it joins
   with "but", "while", "X mentioned that" …), and events or anchored sentences listed in a
   question are searched one by one, so each side is retrieved (:mod:`._query`);
5. **reasoning chains** — for a causal (MCR) or reference (RET) question the best adjacent turn of
   the first hit joins the top-k (:mod:`._chain`);
6. **when memory holds nothing** — the best cosine between the question and any turn is an
   abstention signal; below ``abstain_threshold`` an Answer Refusal question is told so, and an
   Answer Refusal question's top-k holds at most one turn per session (``ar_session_cap``).

Optional (off by default): the answer model re-ranks the best candidates (:mod:`._rerank`), or
writes a hypothetical answering turn that expands the query (:mod:`._rewrite`).

Retrieval: hybrid dense (turn text and its window) + BM25, fused with the boosts above (an
optional session prior), task-aware query cleaning, per-event sub-queries merged round-robin. The answer
context shows the retrieved turns with ``window`` neighbours on each side, grouped by session in
time order, through the shared answer prompt.
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ... import defaults
from ...data import ImageRef, MainCategory, Session, TaskType
from .._method import MemoryMethod
from .._options import MethodOptions, TopK
from .._prompt import build_answer_messages
from .._protocol import Answer, Evidence, MemoryContext
from .._render import render_turn, session_header
from .._retrieval import minmax
from .._view import QuestionImage, QuestionView
from ._chain import CHAIN_TYPES, expand_chain
from ._index import ScoreWeights, TurnIndex, TurnRecord, grouped_prior, neighbour_max
from ._people import SpeakerDirectory
from ._query import claim_sides, search_text, sentence_queries, sub_queries
from ._rerank import RERANK_CANDIDATES, RERANK_CONFIG, apply_ranking, parse_ranking, rerank_messages
from ._rewrite import REWRITE_CONFIG, parse_rewrite, rewrite_messages
from ._time import TimeRefs, matching_sessions, time_refs

_PICTURE = re.compile(r"\b(?:picture|image|photo|pic|screenshot)s?\b", re.I)
WINDOW = 1
"""Neighbouring turns shown on each side of a retrieved turn in the answer context."""
IMAGE_FOLLOWERS = 2
"""Turns after an image turn that are linked to it (its discussion)."""
CONTEXT_AFTER = 2
"""Turns after a turn that its window context (the second embedded view) includes besides the turn
before it: the replies, where a later reference to what the turn says ("that album", "it") is made.
1 until issue 29's seventh round; 2 was chosen on held-out dialogues (``docs/h2h-memory.md``). An image
turn's window runs over ``max(context_after, image_followers)`` turns after it, so 1 gives the earlier
windows exactly unless ``image_followers`` is 0 (then an image turn's window was the turn before and itself)."""
SESSION_CAP = 0
"""Most turns of one session among the ``top_k`` when the question names no time anchor (0 = no cap;
3 keeps a second session in play but costs turn recall on the sample: off by default)."""
AR_SESSION_CAP = 1
"""Answer Refusal (AR) questions: most turns of one session among the ``top_k`` (0 = no cap). An AR
question asks for a detail the conversation never gives, so no single turn answers it and its best
match is no better a guide to the session it is about than other sessions' best turns: one turn per
session shows the answer model (and session hit@k) more of the conversation. Chosen on held-out
dialogues (issue 29, ``docs/h2h-memory.md``)."""
CHAIN = 1
"""Reasoning (MCR, RET) questions: first hits whose best adjacent turn joins the top-k (0 = off)."""
ABSTAIN_THRESHOLD = 0.35
"""Best question–turn cosine (MiniLM) below which memory is taken to hold nothing relevant."""


class H2HOptions(MethodOptions):
    """Options of ``h2h`` (``docs/h2h-memory.md``); the switches turn one component off (the ablation)."""

    top_k: TopK = defaults.TOP_K
    window: int = Field(WINDOW, ge=0, description="neighbours on each side shown with a retrieved turn (0 = alone)")
    image_followers: int = Field(IMAGE_FOLLOWERS, ge=0, description="turns after an image linked to it")
    context_after: int = Field(
        CONTEXT_AFTER,
        ge=0,
        description="turns after a turn in its window context, besides the one before it (an image turn's window "
        "runs over max(this, image_followers) turns)",
    )
    abstain_threshold: float = Field(
        ABSTAIN_THRESHOLD, description="best question-turn cosine below which memory is taken to hold nothing"
    )
    session_cap: int = Field(
        SESSION_CAP, ge=0, description="most turns from one session in the top-k when no time anchor matched (0 = none)"
    )
    ar_session_cap: int = Field(
        AR_SESSION_CAP,
        ge=0,
        description="Answer Refusal (AR) questions: most turns from one session in the top-k, time anchor or not "
        "(0 = none)",
    )
    bm25: bool = Field(True, description="the BM25 part of the hybrid score")
    bm25_weight: float = Field(
        ScoreWeights.bm25,
        ge=0.0,
        le=ScoreWeights.dense + ScoreWeights.bm25,
        description="weight of the min-max BM25 score; the turn-text cosine gets the rest of "
        f"{ScoreWeights.dense + ScoreWeights.bm25:.2f} (chosen on held-out dialogues)",
    )
    context: bool = Field(True, description="the dense score of a turn's window")
    speakers: bool = Field(True, description="speaker and addressee boosts")
    time_anchors: bool = Field(True, description="session, date and round anchors")
    session_prior: bool = Field(
        False, description="the session prior (off: it lowered turn recall and session hit@5 on the sample)"
    )
    decompose: bool = Field(True, description="per-event sub-queries merged round-robin")
    clean_query: bool = Field(True, description="task-aware query cleaning")
    recency: bool = Field(True, description="the later-session boost of KR questions")
    pictures: bool = Field(True, description="the image-turn boost of questions about pictures")
    both_sides: bool = Field(True, description="CD questions: search each side of the claim")
    chain: int = Field(
        CHAIN,
        ge=0,
        description="reasoning (MCR, RET) questions: the best adjacent turn of each of the first `chain` hits "
        "joins the top-k right after it (0 = off)",
    )
    rerank: bool = Field(
        False,
        description="the answer model re-ranks the retriever's best candidates: one more model call per question",
    )
    rewrite: Literal["off", "reasoning", "all"] = Field(
        "off",
        description="the answer model writes a hypothetical turn answering the question, which expands the "
        "whole question's dense and BM25 query: one more model call per question of the reasoning types "
        "(MCR, RET: the types `chain` serves) or of every type",
    )


class H2HMemory(MemoryMethod[H2HOptions]):
    """Speaker-, time- and image-aware hybrid turn memory.

    Args:
        ctx: run context (answer model, captions, shared text embedder).
        options: :class:`H2HOptions` (``None`` = from ``params`` under ``ctx.preset``).
    """

    name: ClassVar[str] = "h2h"
    Options = H2HOptions
    modality: ClassVar[str] = "caption"

    def __init__(self, ctx: MemoryContext, options: H2HOptions | None = None, **params: Any):
        super().__init__(ctx, options, **params)
        o = self.options
        top_k, window, image_followers, abstain_threshold, session_cap = (
            o.top_k,
            o.window,
            o.image_followers,
            o.abstain_threshold,
            o.session_cap,
        )
        (
            bm25,
            context,
            speakers,
            time_anchors,
            session_prior,
            decompose,
            clean_query,
            recency,
            pictures,
            both_sides,
        ) = (
            o.bm25,
            o.context,
            o.speakers,
            o.time_anchors,
            o.session_prior,
            o.decompose,
            o.clean_query,
            o.recency,
            o.pictures,
            o.both_sides,
        )
        if ctx.embedder_factory is None:
            raise ValueError("h2h needs a text embedder (MemoryContext.embedder_factory)")
        self.session_cap, self.ar_session_cap = session_cap, o.ar_session_cap
        self.chain, self.rerank, self.rewrite = o.chain, o.rerank, o.rewrite
        self.top_k, self.window, self.image_followers = top_k, window, image_followers
        self.context_after = o.context_after
        self.abstain_threshold = abstain_threshold
        self.switches = {
            "bm25": bm25,
            "context": context,
            "speakers": speakers,
            "time_anchors": time_anchors,
            "session_prior": session_prior,
            "decompose": decompose,
            "clean_query": clean_query,
            "recency": recency,
            "pictures": pictures,
            "both_sides": both_sides,
        }
        w = ScoreWeights()
        self.weights = ScoreWeights(
            dense=w.dense + w.bm25 - o.bm25_weight + (0 if context else w.context),
            context=w.context if context else 0.0,
            bm25=o.bm25_weight if bm25 else 0.0,
            speaker=w.speaker if speakers else 0.0,
            time=w.time if time_anchors else 0.0,
            turn=w.turn if time_anchors else 0.0,
            backref=w.backref if time_anchors else 0.0,
            session=w.session if session_prior else 0.0,
            recency=w.recency if recency else 0.0,
            image=w.image if pictures else 0.0,
            neighbour=w.neighbour,
            session_top=w.session_top,
        )
        self.embedder = ctx.embedder_factory()
        self.people = SpeakerDirectory()
        self.index = TurnIndex()
        self._sessions: list[tuple[str, int, Any]] = []  # (name, number, date) in time order
        self._by_session: dict[str, Session] = {}
        self._captions_missing = 0

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "weights": self.weights.__dict__,
            "embedder": getattr(self.embedder, "name", "?"),
            "images": "captions (never file names in queries); image turns linked to the turns discussing them",
        }

    # ----- construction ----------------------------------------------------------------------

    def _records(self, session: Session) -> list[TurnRecord]:
        pos = len(self._sessions)
        turns = session.turns
        linked: dict[int, int] = {}  # follower turn → image turn it discusses
        for i, t in enumerate(turns):
            if t.image is None:
                continue
            for j in range(i + 1, min(len(turns), i + 1 + self.image_followers)):
                if turns[j].image is not None:
                    break
                linked[j] = i
        # each turn's caption, image note and "speaker: text note" line once: a turn appears in its
        # own record and in up to 1 + max(context_after, image_followers) windows of its neighbours
        captions: dict[str, str | None] = {}
        notes: list[str] = []
        for t in turns:
            if t.image is None:
                notes.append("")
                continue
            caption = captions[t.image.key] = self.ctx.captions(t.image)
            if not caption:
                self._captions_missing += 1
            notes.append(f"[Image {t.image.file}: {caption.strip()}]" if caption else f"[Image {t.image.file}]")
        lines = [f"{t.speaker}: {t.text.strip()} {note}".strip() for t, note in zip(turns, notes)]

        def caption_of(ref: ImageRef | QuestionImage) -> str | None:
            if isinstance(ref, ImageRef) and ref.key in captions:
                return captions[ref.key]
            return self.ctx.captions(ref)

        records = []
        for i, t in enumerate(turns):
            to = [p for p in self.people.mentions(t.text) if p != t.speaker]
            tags = " ".join(self.people.canonical_tag(p) for p in [t.speaker, *to])
            head = t.speaker + (f" to {', '.join(to)}" if to else "")
            text = f"{head}: {t.text.strip()} {notes[i]}".strip()
            after = max(self.image_followers, self.context_after) if t.image is not None else self.context_after
            span = range(max(0, i - 1), min(len(turns), i + 1 + after))
            ctx_parts = [lines[j] for j in span]
            if i in linked:
                ctx_parts.append(f"(about {notes[linked[i]]})")
            records.append(
                TurnRecord(
                    session=session.name,
                    session_pos=pos,
                    turn=t.index,
                    speaker=t.speaker,
                    addressees=to,
                    text=text,
                    words=f"{text} {tags}",
                    context=" ".join(ctx_parts),
                    mentioned_sessions=time_refs(t.text).sessions,
                    has_image=t.image is not None,
                    about_image=t.image is not None or i in linked,
                    line=render_turn(session, t, caption_of),
                )
            )
        return records

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        for t in session.turns:
            self.people.add(t.speaker)
        records = self._records(session)
        vecs = np.asarray(
            await self.embedder.embed([r.text for r in records] + [r.context for r in records]), np.float32
        )
        self.index.add(records, vecs[: len(records)], vecs[len(records) :])
        self._sessions.append((session.name, session.number, session.date))
        self._by_session[session.name] = session

    # ----- retrieval -------------------------------------------------------------------------

    async def _embed_query(self, text: str) -> np.ndarray:
        vectors = np.asarray(await self.embedder.embed([text]), np.float32)
        row: np.ndarray = vectors[0]
        return row

    async def _scores(
        self,
        query: str,
        named: list[str],
        refs: TimeRefs,
        matched: set[str],
        task: TaskType,
        expansion: str = "",
    ) -> tuple[np.ndarray, float]:
        """Final score per turn and the best raw cosine of the query (the abstention signal). A
        non-empty ``expansion`` (``rewrite``'s hypothetical turn) adds its embedding to the query's
        (normalised sum) and its words to the BM25 query; the abstention signal stays the query's."""
        w = self.weights
        text_vecs, ctx_vecs = self.index.vectors()
        q = await self._embed_query(query)
        dense = text_vecs @ q
        signal = float(dense.max())
        if expansion:
            q = q + await self._embed_query(expansion)
            q = q / max(float(np.linalg.norm(q)), 1e-12)
            dense = text_vecs @ q
        base = w.dense * dense
        if w.context:
            base = base + w.context * (ctx_vecs @ q)
        if w.bm25:
            tags = " ".join(self.people.canonical_tag(p) for p in named)
            base = base + w.bm25 * self.index.bm25(f"{query} {tags} {expansion}")
        cols = self.index.columns()
        if w.speaker and named and len(named) < len(self.people.speakers):
            base = base + w.speaker * cols.involving(named)
        if matched:
            in_session = cols.in_sessions(matched)
            base = base + w.time * in_session
            if refs.turns:
                base = base + w.turn * in_session * np.isin(cols.turn, list(refs.turns)).astype(np.float64)
        if w.image and task.main_category is not MainCategory.APPLICATION and _PICTURE.search(query):
            base = base + w.image * cols.about_image
        if w.backref and refs.sessions:
            base = base + w.backref * cols.mentioning(refs.sessions)
        if w.neighbour:
            base = base + w.neighbour * neighbour_max(base, cols.sessions)
        final = base
        if w.session:
            final = final + w.session * minmax(grouped_prior(base, cols.groups, w.session_top))
        if w.recency and task is TaskType.KR and len(self._sessions) > 1:
            final = final + w.recency * cols.session_pos / (len(self._sessions) - 1)
        return final, signal

    async def _ranked(self, question: QuestionView) -> tuple[list[tuple[int, float]], dict[str, Any]]:
        """``[(turn position in the index, score)]`` best first (``top_k`` of them) and facts (the usage
        of the query-expansion and re-ranking calls is tallied by the runner with the question's other calls)."""
        if not len(self.index):
            return [], {"abstain_signal": None, "abstain": True}
        raw = question.text.strip()
        query = search_text(raw) if self.switches["clean_query"] else raw
        caps = [c for c in (self.ctx.captions(ref) for ref in question.images) if c]
        if caps:  # the question image's caption, never its file name
            query += " " + " ".join(caps)
        named = self.people.named_in(raw) if self.switches["speakers"] else []
        refs = time_refs(raw) if self.switches["time_anchors"] else TimeRefs()
        matched = matching_sessions(refs, self._sessions)
        rewrites = self.rewrite == "all" or (self.rewrite == "reasoning" and question.task_type in CHAIN_TYPES)
        expansion = await self._rewrite(raw) if rewrites else ""
        scores, signal = await self._scores(query, named, refs, matched, question.task_type, expansion)
        order = list(np.lexsort((np.arange(len(scores)), -scores)))
        subs = self._sub_queries(raw, refs, question.task_type) if self.switches["decompose"] else []
        if subs:
            first: list[list[int]] = []
            rest: list[list[int]] = []
            for sub, sub_refs, primary in subs:
                sub_matched = matching_sessions(sub_refs, self._sessions)
                s, _ = await self._scores(
                    sub, self.people.named_in(sub) if named else [], sub_refs, sub_matched, question.task_type
                )
                (first if primary else rest).append(list(np.lexsort((np.arange(len(s)), -s))))
            order = _round_robin(first + [order] + rest)
        if self.ar_session_cap and question.task_type is TaskType.AR:
            order = _cap_per_session(order, self.index.columns().sessions, self.ar_session_cap, self.top_k)
        elif self.session_cap and not matched:
            order = _cap_per_session(order, self.index.columns().sessions, self.session_cap, self.top_k)
        if self.rerank:
            order = await self._rerank(raw, order)
        if self.chain and question.task_type in CHAIN_TYPES:
            order = expand_chain(order, scores, self.index.columns().sessions, self.chain, self.top_k)
        hits = [(int(i), float(scores[i])) for i in order[: self.top_k]]
        facts = {
            "abstain_signal": round(signal, 6),
            "abstain": signal < self.abstain_threshold,
            "speakers_named": named,
            "sessions_anchored": sorted(matched),
            "sub_queries": len(subs),
            "rerank_calls": int(self.rerank),
            "rewrite_calls": int(rewrites),
            "rewrite": expansion,
        }
        return hits, facts

    async def _rerank(self, question: str, order: list[int]) -> list[int]:
        """The answer model's re-ranking of the first :data:`~._rerank.RERANK_CANDIDATES` of ``order``
        (one call, stage ``other``)."""
        head = order[:RERANK_CANDIDATES]
        messages = rerank_messages(question, [self.index.turns[i].line for i in head])
        result = await self.ctx.chat.chat(messages, RERANK_CONFIG, stage="other")
        picked = parse_ranking(result.text, len(head))
        return apply_ranking(head, picked) + order[len(head) :]

    async def _rewrite(self, question: str) -> str:
        """The answer model's hypothetical turn answering ``question`` (one call, stage ``other``);
        ``""`` when the reply has none."""
        result = await self.ctx.chat.chat(rewrite_messages(question), REWRITE_CONFIG, stage="other")
        return parse_rewrite(result.text)

    def _sub_queries(self, raw: str, refs: TimeRefs, task: TaskType) -> list[tuple[str, TimeRefs, bool]]:
        """``(text, anchors, primary)``: listed events (each primary, with the question's anchors);
        for a conflict (CD) question the sides of its claim (each primary, with the question's
        anchors: ``both_sides``); else sentences that carry anchors of their own (each with its own;
        an unanchored sentence gets none, so it is not pulled to the others'). Of the sentences,
        only the one that asks (ends with "?") is primary: the others set the scene. Rankings merge as primaries, the whole question, then the rest."""
        items = sub_queries(raw)
        if items:
            return [(i, refs, True) for i in items]
        if task is TaskType.CD and self.switches["both_sides"]:
            sides = claim_sides(raw)
            if sides:
                return [(s, refs, True) for s in sides]
        sentences = [(s, time_refs(s)) for s in sentence_queries(raw)]
        if sum(r.any for _, r in sentences) >= 1 and len({frozenset(r.sessions) for _, r in sentences}) > 1:
            return [(s, r, s.rstrip().endswith("?")) for s, r in sentences]
        return []

    def _evidence(self, hits: list[tuple[int, float]]) -> list[Evidence]:
        turns = self.index.turns
        return [Evidence(session=turns[i].session, turn=turns[i].turn, score=round(s, 6)) for i, s in hits]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The ranked turns ``answer`` uses: no model call, unless ``rewrite`` or ``rerank`` asks for one
        each (stage ``other``, counted in the question's usage by the runner, under ``--retrieval-only`` too)."""
        return self._evidence((await self._ranked(question))[0])

    # ----- answer ----------------------------------------------------------------------------

    def _context(self, hits: list[tuple[int, float]]) -> tuple[str, list[int]]:
        """Memory text (retrieved turns ± window, by session in time order) and the neighbours added."""
        turns = self.index.turns
        chosen = {i for i, _ in hits}
        shown: set[int] = set()
        for i, _ in hits:
            for j in range(i - self.window, i + self.window + 1):
                if 0 <= j < len(turns) and turns[j].session == turns[i].session:
                    shown.add(j)
        lines, last = [], None
        for j in sorted(shown):
            t = turns[j]
            if t.session != last:
                lines.append(session_header(self._by_session[t.session]))
                last = t.session
            lines.append(("* " if j in chosen else "  ") + t.line)
        return "\n".join(lines), sorted(shown - chosen)

    async def answer(self, question: QuestionView) -> Answer:
        t0 = time.perf_counter()
        hits, facts = await self._ranked(question)
        retrieval_s = time.perf_counter() - t0
        memory, neighbours = self._context(hits) if hits else ("(nothing was observed)", [])
        if question.task_type is TaskType.AR and facts["abstain"]:
            memory += "\n\n(No remembered turn is closely related to this question.)"
        caps = [c for c in (self.ctx.captions(ref) for ref in question.images) if c]
        if caps:
            memory += "\n\nImage attached to the question: " + " ".join(caps)
        result = await self.ctx.chat.chat(
            build_answer_messages(question, memory), self.ctx.answer_config, stage="answer"
        )
        turns = self.index.turns
        evidence = self._evidence(hits) + [Evidence(session=turns[j].session, turn=turns[j].turn) for j in neighbours]
        return Answer(
            text=result.text.strip(),
            evidence=evidence,
            details={
                **facts,
                "retrieved": len(hits),
                "neighbours": len(neighbours),
                "retrieval_s": round(retrieval_s, 6),
                "captions_missing": self._captions_missing,
            },
        )


def _cap_per_session(order: list[int], sessions: list[str], cap: int, k: int) -> list[int]:
    """The first ``k`` of ``order`` with at most ``cap`` from one session (then the rest, in order).

    Example: sessions of order [a, a, a, b, c], cap 2, k 3 → a, a, b (then a, c).
    """
    head: list[int] = []
    rest: list[int] = []
    count: dict[str, int] = {}
    for i in order:
        if len(head) < k and count.get(sessions[i], 0) < cap:
            head.append(i)
            count[sessions[i]] = count.get(sessions[i], 0) + 1
        else:
            rest.append(i)
    return head + rest


def _round_robin(lists: list[list[int]]) -> list[int]:
    """Interleave rankings (first of each, then second of each…), first occurrence kept.

    Example: [[1, 2, 3], [4, 1, 5]] → [1, 4, 2, 3, 5].
    """
    out: list[int] = []
    seen: set[int] = set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if rank < len(x) and x[rank] not in seen:
                seen.add(x[rank])
                out.append(x[rank])
    return out
