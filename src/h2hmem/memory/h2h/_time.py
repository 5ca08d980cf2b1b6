"""When: the session, date and turn a question points at (part of ``h2h``).

Questions about observed chats anchor themselves in time in a few recurring ways, all read from
the question text alone (never from the question's home session):

- a session number: ``"in Session 6"``, ``"Sessions 7 and 8"``, ``"session12"``;
- a calendar date, with or without a year: ``"on November 22"``, ``"March 1st"``, ``"2024-05-20"``,
  ``"20 May"`` — matched against the observed sessions' dates (month and day; the year too when
  given);
- a relative session: ``"the first session"``, ``"the last / latest / most recent session"``;
- a turn number inside a session: ``"round 3"``, ``"turn 9"`` (1-based, as people count).

:func:`time_refs` returns what was found; the retriever turns it into boosts.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

MONTHS = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
MONTHS.update({m[:3]: n for m, n in list(MONTHS.items())})
MONTHS["sept"] = 9
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b{_YEAR}", re.I)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_SESSION_LIST = re.compile(r"\bsessions?\s*(\d+(?:\s*(?:,|and|&|to|-|–)\s*(?:session\s*)?\d+)*)", re.I)
_NUMBER = re.compile(r"\d+")
_TURN = re.compile(r"\b(?:round|turn)\s+(\d{1,3})\b", re.I)
_FIRST = re.compile(r"\b(?:the\s+)?first\s+(?:session|conversation|chat)\b", re.I)
_LAST = re.compile(r"\b(?:the\s+)?(?:last|latest|most\s+recent|final)\s+(?:session|conversation|chat)\b", re.I)
_MAYBE = re.compile(r"\d|first|last|latest|recent|final", re.I)
"""What every anchor above needs (a digit, or a relative word): a text without it has none. Most
turns of a conversation have none, and every turn is read once at ``observe``."""


@dataclass
class TimeRefs:
    """Time anchors of one question."""

    sessions: set[int] = field(default_factory=set)
    """Session numbers named outright."""
    dates: list[tuple[int | None, int, int]] = field(default_factory=list)
    """``(year or None, month, day)`` triples."""
    relative: set[str] = field(default_factory=set)
    """``"first"`` and/or ``"last"``."""
    turns: set[int] = field(default_factory=set)
    """0-based turn indices (``"round 3"`` → 2)."""

    @property
    def any(self) -> bool:
        return bool(self.sessions or self.dates or self.relative)


def _valid(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31


def time_refs(text: str) -> TimeRefs:
    """Parse the anchors listed in this module's docstring.

    Example: ``"In Session 1 … on March 1st, in round 3"`` → sessions {1}, dates [(None, 3, 1)], turns {2}.
    """
    refs = TimeRefs()
    if not _MAYBE.search(text):
        return refs
    for m in _SESSION_LIST.finditer(text):
        nums = [int(n) for n in _NUMBER.findall(m.group(1))]
        span = re.search(r"(\d+)\s*(?:to|-|–)\s*(?:session\s*)?(\d+)", m.group(1), re.I)
        if span and int(span.group(2)) - int(span.group(1)) <= 30:
            nums += list(range(int(span.group(1)), int(span.group(2)) + 1))
        refs.sessions.update(n for n in nums if n > 0)
    for m in _ISO.finditer(text):
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if _valid(mo, d):
            refs.dates.append((y, mo, d))
    for m in _MONTH_DAY.finditer(text):
        mo, d = MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2))
        if _valid(mo, d):
            refs.dates.append((int(m.group(3)) if m.group(3) else None, mo, d))
    for m in _DAY_MONTH.finditer(text):
        mo, d = MONTHS[m.group(2).lower().rstrip(".")], int(m.group(1))
        if _valid(mo, d):
            refs.dates.append((int(m.group(3)) if m.group(3) else None, mo, d))
    if _FIRST.search(text):
        refs.relative.add("first")
    if _LAST.search(text):
        refs.relative.add("last")
    refs.turns.update(int(m.group(1)) - 1 for m in _TURN.finditer(text) if int(m.group(1)) > 0)
    return refs


def matching_sessions(refs: TimeRefs, sessions: list[tuple[str, int, dt.date | None]]) -> set[str]:
    """Names of the observed sessions the anchors point at.

    Args:
        refs: from :func:`time_refs`.
        sessions: ``(name, number, date)`` of the observed sessions, in time order.
    """
    out: set[str] = set()
    for name, number, date in sessions:
        if number in refs.sessions:
            out.add(name)
        if date is not None:
            for y, mo, d in refs.dates:
                if date.month == mo and date.day == d and (y is None or y == date.year):
                    out.add(name)
    if sessions and "first" in refs.relative:
        out.add(sessions[0][0])
    if sessions and "last" in refs.relative:
        out.add(sessions[-1][0])
    return out
