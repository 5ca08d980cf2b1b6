"""NGM (Neural Graph Memory): a graph over turns, recalled by seeds plus neighbours (spec/baselines.md).

- node = 1 turn, embedded as date-prefixed text plus its image with the MuRAG encoder;
- temporal edge from each turn to the next, weight exp(−Δt / 3600 s), Δt from the real session
  dates and turn order: a session starts at midnight UTC of its date and its turns are 60 s apart
  (:func:`~._graph.session_turn_times`; the official code used load time, pitfall 9);
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

from ...data import Session, Turn
from .._budget import token_counter
from .._mm_units import (
    IMAGES_NOTE,
    MAX_IMAGES,
    MAX_TEXT_TOKENS,
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
from .._options import PresetOption, resolve_options
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

OPTIONS: tuple[PresetOption, ...] = (
    PresetOption(
        "links",
        "official",
        "symmetric",
        "edges stored earlier → later only with degree = out + in (the script), or semantic edges both ways "
        "with degree = distinct neighbours",
        ("official", "symmetric"),
    ),
    PresetOption(
        "node_text",
        "official",
        "h2hmem",
        "text embedded with a turn's image: 'date:text' (raw timeline_date, no speaker) or 'ISO-date: [speaker] text'",
        ("official", "h2hmem"),
    ),
    PresetOption(
        "request",
        "official",
        "h2hmem",
        "the answer request: the script's session-grouped context, prompt and image order (recalled images, "
        "then the question image, after the text), or MuRAG's h2hmem context and the shared prompt",
        ("official", "h2hmem"),
    ),
)


class NGMMemory:
    """Native graph memory over turns.

    Args:
        ctx: run context (answer model, captions, text embedder for the fallback encoder, state_dir).
        encoder: as for MuRAG (``gme:…``, ``clip:…``, ``text``, or None = GME if cached, else text).
        device: torch device for the encoder.
        recall: ``"neighbours"`` (published: seeds + 1-hop) or ``"dfs"`` (depth-first variant).
        max_nodes, seeds, degree_boost, semantic_k, semantic_threshold, time_scale_s, dfs_depth,
        dfs_min_cosine: published graph settings (see :mod:`._ngm_graph`).
        turn_gap_s: seconds between consecutive turns of a session (our choice: 60).
        temporal: ``"forward"`` (published) or ``"both"`` (temporal edges also point back).
        max_images, max_text_tokens: answer context caps (as MuRAG: 10 images, 4,096 tokens).
    """

    name: ClassVar[str] = "ngm"
    modality: ClassVar[str] = "native"

    def __init__(
        self,
        ctx: MemoryContext,
        encoder: Any = None,
        device: str | None = None,
        recall: Literal["neighbours", "dfs"] = "neighbours",
        max_nodes: int = MAX_NODES,
        seeds: int = SEED_K * SEED_MULTIPLIER,
        degree_boost: float = DEGREE_BOOST,
        semantic_k: int = SEMANTIC_K,
        semantic_threshold: float = SEMANTIC_THRESHOLD,
        time_scale_s: float = TIME_SCALE_S,
        turn_gap_s: float = TURN_GAP_S,
        temporal: Literal["forward", "both"] = "forward",
        dfs_depth: int = DFS_DEPTH,
        dfs_min_cosine: float = DFS_MIN_COSINE,
        max_images: int = MAX_IMAGES,
        max_text_tokens: int = MAX_TEXT_TOKENS,
        *,
        links: str | None = None,
        node_text: str | None = None,
        request: str | None = None,
    ):
        self.options = resolve_options(
            self.name, OPTIONS, ctx.preset, {"links": links, "node_text": node_text, "request": request}
        )
        if recall not in ("neighbours", "dfs"):
            raise ValueError(f"ngm: recall must be 'neighbours' or 'dfs', got {recall!r}")
        if temporal not in ("forward", "both"):
            raise ValueError(f"ngm: temporal must be 'forward' or 'both', got {temporal!r}")
        if max_nodes < 1 or seeds < 1 or semantic_k < 0 or time_scale_s <= 0 or turn_gap_s < 0:
            raise ValueError(
                "ngm: max_nodes and seeds must be >= 1, semantic_k >= 0, time_scale_s > 0, turn_gap_s >= 0"
            )
        self.ctx = ctx
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
                links=self.options["links"],
            )
        )
        self.encoder = load_encoder(ctx, encoder, device)
        self._vectors = SessionVectorCache(ctx.state_dir / "ngm" if ctx.state_dir else None, self.encoder)
        self._count, self._counter_kind = token_counter(ctx.chat)
        self._units: list[Unit] = []
        self._last_time: float | None = None
        self._undated_sessions = 0

    def describe(self) -> dict[str, Any]:
        cfg = self.graph.config
        return {
            "method": self.name,
            "modality": self.modality,
            "preset": self.ctx.preset,
            "options": self.options,
            "recall": self.recall,
            "graph": {
                "max_nodes": cfg.max_nodes,
                "seeds": cfg.seeds,
                "degree_boost": cfg.degree_boost,
                "semantic_k": cfg.semantic_k,
                "semantic_threshold": cfg.semantic_threshold,
                "time_scale_s": cfg.time_scale_s,
                "temporal": cfg.temporal,
                "dfs_depth": cfg.dfs_depth,
                "dfs_min_cosine": cfg.dfs_min_cosine,
            },
            "turn_time": f"session date at 00:00 UTC + turn index × {self.turn_gap_s:g} s; an undated session "
            "starts right after the previous one",
            "max_images": self.max_images,
            "max_text_tokens": self.max_text_tokens,
            "token_counter": self._counter_kind,
            "unit": "1 turn: 'date: [speaker] text' + its image",
            "images": IMAGES_NOTE,
            **encoder_describe(self.encoder),
        }

    @staticmethod
    def node_text(session: Session, turn: Turn) -> str:
        """``2024-03-20: [Kiki] text`` (date-prefixed, as published)."""
        return f"{session_date(session)}: [{turn.speaker}] {turn.text.strip()}"

    async def observe(self, session: Session) -> None:
        if session.absent or not session.turns:
            return
        text = ngm_node_text if self.options["node_text"] == "official" else self.node_text
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
            "semantic_links": self.graph.edge_count("semantic") // (2 if self.options["links"] == "symmetric" else 1),
            "undated_sessions": self._undated_sessions,
        }
        if self.options["request"] == "official":
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
