"""Work that depends only on the memory state is done once per state, not once per question
(counted, not timed): Full (Text)'s context is rendered and tokenized once per dialogue state."""

from __future__ import annotations

import tiktoken
from mm_fakes import recording_chat
from test_paper_preset import _dialogue5

from h2hmem.llm import Usage
from h2hmem.memory import MemoryContext
from h2hmem.memory._per_state import PerState
from h2hmem.memory._registry import resolve_method
from h2hmem.testing import ScriptedChatModel


def _count_encodes(monkeypatch) -> list[int]:
    """Every tiktoken ``encode`` call from now on appends the length of its text."""
    calls: list[int] = []
    real = tiktoken.Encoding.encode

    def counting(self, text, *args, **kwargs):
        calls.append(len(text))
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(tiktoken.Encoding, "encode", counting)
    return calls


def test_per_state_computes_once_until_cleared():
    memo, made = PerState(), []
    for _ in range(3):
        assert memo.get("k", lambda: made.append(1) or len(made)) == 1
    memo.clear()
    assert memo.get("k", lambda: made.append(1) or len(made)) == 2 and memo.computed == 2


async def test_paper_full_text_tokenizes_the_context_once_per_dialogue_state(sample_root, monkeypatch):
    d = _dialogue5(sample_root)
    ctx = MemoryContext(dialogue_id=d.id, chat=recording_chat(), captions=lambda ref: f"caption of {ref.file}")
    memory = resolve_method("full-text")(ctx)  # paper: head truncation of cl100k tokens
    sessions = [s for s in d.sessions if not s.absent]
    for s in sessions[:-1]:
        await memory.observe(s)
    encodes = _count_encodes(monkeypatch)
    first = [await memory.answer(q) for q in d.questions[:4]]
    assert len(encodes) == 1 and encodes[0] > 40_000  # the whole rendered history, once for 4 questions
    assert len({a.details["original_context_tokens"] for a in first}) == 1
    await memory.observe(sessions[-1])  # a new state: one more tokenization, then none
    later = [await memory.answer(q) for q in d.questions[:4]]
    assert len(encodes) == 2
    assert later[0].details["original_context_tokens"] > first[0].details["original_context_tokens"]
    assert all(a.details["context_tokens"] == 4096 and a.details["truncated"] for a in first + later)


async def test_harmonized_full_text_counts_each_line_once(sample_root):
    d = _dialogue5(sample_root)
    counted: list[str] = []

    def tokenizer(text: str) -> int:
        counted.append(text)
        return len(text.split())

    chat = ScriptedChatModel(
        default="fake answer",
        spec="fake:counting",
        context_tokens=100_000,
        tokenizer=tokenizer,
        usage=Usage(prompt_tokens=1, completion_tokens=1, calls=1),
    )
    ctx = MemoryContext(dialogue_id=d.id, chat=chat, captions=lambda ref: f"caption of {ref.file}", preset="harmonized")
    memory = resolve_method("full-text")(ctx)
    for s in d.sessions:
        await memory.observe(s)
    observed = len(counted)  # one count per session header and turn line
    assert observed == sum(1 + len(s.turns) for s in d.sessions if s.turns and not s.absent)
    questions = [q for q in d.questions if q.images][:3] + list(d.questions[:3])
    for q in questions:
        await memory.answer(q)
    once = len(counted)  # question-image captions leave the budget: each counted at its first use
    assert once - observed <= sum(len(q.images) for q in questions)
    for q in questions:  # the same state: nothing is counted again
        await memory.answer(q)
    assert len(counted) == once


def test_h2h_speaker_directory_matches_a_misspelling_once_per_set_of_speakers(monkeypatch):
    import difflib

    from h2hmem.memory.h2h._people import SpeakerDirectory

    calls: list[str] = []
    real = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda word, *a, **k: calls.append(word) or real(word, *a, **k))
    d = SpeakerDirectory()
    for name in ("Lin Shuying", "Dr. Wu"):
        d.add(name)
    question = "What did Lin Shuyng tell Dr. Wu about the weekend?"
    assert d.named_in(question) == ["Lin Shuying", "Dr. Wu"]  # "Shuyng": one letter off
    first = len(calls)
    assert first > 0
    assert d.named_in(question) == ["Lin Shuying", "Dr. Wu"] and len(calls) == first  # nothing matched again
    d.add("Ma Lan")  # a new speaker can be a closer match: the memo is cleared
    assert d.named_in(question) == ["Lin Shuying", "Dr. Wu"]
    # every key looked up before is looked up again (a new name only widens the names whose length
    # allows a match, so at least as many keys reach difflib as the first time)
    assert set(calls[:first]) <= set(calls[first:])
    assert len(calls) >= 2 * first


async def test_h2h_looks_up_each_image_caption_once_per_session():
    """An image turn appears in its own record, its neighbours' windows and its followers' notes:
    its caption is looked up once, and every text is what the record format gives by hand."""
    import datetime as dt

    from mm_fakes import HashEmbedder, make_session, recording_chat

    from h2hmem.memory.h2h._memory import H2HMemory

    asked: list[str] = []

    def captions(ref):
        asked.append(ref.key)
        return {"pizza.jpg": " a pizza with a charred crust "}.get(ref.file)

    session = make_session(
        "session1",
        dt.date(2024, 3, 1),
        [
            ("Kiki", "look at my pizza", "pizza.jpg"),
            ("Lin Sen", "that crust has a lovely golden char", None),
            ("Kiki", "", "blank.png"),  # no text, no caption
            ("Lin Sen", "nice", None),
        ],
    )
    emb = HashEmbedder()
    mem = H2HMemory(
        MemoryContext(dialogue_id="d", chat=recording_chat(), captions=captions, embedder_factory=lambda: emb),
        image_followers=2,
    )
    await mem.observe(session)
    assert sorted(asked) == ["session1/blank.png", "session1/pizza.jpg"]  # once each, not once per window
    pizza, char, blank, nice = mem.index.turns
    note = "[Image pizza.jpg: a pizza with a charred crust]"
    line0 = f"Kiki: look at my pizza {note}"
    assert pizza.text == line0
    # an image turn's window runs over its image_followers (2) next turns; a follower is linked to the
    # image ("(about …)") only up to the next image, so "Lin Sen: nice" is about blank.png
    # (an empty text keeps both separators: "Kiki: " + "" + " " + note, as the format always wrote it)
    blank_line = "Kiki:  [Image blank.png]"
    assert pizza.context == f"{line0} Lin Sen: that crust has a lovely golden char {blank_line}"
    # any other turn's window: the turn before it and the context_after (2) turns after it (the replies)
    nice_line = "Lin Sen: nice"
    assert (
        char.context == f"{line0} Lin Sen: that crust has a lovely golden char {blank_line} {nice_line} (about {note})"
    )
    assert blank.text == blank_line
    assert nice.context == f"{blank_line} Lin Sen: nice (about [Image blank.png])"
    assert mem._captions_missing == 1  # counted per image turn without a caption (answer details)
    assert "a pizza with a charred crust" in pizza.line
