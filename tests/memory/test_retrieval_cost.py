"""Per-question retrieval work, counted: BM25 query words without bm25s's per-call tokenizer set-up,
and h2h's misspelt-name matching without difflib for names whose length or letters rule a match out —
both give exactly what the slower path gave."""

from __future__ import annotations

import difflib
import random
import string

import bm25s

from h2hmem.memory._retrieval import BM25Scorer, query_words
from h2hmem.memory.h2h._people import FUZZY_RATIO, SpeakerDirectory, name_key

QUERIES = [
    "",
    "What did Kiki say about the dog's bowl in session 3?",
    "The THE the and AND is",  # stopwords only
    "über café naïve 北京 2024-03-20 a1 b 42",
    "it's Dr. O'Neil’s idea — x y z_1 __init__",
    "repeat repeat Repeat",
]


def test_query_words_are_what_bm25s_tokenize_gives():
    for q in QUERIES:
        assert query_words(q) == bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)[0]


def test_bm25_scores_use_the_query_words(monkeypatch):
    docs = ["Kiki fed the dog", "the dog barked at Kiki", "a cat slept"]
    scorer = BM25Scorer(docs)
    calls = []
    real = bm25s.tokenize
    monkeypatch.setattr(bm25s, "tokenize", lambda *a, **k: calls.append(1) or real(*a, **k))
    s = scorer.scores("Where did the DOG bark?")
    assert calls == []  # no tokenizer set-up per query
    # only "dog" is a document word ("bark" ≠ "barked"; "where", "did" are not in any document):
    # once in doc 0 and doc 1, each 3 words after stopwords ("the", "at") → equal scores; doc 2 none
    assert s[2] == 0.0 and s[0] == s[1] > 0.0
    assert list(s) == list(scorer.retriever.get_scores(["dog"]))


def test_misspelt_name_lookup_matches_difflib_over_every_name(monkeypatch):
    rng = random.Random(7)
    speakers = ["Kiki Tanaka", "Dr. Wu", "Alexander Petrov", "Mei", "Bartholomew Okafor", "Jo"]
    d = SpeakerDirectory()
    for s in speakers:
        d.add(s)
    keys = {name_key(s): s for s in speakers}
    probes = [name_key(s) for s in speakers]
    for s in speakers:  # one letter changed, dropped or doubled
        k = name_key(s)
        for _ in range(5):
            i = rng.randrange(len(k))
            probes += [
                k[:i] + rng.choice(string.ascii_lowercase) + k[i + 1 :],
                k[:i] + k[i + 1 :],
                k[:i] + k[i] + k[i:],
            ]
    probes += ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 20))) for _ in range(200)]
    for p in probes:
        if len(p) < 4 or p in keys:
            continue
        best = difflib.get_close_matches(p, list(keys), n=1, cutoff=FUZZY_RATIO)
        assert d.lookup(p, fuzzy=True) == (keys[best[0]] if best else None), p


def test_named_in_skips_difflib_for_ngrams_no_name_can_match(monkeypatch):
    calls = []
    real = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    question = "When did Alexandr Petrov first mention the broken umbrella near the station entrance yesterday?"
    short = SpeakerDirectory()
    short.add("Jo Li")  # key "joli": 4 letters; every fuzzy n-gram here has ≥ 6, and 2·4 < 0.88·(4 + 6)
    assert short.named_in(question) == [] and calls == []
    d = SpeakerDirectory()
    for s in ("Kiki Tanaka", "Alexander Petrov"):
        d.add(s)
    assert d.named_in(question) == ["Alexander Petrov"]  # "alexandrpetrov": one letter off
    # only n-grams within the length bound of "kikitanaka" (10) or "alexanderpetrov" (15), and
    # sharing enough letters with it (difflib's quick_ratio bound), reached difflib
    names = ("kikitanaka", "alexanderpetrov")

    def shared(a: str, b: str) -> int:
        return sum(min(a.count(c), b.count(c)) for c in set(a))

    assert calls and all(
        any(
            2 * min(len(k), len(n)) >= FUZZY_RATIO * (len(k) + len(n))
            and 2 * shared(k, n) >= FUZZY_RATIO * (len(k) + len(n))
            for n in names
        )
        for k in calls
    )
    assert calls == ["alexandrpetrov"]
    # "whendidalexandr" is within the length bound (15 letters) but shares 9 letters with
    # "alexanderpetrov" (a×2, l, e×2, x, n, d, r): 2·9/30 = 0.6 < 0.88; "broken": 2·6 < 0.88·16


def test_named_in_keys_each_word_once(monkeypatch):
    """An n-gram's key is its words' keys joined: ``name_key`` runs once per word of the question, not
    once per n-gram (3 + 2 + 1 passes over the words), and the names found are those of the texts."""
    from h2hmem.memory.h2h import _people

    d = SpeakerDirectory()
    for s in ("Kiki Tanaka", "Dr. Wu", "Alexander Petrov"):
        d.add(s)
    question = "Did Dr. Wu's advice to Alexandr Petrov about the umbrella come before Kiki's trip?"
    words = _people._WORD.findall(question)  # 14 words: 12 + 13 + 14 = 39 n-grams
    calls: list[str] = []
    real = _people.name_key
    monkeypatch.setattr(_people, "name_key", lambda text: calls.append(text) or real(text))
    # 3-grams first: "to Alexandr Petrov" is one letter from "alexanderpetrov" once "to" is counted in
    assert d.named_in(question) == ["Alexander Petrov", "Dr. Wu", "Kiki Tanaka"]
    assert len(calls) == len(words) == 14
    # the key of joined words is the joined keys, as lookup() of the n-gram's text would key it
    for n in (1, 2, 3):
        for i in range(len(words) - n + 1):
            gram = [_people._POSSESSIVE.sub("", w.rstrip(".,!?;:")) for w in words[i : i + n]]
            assert real(" ".join(gram)) == "".join(real(w) for w in gram)


def test_fuzzy_length_window_holds_every_length_some_name_allows():
    """The window of key lengths that may be a misspelling holds every length n for which some full
    key's length m passes difflib's real_quick_ratio bound 2·min(n, m) ≥ r·(n + m), and its ends are
    such lengths (the shortest name's lower end, the longest name's upper end): a key outside it is
    no misspelling of any name, and skipping it skips nothing the per-name test would keep."""
    d = SpeakerDirectory()
    for s in ("Jo Li", "Kiki Tanaka", "Bartholomew Okafor"):  # keys of 4, 10 and 17 letters
        d.add(s)
        low, high = d._fuzzy_lengths
        lengths = [len(k) for k in d._full]
        allowed = [n for n in range(1, 80) if any(2 * min(n, m) >= FUZZY_RATIO * (n + m) for m in lengths)]
        assert all(low <= n <= high for n in allowed), s
        assert min(allowed) - 1 < low and high < max(allowed) + 1, (s, low, high)


def test_a_question_is_searched_for_instructions_once(monkeypatch):
    """``h2h`` cuts a question up to four ways (search text, listed events, a claim's sides, sentences); the
    instruction-phrase search, the costliest step of each, runs once per question text."""
    from h2hmem.memory.h2h import _query

    searched: list[str] = []
    real = _query._INSTRUCTION

    class Counting:
        def sub(self, repl, text):
            searched.append(text)
            return real.sub(repl, text)

    monkeypatch.setattr(_query, "_INSTRUCTION", Counting())
    _query.without_instructions.cache_clear()
    q = (
        "In Session 1, Kiki said the lake was new to her, but Jo says she went there in May. "
        "Does this contradict the conversation? Answer yes or no."
    )
    assert (
        _query.search_text(q) == "In Session 1, Kiki said the lake was new to her, but Jo says she went there in May."
    )
    assert _query.sub_queries(q) == []
    assert _query.sentence_queries(q) == [
        "In Session 1, Kiki said the lake was new to her",
        "Jo says she went there in May.",
    ]
    assert _query.claim_sides(q) == ["In Session 1, Kiki said the lake was new to her", "Jo says she went there in May"]
    assert searched == [q]
    _query.search_text("Based on the dialogue, where did Kiki go?")
    assert len(searched) == 2
