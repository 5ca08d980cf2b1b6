"""Who said what to whom: speaker names, their variants, and @mentions (part of ``h2h``).

Observed human–human chats name people inconsistently: the ``role`` field says ``"Ajie"``, a
question says ``"A Jie"``, a turn writes ``"@Dr. Wu"`` and another just ``"Wu"``. A
:class:`SpeakerDirectory` learns the speakers of a dialogue from the turns it observes and maps
any spelling to one canonical speaker:

- a *key* is the name lowercased with everything but letters and digits removed
  (``"A Jie"`` → ``"ajie"``, ``"Dr. Wu"`` → ``"drwu"``);
- each speaker is known by its full key and, for names of several words, by each word of four
  letters or more and by the last word after a title (``"Dr. Wu"`` → ``"wu"``), unless that part
  is shared by two speakers (then it identifies nobody);
- a mention is ``@`` followed by up to three words; the longest prefix whose key is known wins.

Question text is matched the same way (word n-grams of one to three words, longest first), and
close misspellings of a full key are accepted when ``difflib``'s ratio is at least
:data:`FUZZY_RATIO`.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

FUZZY_RATIO = 0.88
"""Minimum ``difflib.SequenceMatcher`` ratio for a misspelt full name (e.g. one letter off in eight)."""
MIN_PART = 4
"""Shortest single word of a multi-word name that identifies the speaker on its own."""
TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "prof", "teacher", "uncle", "aunt", "grandpa", "grandma"})
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.'’-]*")
_MENTION = re.compile(r"@([A-Za-z0-9][\w.'’-]*(?:\s+[A-Za-z0-9][\w.'’-]*){0,2})")
_NOT_KEY = re.compile(r"[^a-z0-9]")
_POSSESSIVE = re.compile(r"['’]s$")


def name_key(name: str) -> str:
    """``"Dr. Wu"`` → ``"drwu"``: lowercase letters and digits only."""
    return _NOT_KEY.sub("", name.lower())


class SpeakerDirectory:
    """Canonical speakers of one dialogue and every key that names one of them."""

    def __init__(self) -> None:
        self.speakers: list[str] = []
        self._full: dict[str, str] = {}
        self._parts: dict[str, set[str]] = {}
        # key → close misspelling's speaker (or None), for the speakers known now: questions repeat
        # their words, and difflib over every name costs more than the rest of a lookup
        self._close: dict[str, str | None] = {}
        # (key, fuzzy) → lookup's answer for the speakers known now: every question of a memory
        # state asks for its n-grams, most of them ("did the", "What") asked before
        self._looked_up: dict[tuple[str, bool], str | None] = {}
        self._fuzzy_lengths = (0.0, -1.0)
        """The range of key lengths n from the shortest full key's lower bound to the longest one's upper
        bound under difflib's real_quick_ratio (2·min(n, m) / (n + m) ≥ FUZZY_RATIO): every length some name
        allows lies inside (lengths in between that no name allows fall through to the per-name test), so a
        longer or shorter n-gram is no misspelling."""
        self._letters: dict[str, tuple[tuple[str, int], ...]] = {}
        """Letter counts of each full key (difflib's quick_ratio bound below)."""

    def add(self, speaker: str) -> None:
        """Learn a speaker (``role`` as written); repeated calls are no-ops."""
        key = name_key(speaker)
        if not key or key in self._full:
            return
        self.speakers.append(speaker)
        self._full[key] = speaker
        self._letters[key] = tuple(Counter(key).items())
        lengths = [len(k) for k in self._full]
        # n ≥ m: 2m ≥ r(n + m) ⇔ n ≤ m(2 − r)/r; n < m: 2n ≥ r(n + m) ⇔ n ≥ m·r/(2 − r)
        r = FUZZY_RATIO
        # (a hair wider than exact: the per-name test below decides; this only skips the loop)
        self._fuzzy_lengths = (min(lengths) * r / (2 - r) - 1e-9, max(lengths) * (2 - r) / r + 1e-9)
        self._close.clear()
        self._looked_up.clear()
        words = [name_key(w) for w in speaker.split()]
        words = [w for w in words if w]
        if len(words) > 1:
            for i, w in enumerate(words):
                titled = i == len(words) - 1 and words[0] in TITLES
                if len(w) >= MIN_PART or titled:
                    self._parts.setdefault(w, set()).add(speaker)

    def lookup(self, text: str, *, fuzzy: bool = False) -> str | None:
        """The speaker ``text`` names (full key, unique part, or a close misspelling), or None."""
        return self._lookup_key(name_key(text), fuzzy)

    def _lookup_key(self, key: str, fuzzy: bool) -> str | None:
        """:meth:`lookup` of a text whose key is ``key`` (the answer depends on the key alone)."""
        memo = (key, fuzzy)
        if memo in self._looked_up:
            return self._looked_up[memo]
        who = self._lookup(key, fuzzy)
        self._looked_up[memo] = who
        return who

    def _lookup(self, key: str, fuzzy: bool) -> str | None:
        if not key:
            return None
        if key in self._full:
            return self._full[key]
        owners = self._parts.get(key)
        if owners and len(owners) == 1:
            return next(iter(owners))
        low, high = self._fuzzy_lengths
        if fuzzy and len(key) >= MIN_PART and low <= len(key) <= high:
            if key not in self._close:
                # a name whose length alone rules out the ratio (difflib's real_quick_ratio bound,
                # 2·min/sum), or whose letters do (its quick_ratio bound, 2·shared letters/sum), cannot
                # match: most n-grams of a question are skipped without building a SequenceMatcher
                n = len(key)
                names = []
                for k, letters in self._letters.items():
                    m = len(k)
                    if 2 * min(n, m) < FUZZY_RATIO * (n + m):
                        continue
                    shared = sum(min(count, key.count(ch)) for ch, count in letters)
                    if 2.0 * shared / (n + m) >= FUZZY_RATIO:
                        names.append(k)
                close = difflib.get_close_matches(key, names, n=1, cutoff=FUZZY_RATIO) if names else []
                self._close[key] = self._full[close[0]] if close else None
            return self._close[key]
        return None

    def mentions(self, text: str) -> list[str]:
        """Speakers addressed with ``@`` in ``text``, in order, without repeats."""
        out: list[str] = []
        for m in _MENTION.finditer(text):
            words = m.group(1).split()
            for n in range(len(words), 0, -1):
                who = self.lookup(" ".join(words[:n]).rstrip(".,!?;:"))
                if who is not None:
                    if who not in out:
                        out.append(who)
                    break
        return out

    def named_in(self, text: str) -> list[str]:
        """Speakers named anywhere in ``text`` (questions): n-grams of 3, 2, 1 words, longest first.

        An n-gram's key is its words' keys joined (``name_key`` keeps only ASCII letters and digits
        of the lowercased text, so the spaces between words never count), each word keyed once."""
        words = [_POSSESSIVE.sub("", w.rstrip(".,!?;:")) for w in _WORD.findall(text)]
        keys = [name_key(w) for w in words]
        out: list[str] = []
        used = [False] * len(words)
        for n in (3, 2, 1):
            for i in range(len(words) - n + 1):
                if any(used[i : i + n]):
                    continue
                who = self._lookup_key("".join(keys[i : i + n]), n > 1 or len(words[i]) >= 6)
                if who is not None:
                    used[i : i + n] = [True] * n
                    if who not in out:
                        out.append(who)
        return out

    def canonical_tag(self, speaker: str) -> str:
        """A single token for BM25 (``"spk_drwu"``), so name variants in a query hit the same word."""
        return "spk_" + name_key(speaker)
