"""How a session becomes a product's input, and how a product's memory is mapped back to turns.

Every product gets the same rendering of a turn: the shared line
``[2024-03-20] Kiki: text [Image 1.png in session3: caption]`` (the conversation's own date, the
speaker's real name, the image as its caption inline). The turn's place in the dialogue travels in
the product's metadata where it keeps metadata (:func:`turn_metadata`), or in the record's own name
(:func:`batch_name`) where it does not, so a retrieved memory is traced back to its turns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...data import Session
from .._protocol import CaptionLookup, Evidence
from .._render import render_turn

SESSION_KEY = "h2hmem_session"
TURNS_KEY = "h2hmem_turns"
DATE_KEY = "h2hmem_date"


@dataclass(frozen=True)
class TurnRecord:
    """One turn as a product sees it."""

    session: str
    """``"session3"``."""
    turn: int
    """The turn's index in its session."""
    speaker: str
    """The speaker's name as the dataset writes it (``role``)."""
    date: str
    """The session's ISO date, else its raw date as written, else ``"?"`` (never the wall clock)."""
    line: str
    """The rendered turn: ``"[2024-03-20] Kiki: text [Image 1.png in session3: caption]"``."""
    text: str
    """The turn without the date prefix: ``"Kiki: text [Image …: caption]"``."""


def session_date(session: Session) -> str:
    """The session's ISO date, else its raw date, else ``"?"``."""
    return session.date.isoformat() if session.date else (session.raw_date or "?")


def session_datetime(session: Session) -> dt.datetime | None:
    """Noon UTC of the session's date (products with a time field want a datetime), or None."""
    if session.date is None:
        return None
    return dt.datetime.combine(session.date, dt.time(12), tzinfo=dt.timezone.utc)


def session_records(session: Session, captions: CaptionLookup) -> list[TurnRecord]:
    """The session's turns in order, rendered with date, speaker and image caption; an absent
    session gives ``[]``."""
    if session.absent:
        return []
    date = session_date(session)
    return [
        TurnRecord(
            session=session.name,
            turn=t.index,
            speaker=t.speaker,
            date=date,
            line=render_turn(session, t, captions),
            text=render_turn(session, t, captions, with_date=False),
        )
        for t in session.turns
    ]


def batches(records: Sequence[TurnRecord], size: int) -> Iterator[list[TurnRecord]]:
    """``records`` in consecutive groups of ``size`` (the last may be shorter).

    Raises:
        ValueError: ``size`` < 1.
    """
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for i in range(0, len(records), size):
        yield list(records[i : i + size])


def turn_metadata(batch: Sequence[TurnRecord]) -> dict[str, str]:
    """Metadata naming the batch's turns: ``{"h2hmem_session": "session3", "h2hmem_turns": "4,5",
    "h2hmem_date": "2024-03-20"}`` (strings only: every product's metadata store keeps them)."""
    return {
        SESSION_KEY: batch[0].session,
        TURNS_KEY: ",".join(str(r.turn) for r in batch),
        DATE_KEY: batch[0].date,
    }


def batch_name(batch: Sequence[TurnRecord]) -> str:
    """A name carrying the batch's turns, for products that keep a name but no metadata:
    ``"session3/t4-5"``."""
    first, last = batch[0].turn, batch[-1].turn
    return f"{batch[0].session}/t{first}" + (f"-{last}" if last != first else "")


def parse_batch_name(name: str) -> tuple[str, list[int]] | None:
    """Inverse of :func:`batch_name`: ``("session3", [4, 5])``, or None for another name."""
    session, sep, turns = name.partition("/t")
    if not sep or not session.startswith("session"):
        return None
    first, _, last = turns.partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
        return None
    return session, list(range(int(first), int(last or first) + 1))


def metadata_turns(metadata: Mapping[str, Any] | None) -> tuple[str, list[int]] | None:
    """The (session, turns) a memory's metadata names (:func:`turn_metadata`), or None."""
    if not metadata or SESSION_KEY not in metadata:
        return None
    raw = str(metadata.get(TURNS_KEY, ""))
    return str(metadata[SESSION_KEY]), [int(t) for t in raw.split(",") if t.strip().isdigit()]


def evidence_of(sources: Iterable[tuple[tuple[str, list[int]] | None, float | None]]) -> list[Evidence]:
    """Ranked evidence from ranked memories' sources: each memory's turns in order, a turn listed
    once (at its best rank), a memory with no known source skipped.

    ``sources``: per retrieved memory, best first, its ``(session, turns)`` (or None) and its score.
    A source with no turns names the whole session.
    """
    out: list[Evidence] = []
    seen: set[tuple[str, int | None]] = set()
    for source, score in sources:
        if source is None:
            continue
        session, turns = source
        units: list[int | None] = list(turns) if turns else [None]
        for turn in units:
            if (session, turn) in seen:
                continue
            seen.add((session, turn))
            out.append(Evidence(session=session, turn=turn, score=None if score is None else round(score, 6)))
    return out
