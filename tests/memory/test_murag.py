"""MuRAG: retrieval order, native context (images after their lines, question image first, image and
text budgets), evidence, the per-session vector cache, and the tiny-CLIP image path."""

from __future__ import annotations

import datetime as dt
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from mm_fakes import AngleEncoder, image_names, make_question, make_session, recording_chat, user_parts

from h2hmem.data import ImageRef
from h2hmem.llm import ImagePart, TextPart
from h2hmem.memory import MemoryContext, resolve_method
from h2hmem.memory.murag._memory import MuRAGMemory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embed"))
from tiny_clip import build_tiny_clip, write_image

D = dt.date(2024, 3, 1)
CAPTIONS = {
    "session1/a.png": "caption a",
    "session1/b.png": "caption b",
    "session1/c.png": "caption c",
    "session1/q.png": "caption q",
}


def lookup(ref: ImageRef) -> str | None:
    return CAPTIONS.get(ref.key)


@pytest.fixture()
def setup(tmp_path):
    img = tmp_path / "img"
    for f in ("a.png", "b.png", "q.png"):  # c.png is missing on disk
        write_image(img / "session1" / f, (10, 200, 10))
    session = make_session(
        "session1",
        D,
        [
            ("Ann", "cat <deg=0>", "a.png"),
            ("Bob", "dog <deg=90>", None),
            ("Ann", "car <deg=25>", "b.png"),
            ("Bob", "sky <deg=60>", "c.png"),
        ],
        img,
    )
    q_ref = ImageRef(session="session1", file="q.png", path=img / "session1" / "q.png")
    question = make_question("what cat? <deg=10>", images=(q_ref,))
    return session, question, tmp_path


def ctx_for(tmp_path, chat) -> MemoryContext:
    return MemoryContext(
        preset="harmonized", dialogue_id="dyadic/dialogue1", chat=chat, captions=lookup, state_dir=tmp_path / "state"
    )


def test_registered():
    assert resolve_method("murag") is MuRAGMemory


async def test_ranking_context_and_evidence(setup):
    session, question, tmp = setup
    chat, enc = recording_chat(), AngleEncoder()
    mem = MuRAGMemory(ctx_for(tmp, chat), encoder=enc, top_k=3, max_images=3)
    await mem.observe(session)
    # unit text '[speaker] date: text' + image path; the missing c.png goes in as its caption
    assert enc.seen[0] == ("[Ann] 2024-03-01: cat <deg=0>", session.turns[0].image.path)
    assert enc.seen[3] == ("[Bob] 2024-03-01: sky <deg=60> [Image c.png in session1: caption c]", None)
    ans = await mem.answer(question)
    assert ans.details["retrieval_s"] >= 0  # timed retrieval, for the efficiency table
    assert enc.seen[-1] == ("what cat? <deg=10>", question.images[0].path)  # query = text + image
    # cosines with 10°: t0 cos 10°, t2 cos 15°, t3 cos 50° (t1 cos 80° is 4th)
    assert [(e.session, e.turn) for e in ans.evidence] == [("session1", 0), ("session1", 2), ("session1", 3)]
    assert [e.score for e in ans.evidence] == pytest.approx([math.cos(math.radians(a)) for a in (10, 15, 50)], abs=1e-5)
    parts = user_parts(chat.requests_for("answer")[0].messages)
    # question image first, then each retrieved turn's image right after its line; the 3-image
    # budget (question image included) leaves t3's image as caption text
    assert image_names(parts) == ["q.png in session1", "a.png in session1", "b.png in session1"]
    assert isinstance(parts[1], ImagePart) and parts[1].name == "q.png in session1"
    assert parts[2].text.endswith("Memory:\n(session1, turn 0) [2024-03-01] Ann: cat <deg=0> <image a.png in session1>")
    assert parts[4].text == "(session1, turn 2) [2024-03-01] Ann: car <deg=25> <image b.png in session1>"
    assert parts[6].text.startswith(
        "(session1, turn 3) [2024-03-01] Bob: sky <deg=60> [Image c.png in session1: caption c]"
    )
    assert ans.details["images_attached"] == 3 and ans.details["dropped_images"] == 1
    assert chat.requests[0].config.temperature == 0.1


async def test_text_budget_drops_lowest_ranked(setup):
    session, question, tmp = setup
    chat = recording_chat()
    # each kept line is 11 words + 1 → 12 tokens; a budget of 25 keeps the two best turns
    mem = MuRAGMemory(ctx_for(tmp, chat), encoder=AngleEncoder(), top_k=3, max_text_tokens=25)
    await mem.observe(session)
    ans = await mem.answer(question)
    assert ans.details["dropped_turns"] == 1 and ans.details["context_tokens"] == 24
    text = "".join(p.text for p in user_parts(chat.requests[0].messages) if isinstance(p, TextPart))
    assert "turn 3" not in text and "turn 2" in text
    assert len(ans.evidence) == 3  # evidence = what was retrieved, in rank order


async def test_vectors_saved_and_reused(setup):
    session, question, tmp = setup
    await MuRAGMemory(ctx_for(tmp, recording_chat()), encoder=AngleEncoder()).observe(session)
    assert (tmp / "state" / "murag" / "session1.npz").is_file()
    enc2 = AngleEncoder()
    mem2 = MuRAGMemory(ctx_for(tmp, recording_chat()), encoder=enc2)
    await mem2.observe(session)
    assert enc2.seen == []  # nothing re-encoded
    ans = await mem2.answer(question)
    assert ans.evidence[0].turn == 0


async def test_describe_and_empty_memory(setup):
    _, question, tmp = setup
    chat = recording_chat()
    mem = MuRAGMemory(ctx_for(tmp, chat), encoder=AngleEncoder())
    d = mem.describe()
    o = mem.options  # preset harmonized: 10 images (paper: 5, as evaluate.sh @ b6070899)
    assert (o.top_k, o.max_images, o.max_text_tokens) == (5, 10, 4096)
    assert d["encoder"] == "angle" and "deviations" not in d and "question image" in d["images"]
    ans = await mem.answer(question)
    assert ans.evidence == [] and "(nothing was retrieved)" in str(chat.requests[0].messages[-1].content)
    with pytest.raises(ValueError):
        MuRAGMemory(ctx_for(tmp, chat), encoder=AngleEncoder(), top_k=0)


async def test_tiny_clip_image_path(tmp_path):
    clip = build_tiny_clip(tmp_path / "clip")
    img = tmp_path / "img"
    colours = [(250, 0, 0), (0, 250, 0), (0, 0, 250)]
    for k, c in enumerate(colours):
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
    q = make_question("the red cat", images=(session.turns[0].image,))
    mem = MuRAGMemory(ctx_for(tmp_path, chat), encoder=f"clip:{clip}", device="cpu", top_k=3)
    assert mem.describe()["encoder_uses_images"] is True
    await mem.observe(session)
    ans = await mem.answer(q)
    # scores are the cosines of the fused query with the fused units, by definition
    enc = mem.encoder
    units = await enc.encode(
        [(MuRAGMemory.unit_text(session, t), t.image.path if t.image else None) for t in session.turns]
    )
    qv = (await enc.encode([("the red cat", session.turns[0].image.path)]))[0]
    cos = units @ qv
    order = list(np.argsort(-cos, kind="stable")[:3])
    assert [e.turn for e in ans.evidence] == order
    assert [e.score for e in ans.evidence] == pytest.approx([float(cos[i]) for i in order], abs=1e-5)
    parts = user_parts(chat.requests[0].messages)
    expected = ["0.png in session1"] + [f"{i}.png in session1" for i in order if session.turns[i].image]
    assert image_names(parts) == expected


async def test_unreadable_vector_file_is_rebuilt(setup):
    session, _, tmp = setup
    (tmp / "state" / "murag").mkdir(parents=True)
    (tmp / "state" / "murag" / "session1.npz").write_bytes(b"torn")
    enc = AngleEncoder()
    await MuRAGMemory(ctx_for(tmp, recording_chat()), encoder=enc).observe(session)
    assert len(enc.seen) == 4
    with np.load(tmp / "state" / "murag" / "session1.npz") as data:
        assert data["vectors"].shape == (4, 2)
