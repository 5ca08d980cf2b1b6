"""One memory unit an answer used (a prediction's ranked ``evidence`` list)."""

from __future__ import annotations

from ._base import Record


class Evidence(Record):
    """One memory unit an answer used: a turn (``turn`` set) or a whole session."""

    session: str
    """Session folder name, e.g. ``"session3"``."""
    turn: int | None = None
    """Turn index in that session, or None when a whole session was used."""
    score: float | None = None
    """Retriever score (cosine, fused score…) when there is one."""
