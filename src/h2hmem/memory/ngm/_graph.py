"""The graph behind NGM (Neural Graph Memory): one node per turn, temporal and semantic edges.

Plain data structures (numpy vectors, dicts of edges), no model calls, so every rule can be
tested by hand. Rules and defaults come from docs/baselines.md ("NGM"):

- a **temporal edge** from each turn to the next, weight ``exp(-Δt / 3600 s)``, where Δt comes
  from the real session dates and the turn order (:func:`session_turn_times`); the official code
  used wall-clock load time, which made the weight meaningless (docs/official-pitfalls.md #9);
- **semantic edges** from a new node to up to 5 most similar *earlier* nodes whose cosine is
  ≥ 0.7, stored in both directions (the official code stored one direction only, docs/official-pitfalls.md #9);
- **recall**: seeds = the 6 nodes most similar to the query (3 × multiplier 2); candidates = the
  seeds and their 1-hop neighbours; score = cosine × (1 + 0.1 × degree); keep the top 5;
- **depth-first recall** (variant): from each seed walk the edges up to depth 3, entering only
  nodes with cosine ≥ 0.5, then score and keep as above.

Degree is the number of distinct neighbours a node's edges lead to (a neighbour joined by both a
temporal and a semantic edge counts once).

``links="official"`` (preset ``paper``) builds the graph as ``baselines/NGM/NGM.py`` @ 919db825 did:
every edge is stored one way, from the earlier node to the later one (temporal and semantic); a
node's neighbours are the nodes its stored edges lead to; its degree counts the nodes it links to
plus the nodes linking to it (``get_node_degree`` = out-degree + in-degree).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

TIME_SCALE_S = 3600.0
"""Temporal decay constant of the published NGM: weight = exp(-Δt / 3600 s)."""
TURN_GAP_S = 60.0
"""Our choice (the data has no clock times): turns of one session are 60 s apart."""
SEMANTIC_K = 5
"""Semantic edges per new node, at most (published)."""
SEMANTIC_THRESHOLD = 0.7
"""Minimum cosine for a semantic edge (published)."""
SEED_K = 3
SEED_MULTIPLIER = 2
"""Seeds = SEED_K × SEED_MULTIPLIER = 6 nodes (published)."""
MAX_NODES = 5
"""Nodes returned by recall (published ``max_nodes``)."""
DEGREE_BOOST = 0.1
"""score = cosine × (1 + DEGREE_BOOST × degree) (published)."""
DFS_DEPTH = 3
DFS_MIN_COSINE = 0.5
"""Depth-first variant: depth ≤ 3, nodes with cosine ≥ 0.5 (published)."""

EdgeKind = Literal["temporal", "semantic"]


def session_turn_times(
    date: dt.date | None, n_turns: int, previous_end_s: float | None, turn_gap_s: float = TURN_GAP_S
) -> list[float]:
    """Times (seconds since 1970-01-01 UTC) of the ``n_turns`` turns of one session.

    A session starts at midnight UTC of its date; turn ``i`` is at ``start + i × turn_gap_s``.
    A session whose date is unknown, or that would start before the previous session ended
    (two sessions on one day), starts ``turn_gap_s`` after the previous session's last turn —
    the smallest time consistent with the session order. The first session with no date starts
    at 0.

    Example: date 2024-02-18, 3 turns, no previous session →
    ``[1708214400.0, 1708214460.0, 1708214520.0]``.
    """
    start = None
    if date is not None:
        start = dt.datetime(date.year, date.month, date.day, tzinfo=dt.timezone.utc).timestamp()
    if previous_end_s is not None and (start is None or start <= previous_end_s):
        start = previous_end_s + turn_gap_s
    if start is None:
        start = 0.0
    return [start + i * turn_gap_s for i in range(n_turns)]


def temporal_weight(delta_s: float, time_scale_s: float = TIME_SCALE_S) -> float:
    """``exp(-|Δt| / time_scale_s)``: 1 for simultaneous turns, 0.98 a minute apart, ~0 a day apart."""
    return math.exp(-abs(delta_s) / time_scale_s)


@dataclass(frozen=True)
class GraphConfig:
    """Construction and recall settings; defaults are the published ones (see module constants)."""

    time_scale_s: float = TIME_SCALE_S
    semantic_k: int = SEMANTIC_K
    semantic_threshold: float = SEMANTIC_THRESHOLD
    temporal: Literal["forward", "both"] = "forward"
    """``forward`` (published): the edge goes from a turn to the next only; ``both`` also links back."""
    seeds: int = SEED_K * SEED_MULTIPLIER
    max_nodes: int = MAX_NODES
    degree_boost: float = DEGREE_BOOST
    dfs_depth: int = DFS_DEPTH
    dfs_min_cosine: float = DFS_MIN_COSINE
    links: Literal["symmetric", "official"] = "symmetric"
    """``symmetric``: semantic edges stored both ways, degree = distinct neighbours; ``official``: every
    edge stored earlier → later only, degree = out-degree + in-degree (the published code)."""


@dataclass
class TurnGraph:
    """Nodes (unit vectors with a time) and typed, weighted edges.

    ``edges[i]`` maps ``(neighbour, kind)`` → weight (temporal: decay weight; semantic: cosine).
    """

    config: GraphConfig = field(default_factory=GraphConfig)
    vectors: list[np.ndarray] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    edges: list[dict[tuple[int, EdgeKind], float]] = field(default_factory=list)
    sources: list[set[int]] = field(default_factory=list)
    """Nodes whose stored edges lead to each node (in-neighbours)."""

    def __len__(self) -> int:
        return len(self.vectors)

    def add_node(self, vector: np.ndarray, time_s: float) -> int:
        """Add a node (an L2-normalised vector of shape ``(d,)``) and its edges; returns its id.

        Raises:
            ValueError: the vector's dimension differs from the earlier nodes'.
        """
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.vectors and v.shape != self.vectors[0].shape:
            raise ValueError(f"vector has dimension {v.shape[0]}, graph nodes have {self.vectors[0].shape[0]}")
        node = len(self.vectors)
        cfg = self.config
        earlier = np.stack(self.vectors) if self.vectors else np.zeros((0, v.shape[0]), np.float32)
        self.vectors.append(v)
        self.times.append(float(time_s))
        self.edges.append({})
        self.sources.append(set())
        if node > 0:
            w = temporal_weight(time_s - self.times[node - 1], cfg.time_scale_s)
            self._link(node - 1, node, "temporal", w)
            if cfg.temporal == "both":
                self._link(node, node - 1, "temporal", w)
            sims = earlier @ v
            order = np.argsort(-sims, kind="stable")[: cfg.semantic_k]
            for j in order:
                if sims[j] >= cfg.semantic_threshold:
                    if cfg.links == "symmetric":
                        self._link(node, int(j), "semantic", float(sims[j]))
                    self._link(int(j), node, "semantic", float(sims[j]))
        return node

    def _link(self, src: int, dst: int, kind: EdgeKind, weight: float) -> None:
        self.edges[src][(dst, kind)] = weight
        self.sources[dst].add(src)

    def neighbours(self, node: int) -> set[int]:
        """Distinct nodes that ``node``'s edges lead to."""
        return {n for n, _ in self.edges[node]}

    def degree(self, node: int) -> int:
        """Distinct neighbours (``symmetric``), or out-degree + in-degree (``official``)."""
        if self.config.links == "official":
            return len(self.neighbours(node)) + len(self.sources[node])
        return len(self.neighbours(node))

    def edge_count(self, kind: EdgeKind | None = None) -> int:
        """Directed edges stored (a semantic link counts twice: one per direction)."""
        return sum(1 for e in self.edges for _, k in e if kind is None or k == kind)

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Cosine of every node with the unit vector ``query``: shape ``(len(self),)``."""
        if not self.vectors:
            return np.zeros(0, np.float32)
        return np.stack(self.vectors) @ np.asarray(query, np.float32).reshape(-1)

    def _seeds(self, cos: np.ndarray) -> list[int]:
        return [int(i) for i in np.argsort(-cos, kind="stable")[: self.config.seeds]]

    def _rank(self, candidates: set[int], cos: np.ndarray) -> list[tuple[int, float]]:
        boost = self.config.degree_boost
        scored = [(n, float(cos[n]) * (1.0 + boost * self.degree(n))) for n in candidates]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[: self.config.max_nodes]

    def recall(self, query: np.ndarray) -> list[tuple[int, float]]:
        """Seeds + their 1-hop neighbours, scored ``cos × (1 + boost × degree)``; best ``max_nodes``.

        Returns ``[(node, score), …]`` best first (ties: lower node id first).
        """
        cos = self.cosines(query)
        if cos.size == 0:
            return []
        candidates = set(self._seeds(cos))
        for s in list(candidates):
            candidates |= self.neighbours(s)
        return self._rank(candidates, cos)

    def recall_dfs(self, query: np.ndarray) -> list[tuple[int, float]]:
        """Depth-first variant: from each seed follow edges up to ``dfs_depth`` hops, entering only
        nodes whose cosine with the query is ≥ ``dfs_min_cosine``; seeds are always kept.
        Scored and cut like :meth:`recall`."""
        cos = self.cosines(query)
        if cos.size == 0:
            return []
        cfg = self.config
        seeds = self._seeds(cos)
        found = set(seeds)
        for seed in seeds:
            stack = [(seed, 0)]
            best_depth = {seed: 0}
            while stack:
                node, depth = stack.pop()
                if depth == cfg.dfs_depth:
                    continue
                for n in sorted(self.neighbours(node), reverse=True):
                    if cos[n] < cfg.dfs_min_cosine or best_depth.get(n, cfg.dfs_depth + 1) <= depth + 1:
                        continue
                    best_depth[n] = depth + 1
                    found.add(n)
                    stack.append((n, depth + 1))
        return self._rank(found, cos)
