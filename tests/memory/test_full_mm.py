"""Full (MM): images right after their turns, question image first, most recent images and turns
kept within the budgets, and what was dropped recorded. Token counts are words (+1 per line)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest
from mm_fakes import image_names, make_question, make_session, recording_chat, user_parts

from h2hmem.data import ImageRef
from h2hmem.llm import ImagePart, TextPart
from h2hmem.memory import MemoryContext, resolve_method
from h2hmem.memory.full_mm._memory import FullMMMemory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embed"))
from tiny_clip import write_image

CAPS = {"session1/a.png": "cap a", "session1/b.png": "cap b", "session2/c.png": "cap c", "session2/q.png": "cap q"}
OVERHEAD = 1024 + 256  # answer budget + prompt overhead taken from the context window


@pytest.fixture()
def sessions(tmp_path):
    img = tmp_path / "img"
    for s, f in (("session1", "a.png"), ("session1", "b.png"), ("session2", "c.png"), ("session2", "q.png")):
        write_image(img / s / f, (120, 30, 200))
    s1 = make_session(
        "session1",
        dt.date(2024, 3, 1),
        [("Ann", "hello there", "a.png"), ("Bob", "nice", None), ("Ann", "look", "b.png")],
        img,
    )
    s2 = make_session("session2", dt.date(2024, 3, 2), [("Bob", "new day", "c.png"), ("Ann", "ok", None)], img)
    q = make_question("what?", images=(ImageRef(session="session2", file="q.png", path=img / "session2" / "q.png"),))
    return s1, s2, q


def ctx_for(chat) -> MemoryContext:
    return MemoryContext(
        preset="harmonized", dialogue_id="dyadic/dialogue1", chat=chat, captions=lambda ref: CAPS.get(ref.key)
    )


async def run(mem, s1, s2, q):
    await mem.observe(s1)
    await mem.observe(s2)
    return await mem.answer(q)


def test_registered():
    assert resolve_method("full-mm") is FullMMMemory


async def test_interleaved_and_most_recent_images(sessions):
    s1, s2, q = sessions
    chat = recording_chat()
    ans = await run(FullMMMemory(ctx_for(chat), max_images=3, image_tokens=5), s1, s2, q)
    parts = user_parts(chat.requests[0].messages)
    # question image first; 2 slots left → the two most recent turn images (b, c); a → caption text
    assert image_names(parts) == ["q.png in session2", "b.png in session1", "c.png in session2"]
    assert isinstance(parts[1], ImagePart)
    assert parts[2].text == (
        "Memory:\n## session1 (2024-03-01)\n[2024-03-01] Ann: hello there [Image a.png in "
        "session1: cap a]\n[2024-03-01] Bob: nice\n[2024-03-01] Ann: look <image b.png in session1>"
    )
    assert parts[3].name == "b.png in session1"
    assert parts[4].text == "## session2 (2024-03-02)\n[2024-03-02] Bob: new day <image c.png in session2>"
    assert parts[5].name == "c.png in session2"
    assert parts[6].text.startswith("[2024-03-02] Ann: ok\nQuestion: what?")
    assert ans.details["images_attached"] == 3 and ans.details["dropped_images"] == 1
    # lines 4, 11 (a as caption), 4, 8 + 5 (b), 4, 9 + 5 (c), 4 → 54; budget = 100000 − 1280 − 5 (q image)
    assert ans.details["dropped_turns"] == 0 and ans.details["context_tokens"] == 54
    assert ans.details["budget_tokens"] == 100_000 - OVERHEAD - 5
    assert [e.session for e in ans.evidence] == ["session2", "session1"]


async def test_text_budget_keeps_most_recent_turns(sessions):
    s1, s2, q = sessions
    # line costs: 4, 11 (a as caption), 4, 8, 4, 9, 4 → a budget of 25 keeps the last four lines
    ans = await run(
        FullMMMemory(ctx_for(recording_chat()), context_tokens=OVERHEAD + 25, max_images=3, image_tokens=0), s1, s2, q
    )
    assert ans.details["budget_tokens"] == 25 and ans.details["context_tokens"] == 25
    assert ans.details["dropped_lines"] == 3 and ans.details["dropped_turns"] == 2 and ans.details["truncated"]
    assert ans.details["images_attached"] == 3 and ans.details["dropped_images"] == 1


async def test_text_only_model_counts_substituted_images(sessions):
    s1, s2, q = sessions
    chat = recording_chat(supports_images=False)
    # each image costs '[Image x.png in sessionK: cap x]' = 6 words + 1; budget 40 − 7 (question image) = 33:
    # from the end: 4 (ok) + 16 (c line 9 + 7) + 4 (header) = 24; + 15 (b line) would overflow
    ans = await run(FullMMMemory(ctx_for(chat), context_tokens=OVERHEAD + 40, max_images=3), s1, s2, q)
    assert ans.details["budget_tokens"] == 33 and ans.details["context_tokens"] == 24
    assert ans.details["dropped_turns"] == 3
    assert ans.details["images_attached"] == 2 and ans.details["dropped_images"] == 2


async def test_no_image_budget_means_captions_only(sessions):
    s1, s2, q = sessions
    chat = recording_chat()
    ans = await run(FullMMMemory(ctx_for(chat), max_images=0), s1, s2, q)
    parts = user_parts(chat.requests[0].messages)
    assert image_names(parts) == []
    text = parts[0].text
    assert (
        "[Image c.png in session2: cap c]" in text
        and "Image attached to the question: [Image q.png in session2: cap q]" in text
    )
    assert ans.details["images_attached"] == 0 and ans.details["dropped_images"] == 3
    assert isinstance(parts[0], TextPart)


def test_describe():
    mem = FullMMMemory(ctx_for(recording_chat()))
    d = mem.describe()
    assert mem.options.max_images == 10 and d["modality"] == "native" and d["token_counter"] == "model"
    assert mem.options.image_tokens == 765 and "options" not in d


async def test_missing_image_file_costs_its_caption_even_for_a_vlm(tmp_path):
    s = make_session("session1", dt.date(2024, 3, 1), [("Ann", "see", "gone.png")])  # no file on disk
    assert s.turns[0].image.path is None
    ans = await run(
        FullMMMemory(ctx_for(recording_chat()), image_tokens=500),
        s,
        make_session("session2", dt.date(2024, 3, 2), []),
        make_question("what?"),
    )
    # header 4 + line '[2024-03-01] Ann: see <image gone.png in session1>' 7 + 1 + '[Image gone.png in session1]' 4 + 1
    assert ans.details["context_tokens"] == 4 + 8 + 5
