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
