"""NGM (Neural Graph Memory): a graph over turns, recalled by seeds plus neighbours (docs/baselines.md).

- node = 1 turn, embedded as date-prefixed text plus its image with the MuRAG encoder;
- temporal edge from each turn to the next, weight exp(−Δt / 3600 s), Δt from the real session
  dates and turn order: a session starts at midnight UTC of its date and its turns are 60 s apart
  (:func:`~._graph.session_turn_times`; the official code used load time, docs/official-pitfalls.md #9);
- semantic edges to up to 5 most similar earlier nodes with cosine ≥ 0.7, stored both ways;
- recall: 6 seeds by cosine, plus their 1-hop neighbours, score = cosine × (1 + 0.1 × degree),
  top 5; or the depth-first variant (depth ≤ 3, cosine ≥ 0.5);
- context and images as MuRAG.

The graph rules live in :mod:`._ngm_graph`.

That is the preset ``harmonized``. Under ``paper`` (options ``links=official``, ``node_text=official``,
``request=official``): edges stored one way as the published code did, degree = in + out; the node
text is ``date:text`` (no speaker); the request is the official one
(:func:`~h2hmem.memory._paper_native.ngm_request`): recalled turns grouped by session, turns in order, the
official prompt, the recalled images then the question image after the text.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

from pydantic import Field

from ...data import Session, Turn
from .._budget import token_counter
from .._method import MemoryMethod
from .._mm_units import (
    IMAGES_NOTE,
    MAX_IMAGES,
    MAX_TEXT_TOKENS,
    OFFICIAL_IMAGES_NOTE,
    SessionVectorCache,
    Unit,
    answer_from_hits,
    encode_query,
    encoder_describe,
    encoder_item,
    hits_evidence,
    load_encoder,
    official_answer,
    session_date,
)
from .._options import MethodOptions, preset_option
from .._paper_native import ngm_node_text, ngm_request
from .._protocol import Answer, Evidence, MemoryContext
from .._view import QuestionView
from ._graph import (
    DEGREE_BOOST,
    DFS_DEPTH,
    DFS_MIN_COSINE,
    MAX_NODES,
    SEED_K,
    SEED_MULTIPLIER,
    SEMANTIC_K,
    SEMANTIC_THRESHOLD,
    TIME_SCALE_S,
    TURN_GAP_S,
    GraphConfig,
    TurnGraph,
    session_turn_times,
)


class NGMOptions(MethodOptions):
    """Options of ``ngm`` (``docs/protocol.md``); graph settings as published (see :mod:`._graph`)."""

    encoder: str | None = Field(
        None, description="as for murag: 'gme:…', 'clip:…', 'text', or None = GME if cached, else text"
    )
    device: str | None = Field(None, description="torch device of the encoder; None = the GPU when present")
    recall: Literal["neighbours", "dfs"] = Field(
        "neighbours", description="'neighbours' (published: seeds + 1-hop) or 'dfs' (depth-first variant)"
    )
    max_nodes: int = Field(MAX_NODES, ge=1, description="most turns recalled per question")
    seeds: int = Field(SEED_K * SEED_MULTIPLIER, ge=1, description="seed turns found by cosine before expansion")
    degree_boost: float = Field(DEGREE_BOOST, description="weight of a node's degree in its recall score")
    semantic_k: int = Field(SEMANTIC_K, ge=0, description="semantic edges added per new turn")
    semantic_threshold: float = Field(SEMANTIC_THRESHOLD, description="least cosine of a semantic edge")
    time_scale_s: float = Field(TIME_SCALE_S, gt=0, description="seconds of the temporal edge weight's decay")
    turn_gap_s: float = Field(TURN_GAP_S, ge=0, description="seconds between consecutive turns of a session (60)")
    temporal: Literal["forward", "both"] = Field(
        "forward", description="'forward' (published) or 'both' (temporal edges also point back)"
    )
    dfs_depth: int = Field(DFS_DEPTH, ge=0, description="recall=dfs: depth of the search")
    dfs_min_cosine: float = Field(DFS_MIN_COSINE, description="recall=dfs: least cosine of a followed node")
    max_images: int = Field(MAX_IMAGES, ge=0, description="images per answer call, question image included (10)")
    max_text_tokens: int = Field(MAX_TEXT_TOKENS, ge=1, description="memory text budget (published 4,096)")
    links: Literal["official", "symmetric"] = preset_option(
        "official",
        "symmetric",
        "edges stored earlier → later only with degree = out + in (the script), or semantic edges both ways "
        "with degree = distinct neighbours",
    )
    node_text: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "text embedded with a turn's image: 'date:text' (raw timeline_date, no speaker) or 'ISO-date: [speaker] text'",
    )
    request: Literal["official", "h2hmem"] = preset_option(
        "official",
        "h2hmem",
        "the answer request: the script's session-grouped context, prompt and image order (recalled images, "
        "then the question image, after the text), or MuRAG's h2hmem context and the shared prompt",
    )


class NGMMemory(MemoryMethod[NGMOptions]):
    """Native graph memory over turns.

    Args:
        ctx: run context (answer model, captions, text embedder for the fallback encoder, state_dir).
        options: :class:`NGMOptions` (``None`` = from ``params`` under ``ctx.preset``).
        encoder: a ready ImageTextEncoder object (tests, notebooks) instead of ``options.encoder``; a
            string is taken as the ``encoder`` option.
    """

    name: ClassVar[str] = "ngm"
    Options = NGMOptions
    modality: ClassVar[str] = "native"

    def __init__(self, ctx: MemoryContext, options: NGMOptions | None = None, *, encoder: Any = None, **params: Any):
        if isinstance(encoder, str):
            params, encoder = {**params, "encoder": encoder}, None
        super().__init__(ctx, options, **params)
        o = self.options
        recall, turn_gap_s, max_images, max_text_tokens = o.recall, o.turn_gap_s, o.max_images, o.max_text_tokens
        time_scale_s, semantic_k, semantic_threshold, temporal = (
            o.time_scale_s,
            o.semantic_k,
            o.semantic_threshold,
            o.temporal,
        )
        seeds, max_nodes, degree_boost, dfs_depth, dfs_min_cosine = (
            o.seeds,
            o.max_nodes,
            o.degree_boost,
            o.dfs_depth,
            o.dfs_min_cosine,
        )
        device = o.device
        encoder = encoder if encoder is not None else o.encoder
        self.recall = recall
        self.turn_gap_s = turn_gap_s
        self.max_images, self.max_text_tokens = max_images, max_text_tokens
        self.graph = TurnGraph(
            GraphConfig(
                time_scale_s=time_scale_s,
                semantic_k=semantic_k,
                semantic_threshold=semantic_threshold,
                temporal=temporal,
                seeds=seeds,
                max_nodes=max_nodes,
                degree_boost=degree_boost,
                dfs_depth=dfs_depth,
                dfs_min_cosine=dfs_min_cosine,
                links=self.options.links,
            )
        )
        self.encoder = load_encoder(ctx, encoder, device)
        self._vectors = SessionVectorCache(ctx.state_dir / "ngm" if ctx.state_dir else None, self.encoder)
        self._count, self._counter_kind = token_counter(ctx.chat)
        self._units: list[Unit] = []
        self._last_time: float | None = None
        self._undated_sessions = 0

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "modality": self.modality,
            "turn_time": f"session date at 00:00 UTC + turn index × {self.turn_gap_s:g} s; an undated session "
            "starts right after the previous one",
            "token_counter": self._counter_kind,
            "unit": (
                "1 turn: 'date:text' + its image (no speaker; date as written)"
                if self.options.node_text == "official"
                else "1 turn: 'date: [speaker] text' + its image"
            ),
            "images": OFFICIAL_IMAGES_NOTE if self.options.request == "official" else IMAGES_NOTE,
            **encoder_describe(self.encoder),
        }

    @staticmethod
    def node_text(session: Session, turn: Turn) -> str:
        """``2024-03-20: [Kiki] text`` (date-prefixed, as published)."""
        return f"{session_date(session)}: [{turn.speaker}] {turn.text.strip()}"

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        text = ngm_node_text if self.options.node_text == "official" else self.node_text
        items = [encoder_item(text(session, t), t.image, self.encoder, self.ctx.captions) for t in session.turns]
        vectors = await self._vectors.encode(session.name, items)
        if session.date is None:
            self._undated_sessions += 1
        times = session_turn_times(session.date, len(session.turns), self._last_time, self.turn_gap_s)
        for turn, vec, t in zip(session.turns, vectors, times):
            self.graph.add_node(vec, t)
            self._units.append(Unit(session, turn))
        self._last_time = times[-1]

    async def _hits(self, question: QuestionView) -> list[tuple[Unit, float]]:
        if not len(self.graph):
            return []
        q = await encode_query(self.encoder, question, self.ctx.captions)
        found = self.graph.recall(q) if self.recall == "neighbours" else self.graph.recall_dfs(q)
        return [(self._units[n], s) for n, s in found]

    async def retrieve_evidence(self, question: QuestionView) -> list[Evidence]:
        """The turns ``answer`` would show, best first (no model call)."""
        return hits_evidence(await self._hits(question))

    async def answer(self, question: QuestionView) -> Answer:
        t0 = time.perf_counter()
        hits = await self._hits(question)
        extra = {
            "retrieved": len(hits),
            "retrieval_s": round(time.perf_counter() - t0, 6),
            "nodes": len(self.graph),
            "semantic_links": self.graph.edge_count("semantic") // (2 if self.options.links == "symmetric" else 1),
            "undated_sessions": self._undated_sessions,
        }
        if self.options.request == "official":
            messages, details = ngm_request([(u.session, u.turn) for u, _ in hits], question, self.ctx.captions)
            return await official_answer(self.ctx, messages, hits, {**details, **extra})
        return await answer_from_hits(
            self.ctx,
            question,
            hits,
            self._count,
            max_images=self.max_images,
            max_text_tokens=self.max_text_tokens,
            extra=extra,
        )
