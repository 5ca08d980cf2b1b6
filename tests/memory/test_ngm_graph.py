"""NGM graph rules on a hand-made 5-turn dialogue of 2-D unit vectors (angles in degrees).

Nodes: n0 0°, n1 90°, n2 10°, n3 40°, n4 85°. Cosines are cos(angle difference), so the semantic
edges (cosine ≥ 0.7 with an *earlier* node) are, by hand:
  n2–n0 (cos 10° = 0.985); n3–n2 (cos 30° = 0.866), n3–n0 (cos 40° = 0.766);
  n4–n1 (cos 5° = 0.996), n4–n3 (cos 45° = 0.7071).  Not: n3–n1 (cos 50° = 0.643), n4–n2 (cos 75°).
Temporal edges (forward): 0→1, 1→2, 2→3, 3→4.
Neighbours: n0 {1,2,3}, n1 {2,4}, n2 {0,3}, n3 {0,2,4}, n4 {1,3}; degrees 3,2,2,3,2.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest

from h2hmem.memory.ngm._graph import GraphConfig, TurnGraph, session_turn_times, temporal_weight

ANGLES = [0, 90, 10, 40, 85]


def unit(deg: float) -> np.ndarray:
    r = math.radians(deg)
    return np.array([math.cos(r), math.sin(r)], dtype=np.float32)


def build(**cfg) -> TurnGraph:
    g = TurnGraph(GraphConfig(**cfg))
    for i, a in enumerate(ANGLES):
        g.add_node(unit(a), 60.0 * i)
    return g


def test_edges_both_directions_and_thresholds():
    g = build()
    assert g.edge_count("temporal") == 4
    assert g.edge_count("semantic") == 10  # 5 links × 2 directions
    assert [g.neighbours(i) for i in range(5)] == [{1, 2, 3}, {2, 4}, {0, 3}, {0, 2, 4}, {1, 3}]
    assert [g.degree(i) for i in range(5)] == [3, 2, 2, 3, 2]
    # weights: semantic = cosine, stored the same both ways
    assert g.edges[3][(0, "semantic")] == pytest.approx(math.cos(math.radians(40)), abs=1e-6)
    assert g.edges[0][(3, "semantic")] == pytest.approx(math.cos(math.radians(40)), abs=1e-6)
    assert (1, "semantic") not in g.edges[3]  # cos 50° = 0.643 < 0.7
    # forward temporal only: 1 → 2 exists, 2 → 1 does not
    assert g.edges[1][(2, "temporal")] == pytest.approx(math.exp(-60 / 3600))
    assert (1, "temporal") not in g.edges[2]


def test_temporal_both_ways_option():
    g = build(temporal="both")
    assert g.edge_count("temporal") == 8
    assert g.neighbours(4) == {1, 3}  # 3 was already a semantic neighbour
    assert g.neighbours(2) == {0, 1, 3}


def test_semantic_k_caps_links_of_the_new_node():
    g = build(semantic_k=1)
    # each new node links only to its single most similar earlier node (if ≥ 0.7)
    assert g.edge_count("semantic") == 2 * 3  # n2–n0, n3–n2, n4–n1
    assert (0, "semantic") not in g.edges[3]


def test_threshold_option():
    g = build(semantic_threshold=0.8)
    assert (3, "semantic") not in g.edges[4]  # 0.7071 < 0.8
    assert (0, "semantic") not in g.edges[3]  # 0.766 < 0.8
    assert g.edge_count("semantic") == 2 * 3  # n2–n0, n3–n2, n4–n1


def test_recall_seeds_plus_one_hop():
    g = build(seeds=2, max_nodes=3)
    # query 0°: seeds n0 (1.0), n2 (0.985); candidates {0,1,2,3}; n4 is not reachable
    got = g.recall(unit(0))
    assert [n for n, _ in got] == [0, 2, 3]
    assert got[0][1] == pytest.approx(1.0 * 1.3, abs=1e-6)
    assert got[1][1] == pytest.approx(math.cos(math.radians(10)) * 1.2, abs=1e-6)
    assert got[2][1] == pytest.approx(math.cos(math.radians(40)) * 1.3, abs=1e-6)


def test_degree_boost_changes_the_order():
    # query 25°: cos n2 = cos n3 = cos 15° = 0.9659, n0 = cos 25° = 0.9063
    boosted = build(seeds=3, max_nodes=3).recall(unit(25))
    assert [n for n, _ in boosted] == [3, 0, 2]  # 1.2557, 1.1782, 1.1591
    assert boosted[0][1] == pytest.approx(math.cos(math.radians(15)) * 1.3, abs=1e-6)
    plain = build(seeds=3, max_nodes=3, degree_boost=0.0).recall(unit(25))
    assert [n for n, _ in plain] == [2, 3, 0]  # tie n2/n3 broken by node id


def test_recall_dfs_depth_and_cosine_gate():
    g = build(seeds=1, max_nodes=5, dfs_min_cosine=0.5)
    # from n0: enters n2, n3 (cos ≥ 0.5); n1 (cos 0) and n4 (cos 0.087) are gated out
    assert sorted(n for n, _ in g.recall_dfs(unit(0))) == [0, 2, 3]
    g1 = build(seeds=1, max_nodes=5, dfs_min_cosine=-1.0, dfs_depth=1)
    assert sorted(n for n, _ in g1.recall_dfs(unit(0))) == [0, 1, 2, 3]
    g2 = build(seeds=1, max_nodes=5, dfs_min_cosine=-1.0, dfs_depth=2)
    assert sorted(n for n, _ in g2.recall_dfs(unit(0))) == [0, 1, 2, 3, 4]


def test_session_turn_times():
    d = dt.date(2024, 2, 18)  # 2024-01-01 is 1704067200; + 48 days
    assert session_turn_times(d, 3, None) == [1708214400.0, 1708214460.0, 1708214520.0]
    assert session_turn_times(None, 2, 1000.0) == [1060.0, 1120.0]  # unknown date: right after
    assert session_turn_times(d, 1, 1708214520.0) == [1708214580.0]  # same day: after the previous
    assert session_turn_times(None, 1, None) == [0.0]
    # a day between sessions makes the cross-session temporal weight vanish
    assert temporal_weight(86400 - 120) == pytest.approx(math.exp(-86280 / 3600))
    assert temporal_weight(-60) == temporal_weight(60)


def test_dimension_mismatch_is_an_error():
    g = build()
    with pytest.raises(ValueError, match="dimension 3"):
        g.add_node(np.ones(3, np.float32) / math.sqrt(3), 0.0)


def test_empty_graph_recalls_nothing():
    assert TurnGraph().recall(unit(0)) == []
    assert TurnGraph().recall_dfs(unit(0)) == []


def test_official_links_one_way_degree_in_plus_out():
    """links="official" (preset paper): edges stored earlier → later only; degree = out + in.
    Three identical vectors: node 1 links 0→1 (temporal, then semantic on the same pair), node 2 links
    1→2 (temporal), 0→2 and 1→2 (semantic)."""
    import numpy as np

    from h2hmem.memory.ngm._graph import GraphConfig, TurnGraph

    g = TurnGraph(GraphConfig(links="official"))
    for t in range(3):
        g.add_node(np.array([1.0, 0.0], np.float32), float(t))
    assert [g.neighbours(n) for n in range(3)] == [{1, 2}, {2}, set()]
    assert [g.degree(n) for n in range(3)] == [2, 2, 2]  # 0: out 2; 1: out 1 + in 1; 2: in 2
    sym = TurnGraph(GraphConfig())
    for t in range(3):
        sym.add_node(np.array([1.0, 0.0], np.float32), float(t))
    assert [sym.neighbours(n) for n in range(3)] == [{1, 2}, {0, 2}, {0, 1}]
