"""h2h's parts: speaker names, time anchors, query cleaning, fusion helpers (hand-computed)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from h2hmem.memory.h2h._index import session_prior
from h2hmem.memory.h2h._memory import _cap_per_session, _join_continuations, _round_robin
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


def test_continuations_join_the_sentence_before():
    r4, r3, none = time_refs("in Session 4"), time_refs("in Session 3"), time_refs("later")
    joined = _join_continuations(
        [("In Session 4, X broke", r4), ("how was it fixed later?", none), ("In Session 3?", r3)]
    )
    assert [s for s, _ in joined] == ["In Session 4, X broke how was it fixed later?", "In Session 3?"]
    assert joined[0][1].sessions == {4} and joined[1][1].sessions == {3}
    assert _join_continuations([("first, no anchor", none)]) == [("first, no anchor", none)]
