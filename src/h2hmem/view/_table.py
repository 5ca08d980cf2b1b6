"""The question table: filters and sort orders (pure functions over :class:`QuestionRow`).

Filters (all optional, combined with AND; the URL query names):

- ``split``, ``dialogue`` (``"dyadic/dialogue5"``), ``task_type`` (UPR … AR), ``difficulty``: equal;
- ``judge``: one of the five levels (``"0"``, ``"0.25"`` …), or ``"none"`` (not judged);
- ``f1_min`` / ``f1_max``: official F1 within the closed range;
- ``failed``: ``"yes"`` / ``"no"``;
- ``evidence``: ``"hit"`` / ``"miss"`` (a gold session among the first five units or not) or
  ``"n/a"`` (excluded: session0 questions, methods without evidence);
- ``q``: case-insensitive substring of the question, gold or answer.

Sort orders: ``worst`` (default: headline score ascending — judge when judged, else F1, a failed
answer 0 — then F1, then question order), ``best`` (the reverse), ``id`` (question order),
``slow`` (latency descending).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

from ..metrics import question_order
from ._runs import QuestionRow

SORTS = ("worst", "best", "id", "slow")


@dataclass
class Filters:
    split: str = ""
    dialogue: str = ""
    task_type: str = ""
    difficulty: str = ""
    judge: str = ""
    f1_min: float | None = None
    f1_max: float | None = None
    failed: str = ""
    evidence: str = ""
    q: str = ""
    sort: str = "worst"

    def query(self, **change: object) -> str:
        """The URL query of these filters with ``change`` applied (empty values left out)."""
        from urllib.parse import urlencode

        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(change)
        return urlencode(
            {k: v for k, v in values.items() if v not in ("", None) and not (k == "sort" and v == "worst")}
        )


def _judge_ok(row: QuestionRow, want: str) -> bool:
    score = row.judge_score
    if want == "none":
        return score is None
    try:
        level = float(want)
    except ValueError:
        return False
    return score is not None and math.isclose(score, level, abs_tol=1e-9)


def _evidence_ok(row: QuestionRow, want: str) -> bool:
    return {"hit": row.hit is True, "miss": row.hit is False, "n/a": row.hit is None}.get(want, False)


def filter_rows(rows: Iterable[QuestionRow], f: Filters) -> list[QuestionRow]:
    """The rows passing every filter of ``f``, in input order."""
    needle = f.q.strip().lower()
    out = []
    for r in rows:
        p = r.pred
        if (
            (f.split and p.split != f.split)
            or (f.dialogue and f"{p.split}/{p.dialogue}" != f.dialogue)
            or (f.task_type and p.task_type != f.task_type)
            or (f.difficulty and p.difficulty != f.difficulty)
        ):
            continue
        if f.judge and not _judge_ok(r, f.judge):
            continue
        if (f.f1_min is not None and r.f1 < f.f1_min) or (f.f1_max is not None and r.f1 > f.f1_max):
            continue
        if f.failed and (p.failed != (f.failed == "yes")):
            continue
        if f.evidence and not _evidence_ok(r, f.evidence):
            continue
        if needle and needle not in " ".join((p.question, p.gold, p.answer or "", p.error or "")).lower():
            continue
        out.append(r)
    return out


def sort_rows(rows: list[QuestionRow], sort: str) -> list[QuestionRow]:
    """``rows`` in one of :data:`SORTS`.

    Raises:
        ValueError: unknown sort name.
    """
    if sort == "worst":
        return sorted(rows, key=lambda r: r.worst_key)
    if sort == "best":
        return sorted(rows, key=lambda r: (-r.worst_key[0], -r.worst_key[1], r.worst_key[2]))
    if sort == "id":
        return sorted(rows, key=lambda r: question_order(r.id))
    if sort == "slow":
        return sorted(rows, key=lambda r: (-r.pred.latency_s, question_order(r.id)))
    raise ValueError(f"unknown sort {sort!r}; choose from {', '.join(SORTS)}")


def choices(rows: Iterable[QuestionRow]) -> dict[str, list[str]]:
    """Values present in the run for each select filter (splits, dialogues, task types, difficulties)."""
    from ..data import TaskType

    rows = list(rows)
    order = [t.abbr for t in TaskType]
    types = {r.pred.task_type for r in rows}
    diff_order = {"easy": 0, "medium": 1, "hard": 2}
    return {
        "split": sorted({r.pred.split for r in rows}),
        "dialogue": sorted({f"{r.pred.split}/{r.pred.dialogue}" for r in rows}, key=lambda d: question_order(d + "/x")),
        "task_type": [t for t in order if t in types] + sorted(types - set(order)),
        "difficulty": sorted({r.pred.difficulty for r in rows}, key=lambda d: (diff_order.get(d, 9), d)),
    }
