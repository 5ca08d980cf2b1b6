"""NGM as a memory method: turn times from session dates, graph recall → evidence and native context,
and the tiny-CLIP image path. The graph rules themselves are pinned in test_ngm_graph.py."""

from __future__ import annotations

import datetime as dt
import math
import sys
from pathlib import Path

import pytest
from mm_fakes import AngleEncoder, image_names, make_question, make_session, recording_chat, user_parts

from h2hmem.memory import MemoryContext, resolve_method
from h2hmem.memory.ngm._memory import NGMMemory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embed"))
from tiny_clip import build_tiny_clip, write_image

D = dt.date(2024, 3, 1)


def ctx_for(tmp_path, chat) -> MemoryContext:
    return MemoryContext(preset="harmonized", dialogue_id="dyadic/dialogue1", chat=chat, state_dir=tmp_path / "state")


def test_registered():
    assert resolve_method("ngm") is NGMMemory


async def test_recall_matches_hand_computed_graph(tmp_path):
    # same angles as test_ngm_graph: n0 0°, n1 90°, n2 10°, n3 40°, n4 85°; degrees 3,2,2,3,2
    s1 = make_session("session1", D, [("A", f"t <deg={a}>", None) for a in (0, 90, 10)])
    s2 = make_session("session2", D + dt.timedelta(days=1), [("B", f"t <deg={a}>", None) for a in (40, 85)])
    chat = recording_chat()
    mem = NGMMemory(ctx_for(tmp_path, chat), encoder=AngleEncoder(), seeds=3, max_nodes=3)
    await mem.observe(s1)
    await mem.observe(s2)
    g = mem.graph
    assert [g.degree(i) for i in range(5)] == [3, 2, 2, 3, 2]
    # temporal weights: 60 s inside a session; across sessions one day minus the 2 × 60 s of session1
    assert g.edges[0][(1, "temporal")] == pytest.approx(math.exp(-60 / 3600))
    assert g.edges[2][(3, "temporal")] == pytest.approx(math.exp(-(86400 - 120) / 3600))
    ans = await mem.answer(make_question("q <deg=25>"))
    assert ans.details["retrieval_s"] >= 0  # timed retrieval, for the efficiency table
    # n3 cos15°·1.3, n0 cos25°·1.3, n2 cos15°·1.2 → (session2, 0), (session1, 0), (session1, 2)
    assert [(e.session, e.turn) for e in ans.evidence] == [("session2", 0), ("session1", 0), ("session1", 2)]
    assert ans.evidence[0].score == pytest.approx(math.cos(math.radians(15)) * 1.3, abs=1e-5)
    assert ans.details["nodes"] == 5 and ans.details["semantic_links"] == 5
    text = str(chat.requests[0].messages[-1].content)
    assert text.index("(session2, turn 0)") < text.index("(session1, turn 0)") < text.index("(session1, turn 2)")


async def test_dfs_variant_and_undated_session(tmp_path):
    s1 = make_session("session1", None, [("A", f"t <deg={a}>", None) for a in (0, 90, 10, 40, 85)])
    mem = NGMMemory(
        ctx_for(tmp_path, recording_chat()),
        encoder=AngleEncoder(),
        recall="dfs",
        seeds=1,
        max_nodes=5,
        dfs_min_cosine=0.5,
    )
    await mem.observe(s1)
    assert mem.graph.times == [0.0, 60.0, 120.0, 180.0, 240.0]  # undated first session starts at 0
    ans = await mem.answer(make_question("q <deg=0>"))
    assert sorted(e.turn for e in ans.evidence) == [0, 2, 3]  # n1, n4 gated out (cosine < 0.5)
    assert ans.details["undated_sessions"] == 1
    d = mem.describe()
    assert mem.options.recall == "dfs" and mem.graph.config.semantic_threshold == 0.7 and "60 s" in d["turn_time"]
    with pytest.raises(ValueError, match="recall"):
        NGMMemory(ctx_for(tmp_path, recording_chat()), encoder=AngleEncoder(), recall="bfs")


async def test_tiny_clip_image_path(tmp_path):
    clip = build_tiny_clip(tmp_path / "clip")
    img = tmp_path / "img"
    for k, c in enumerate([(250, 0, 0), (0, 250, 0), (0, 0, 250)]):
        write_image(img / "session1" / f"{k}.png", c)
    session = make_session(
        "session1",
        D,
        [
            ("Ann", "the red cat", "0.png"),
            ("Bob", "the green", "1.png"),
            ("Ann", "the blue", "2.png"),
            ("Bob", "no picture", None),
        ],
        img,
    )
    chat = recording_chat()
    mem = NGMMemory(ctx_for(tmp_path, chat), encoder=f"clip:{clip}", device="cpu", max_nodes=3)
    await mem.observe(session)
    assert (tmp_path / "state" / "ngm" / "session1.npz").is_file()
    ans = await mem.answer(make_question("the red cat", images=(session.turns[0].image,)))
    assert len(ans.evidence) == 3
    scores = [e.score for e in ans.evidence]
    assert scores == sorted(scores, reverse=True)
    # every score = cosine × (1 + 0.1 × degree), by definition
    qv = (await mem.encoder.encode([("the red cat", session.turns[0].image.path)]))[0]
    cos = mem.graph.cosines(qv)
    for e in ans.evidence:
        assert e.score == pytest.approx(float(cos[e.turn]) * (1 + 0.1 * mem.graph.degree(e.turn)), abs=1e-5)
    names = image_names(user_parts(chat.requests[0].messages))
    assert names[0] == "0.png in session1"  # the question image first
    assert names[1:] == [f"{e.turn}.png in session1" for e in ans.evidence if session.turns[e.turn].image]
