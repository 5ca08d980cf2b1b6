"""h2h's parts: speaker names, time anchors, query cleaning, fusion helpers (hand-computed)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from h2hmem.memory.h2h._index import session_prior
from h2hmem.memory.h2h._memory import _cap_per_session, _round_robin
from h2hmem.memory.h2h._people import SpeakerDirectory, name_key
from h2hmem.memory.h2h._query import claim_sides, search_text, sub_queries
from h2hmem.memory.h2h._time import matching_sessions, time_refs


def _people(*names):
    d = SpeakerDirectory()
    for n in names:
        d.add(n)
    return d


def test_name_variants_and_mentions():
    d = _people("Lin Sen", "Kiki", "Dr. Wu", "Ajie", "Su Qian", "Su Mingche")
    assert name_key("Dr. Wu") == "drwu"
    assert d.lookup("A Jie") == "Ajie" and d.lookup("dr wu") == "Dr. Wu"
    assert d.lookup("Wu") == "Dr. Wu"  # the name after a title identifies the speaker
    assert d.lookup("Su") is None  # shared by Su Qian and Su Mingche: nobody
    assert d.lookup("Qian") == "Su Qian" and d.lookup("Sen") is None  # parts of four letters or more
    assert d.mentions("@Lin Sen Absolutely! @Dr. Wu, is it okay? @Kiki") == ["Lin Sen", "Dr. Wu", "Kiki"]
    assert d.mentions("mail me @ home") == []
    assert d.named_in("What did Dr. Wu tell A Jie about Kiki's pizza?") == ["Dr. Wu", "Ajie", "Kiki"]
    assert d.named_in("How did Su Mingchee reply?") == ["Su Mingche"]  # one letter off in a full name
    assert d.canonical_tag("Dr. Wu") == "spk_drwu"


def test_time_anchors():
    r = time_refs("In Session 1 … on March 1st, in round 3, and in Sessions 7 and 8; also 2024-05-20 and 5 June.")
    assert r.sessions == {1, 7, 8} and r.turns == {2}
    assert set(r.dates) == {(None, 3, 1), (None, 6, 5), (2024, 5, 20)}
    assert time_refs("sessions 2 to 4").sessions == {2, 3, 4}
    assert time_refs("the latest session").relative == {"last"}
    assert not time_refs("How many cats?").any
    sessions = [
        ("session1", 1, dt.date(2024, 3, 1)),
        ("session2", 2, dt.date(2024, 5, 20)),
        ("session5", 5, dt.date(2025, 6, 5)),
    ]
    assert matching_sessions(r, sessions) == {"session1", "session2", "session5"}
    assert matching_sessions(time_refs("on May 20, 2023"), sessions) == set()  # the year must agree when given
    assert matching_sessions(time_refs("in the first session"), sessions) == {"session1"}


def test_query_cleaning_and_sub_queries():
    q = (
        "Based on the 'buffer process' mentioned in the conversation, locate the corresponding image. "
        "Provide the session number and image file name."
    )
    assert search_text(q) == "Based on the 'buffer process' mentioned locate the corresponding image."
    cd = "He said the top note is lemon. Does this contradict the content of the conversation? Answer yes or no."
    assert search_text(cd) == "He said the top note is lemon."
    tr = (
        "Please arrange the following events in chronological order: A. Xia orders dessert; "
        "B. Xia designs a ritual; C. Xia feels empty."
    )
    assert sub_queries(tr) == ["Xia orders dessert", "Xia designs a ritual", "Xia feels empty"]
    assert sub_queries("What is A. Smith's job?") == []


def test_fusion_helpers():
    np.testing.assert_allclose(
        session_prior(np.array([0.9, 0.1, 0.5, 0.4]), ["a", "a", "b", "b"], 1), [0.9, 0.9, 0.5, 0.5]
    )
    np.testing.assert_allclose(
        session_prior(np.array([0.9, 0.1, 0.5, 0.4]), ["a", "a", "b", "b"], 2), [0.5, 0.5, 0.45, 0.45]
    )
    assert _round_robin([[1, 2, 3], [4, 1, 5]]) == [1, 4, 2, 3, 5]
    assert _cap_per_session([0, 1, 2, 3, 4], ["a", "a", "a", "b", "c"], 2, 3) == [0, 1, 3, 2, 4]


def test_claim_sides():
    both = (
        "The dialogue mentions that Ann has already been to the lake, but Bo says, "
        "'This lake is so beautiful!' Is this contradictory?"
    )
    assert claim_sides(both) == ["Ann has already been to the lake", "Bo says, This lake is so beautiful!"]
    scene = (
        "On May 5th, when discussing the red dress, the conversation mentioned that the brand "
        "had not issued any statement. Does this contradict the content of the conversation? Answer yes or no."
    )
    assert claim_sides(scene) == ["On May 5th, when discussing the red dress", "the brand had not issued any statement"]
    new_info = "The dialogue mentions that Bo planned all events, but new information says Bo planned only one."
    assert claim_sides(new_info) == ["Bo planned all events", "Bo planned only one"]
    # one side only (the frame "Xia said that" leaves a single claim), or no frame at all: nothing to split
    assert claim_sides("Xia said that the top note is lemon. Does this contradict the conversation?") == []
    assert claim_sides("Lin never organizes old books. Does this contradict the conversation? Answer yes or no.") == []


def test_chain_expansion_adds_the_best_neighbour_of_the_first_hits():
    from h2hmem.memory.h2h._chain import best_neighbour, expand_chain

    scores = np.array([0.2, 0.9, 0.4, 0.7])
    sessions = ["a", "a", "a", "b"]
    assert best_neighbour(1, scores, sessions) == 2  # 0.4 (next) beats 0.2 (previous)
    assert best_neighbour(2, scores, sessions) == 1 and best_neighbour(0, scores, sessions) == 1
    assert best_neighbour(3, scores, sessions) is None  # alone in its session
    assert best_neighbour(1, np.array([0.5, 0.9, 0.5, 0.0]), sessions) == 0  # a tie: the earlier turn
    # turns 3, 4 in session b; turn 4 scores 0.8 beside the top hit 3 (whose other side, 2, is in a)
    sessions = ["a", "a", "a", "b", "b", "c"]
    scores = np.array([0.6, 0.1, 0.2, 0.9, 0.8, 0.5])
    assert expand_chain([3, 0, 1, 5], scores, sessions, first=1, k=3) == [3, 4, 0]  # a keeps turn 0
    # every session of the plain top-k is kept: turn 4 would push out c (or a), so it makes no room
    assert expand_chain([3, 0, 5, 1], scores, sessions, first=1, k=3) == [3, 0, 5]
    # first 2: hit 0's neighbour is 1 (the only one in a); plain top 5 [3, 0, 1, 5, 2] keeps a, b, c
    assert expand_chain([3, 0, 1, 5, 2], scores, sessions, first=2, k=5) == [3, 4, 0, 1, 5]
    # a neighbour already ranked is not repeated; first 0 is the plain top-k
    assert expand_chain([3, 4, 0], scores, sessions, first=1, k=3) == [3, 4, 0]
    assert expand_chain([3, 0, 5, 1], scores, sessions, first=0, k=3) == [3, 0, 5]


def test_rerank_reply_parsing_and_reordering():
    from h2hmem.memory.h2h._rerank import apply_ranking, parse_ranking, rerank_messages

    assert parse_ranking("3, 1, 3 and 17", 15) == [2, 0]  # out of range and repeats dropped
    assert parse_ranking("none of them", 15) == [] and parse_ranking("0", 15) == []
    assert apply_ranking([7, 3, 9, 1], [2, 0]) == [9, 7, 3, 1]
    assert apply_ranking([7, 3, 9, 1], []) == [7, 3, 9, 1]
    user = rerank_messages("Why?", ["a: x", "b: y"])[1].content
    assert user == "Question: Why?\n\nTurns:\n[1] a: x\n[2] b: y\n\nNumbers of the needed turns:"


def test_time_anchors_skip_texts_without_a_digit_or_relative_word(sample_root, monkeypatch):
    """The quick check only skips texts the full parse finds nothing in: on every turn and question of
    the sample the answer is the same with and without it, and most turns skip the parse."""
    import re

    from h2hmem.data import load_dataset
    from h2hmem.memory.h2h import _time

    ds = load_dataset(sample_root)
    turns = [t.text for d in ds.dialogues for s in d.sessions for t in s.turns]
    texts = turns + [q.text for d in ds.dialogues for q in d.questions]
    quick = [time_refs(t) for t in texts]
    skipped = sum(not _time._MAYBE.search(t) for t in turns)
    monkeypatch.setattr(_time, "_MAYBE", re.compile(""))  # matches every text: always the full parse
    assert [time_refs(t) for t in texts] == quick
    assert any(r.any for r in quick) and skipped > len(turns) / 2
    # the relative words alone, without a digit, still reach the full parse
    assert time_refs("What was said in the latest session?").relative == {"last"}
