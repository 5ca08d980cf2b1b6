"""The turn index of ``h2h``: what each turn is stored as, and how a query scores every turn.

Each observed turn becomes one :class:`TurnRecord` with two texts:

- ``text`` (embedded): ``"<speaker> to <addressees>: <text> [Image <file>: <caption>]"``; for BM25 (``words``) the
  same plus canonical tokens of the speaker and addressees (``spk_drwu``), so BM25 matches any
  spelling of a name (kept out of the embedded text, where they would only add noise);
- ``context``: the turn inside its window (the previous turn, the turn and the ``context_after`` next
  turns, its replies); an image turn's window runs over at least ``image_followers`` turns after it,
  and those turns (up to ``image_followers``, until the next image) carry the image's file name and
  caption in their own context — so a question about what a picture shows reaches both the picture
  and the words said about it.

Scores (all arrays of shape ``(n_turns,)``), with ``w`` the weights of :class:`ScoreWeights`:

    base = w.dense · cos(q, text) + w.context · cos(q, context) + w.bm25 · minmax(BM25(q, words))
         + w.speaker · [turn spoken by, or addressed to, a person the question names]
         + w.time · [turn in a session the question's date / session number points at]
         + w.turn · [also the turn number the question names] + w.backref · [turn text names that session]
         + w.image · [the question speaks of a picture, and the turn shared one or discusses one]
    base += w.neighbour · max(base of the previous turn, base of the next turn)   (same session)
    final = base + w.session · minmax(session prior) + w.recency · (session position in time, 0…1, KR only)

where the session prior of a turn is the mean of the ``session_top`` best ``base`` scores of its
session (answers cluster in one session; a lone stray match elsewhere should not outrank it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._retrieval import BM25Scorer, minmax


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the terms in this module's docstring (defaults: ``docs/h2h-memory.md``)."""

    dense: float = 0.55
    context: float = 0.25
    bm25: float = 0.20
    """0.30 until issue 29: 0.20 was chosen on held-out dialogues (``docs/h2h-memory.md``)."""
    speaker: float = 0.05
    time: float = 0.30
    turn: float = 0.15
    backref: float = 0.10
    image: float = 0.10
    neighbour: float = 0.0
    session: float = 0.25
    recency: float = 0.05
    session_top: int = 3


@dataclass
class TurnRecord:
    """One observed turn."""

    session: str
    session_pos: int
    """Position of its session among the observed sessions (0 = first)."""
    turn: int
    speaker: str
    addressees: list[str]
    text: str
    words: str = ""
    """``text`` plus speaker/addressee tokens, for BM25."""
    context: str = ""
    mentioned_sessions: set[int] = field(default_factory=set)
    """Session numbers its text names ("as in Session 4")."""
    has_image: bool = False
    about_image: bool = False
    """The turn shared an image or is one of the turns after it that discuss it."""
    line: str = ""
    """How the answer prompt shows it: ``[date] speaker: text [Image …]``."""


class TurnColumns:
    """The turns' fields as arrays, built once per memory state (every question of the state
    reads them; building them per question was a Python loop over every turn per boost)."""

    def __init__(self, turns: list[TurnRecord]):
        self.sessions: list[str] = [t.session for t in turns]
        """Session name per turn, shape ``(n,)``."""
        self.turn: np.ndarray = np.array([t.turn for t in turns], np.int64)
        self.session_pos: np.ndarray = np.array([t.session_pos for t in turns], np.float64)
        self.about_image: np.ndarray = np.array([t.about_image for t in turns], np.float64)
        self._session_of: dict[str, np.ndarray] = positions_by_session(self.sessions)
        self.groups: list[np.ndarray] = list(self._session_of.values())
        """Turn positions of each session, sessions in order of first appearance."""
        self._people: dict[str, np.ndarray] = {}
        for i, t in enumerate(turns):
            for who in {t.speaker, *t.addressees}:
                self._people.setdefault(who, np.zeros(len(turns), bool))[i] = True
        self._mentions: dict[int, np.ndarray] = {}
        for i, t in enumerate(turns):
            for number in t.mentioned_sessions:
                self._mentions.setdefault(number, np.zeros(len(turns), bool))[i] = True
        self.n = len(turns)

    def involving(self, people: list[str]) -> np.ndarray:
        """1.0 where the turn is spoken by, or addressed to, one of ``people``; shape ``(n,)``."""
        return self._any(self._people, people)

    def in_sessions(self, names: set[str]) -> np.ndarray:
        """1.0 where the turn is in one of the sessions ``names``; shape ``(n,)``."""
        out = np.zeros(self.n, np.float64)
        for s in names:
            ix = self._session_of.get(s)
            if ix is not None:
                out[ix] = 1.0
        return out

    def mentioning(self, numbers: set[int]) -> np.ndarray:
        """1.0 where the turn's text names one of the session ``numbers``; shape ``(n,)``."""
        return self._any(self._mentions, numbers)

    def _any(self, masks: Mapping[Any, np.ndarray], keys: Iterable[Any]) -> np.ndarray:
        """1.0 where any of the masks of ``keys`` is set (a key without a mask sets nothing)."""
        out = np.zeros(self.n, bool)
        for key in keys:
            mask = masks.get(key)
            if mask is not None:
                out |= mask
        return out.astype(np.float64)


class TurnIndex:
    """Texts, vectors and a BM25 index over the turns of one dialogue (grown session by session)."""

    def __init__(self) -> None:
        self.turns: list[TurnRecord] = []
        self._text_vecs: list[np.ndarray] = []
        self._ctx_vecs: list[np.ndarray] = []
        self._bm25: BM25Scorer | None = None
        self._stacked: tuple[np.ndarray, np.ndarray] | None = None
        self._columns: TurnColumns | None = None

    def __len__(self) -> int:
        return len(self.turns)

    def add(self, records: list[TurnRecord], text_vecs: np.ndarray, ctx_vecs: np.ndarray) -> None:
        """Append one session's records with their unit vectors, shapes ``(len(records), dim)``."""
        if len(records) != len(text_vecs) or len(records) != len(ctx_vecs):
            raise ValueError("h2h: one text and one context vector per turn record")
        self.turns.extend(records)
        self._text_vecs.extend(np.asarray(text_vecs, np.float32))
        self._ctx_vecs.extend(np.asarray(ctx_vecs, np.float32))
        self._bm25 = None
        self._stacked = None
        self._columns = None

    def columns(self) -> TurnColumns:
        """The turns' fields as arrays (rebuilt after :meth:`add`)."""
        if self._columns is None:
            self._columns = TurnColumns(self.turns)
        return self._columns

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        if self._stacked is None:
            self._stacked = (np.vstack(self._text_vecs), np.vstack(self._ctx_vecs))
        return self._stacked

    def bm25(self, query: str) -> np.ndarray:
        """Min-max normalised BM25 of ``query`` against every turn's ``words``."""
        if self._bm25 is None:
            self._bm25 = BM25Scorer([t.words or t.text for t in self.turns])
        return minmax(self._bm25.scores(query))


def session_prior(base: np.ndarray, sessions: list[str], top: int) -> np.ndarray:
    """Per turn, the mean of the ``top`` best ``base`` scores of its session.

    Example: base [0.9, 0.1, 0.5, 0.4], sessions [a, a, b, b], top 1 → [0.9, 0.9, 0.5, 0.5].
    """
    return grouped_prior(base, list(positions_by_session(sessions).values()), top)


def positions_by_session(sessions: list[str]) -> dict[str, np.ndarray]:
    """Session name → positions of its turns, sessions in order of first appearance.

    Example: [a, a, b, a] → {a: [0, 1, 3], b: [2]}.
    """
    first: dict[str, list[int]] = {}
    for i, s in enumerate(sessions):
        first.setdefault(s, []).append(i)
    return {s: np.array(ix, np.int64) for s, ix in first.items()}


def grouped_prior(base: np.ndarray, groups: list[np.ndarray], top: int) -> np.ndarray:
    """:func:`session_prior` with each session's turn positions given (``TurnColumns.groups``)."""
    out = np.zeros_like(base, dtype=np.float64)
    for sel in groups:
        best = np.sort(base[sel])[::-1][: max(1, top)]
        out[sel] = best.mean()
    return out


def neighbour_max(base: np.ndarray, sessions: list[str]) -> np.ndarray:
    """Per turn, the larger ``base`` of its previous and next turn in the same session (0 at the ends).

    Example: base [0.2, 0.9, 0.4, 0.7], sessions [a, a, a, b] → [0.9, 0.4, 0.9, 0.0].
    """
    prev = np.concatenate([[0.0], base[:-1]])
    nxt = np.concatenate([base[1:], [0.0]])
    same_prev = np.array([i > 0 and sessions[i - 1] == sessions[i] for i in range(len(base))])
    same_next = np.array([i + 1 < len(base) and sessions[i + 1] == sessions[i] for i in range(len(base))])
    return np.maximum(np.where(same_prev, prev, 0.0), np.where(same_next, nxt, 0.0))
