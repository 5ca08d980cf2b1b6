"""Why questions are left unjudged: the judge's per-item errors, counted by reason.

A question is unjudged when the judge gave no valid score for it (``JudgeRecord.score`` is None,
``error`` says why). A failed *answer* is not unjudged: it is scored 0 without a judge call. The
reasons are counted in ``summary.json`` (``metrics.judge.coverage.reasons``) and in the closing
lines of ``h2hmem evaluate``, which exits 1 while any question is unjudged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..records import JudgeCoverage

_REASONS: tuple[tuple[str, str], ...] = (
    ("not valid JSON", "reply not valid JSON"),
    ("holds no list of judgments", "reply holds no list of judgments"),
    ("no judgment for", "item missing from the reply"),
    ("judgments for", "item judged more than once"),
    ("score ", "score not one of the five levels"),
    ("judge call failed", "judge call failed"),
)


def unjudged_reason(error: str | None) -> str:
    """The reason class of one item's judge error, e.g. ``"the reply is not valid JSON"`` →
    ``"reply not valid JSON"``; an error of another kind keeps its first 60 characters."""
    text = (error or "no score").strip()
    for needle, reason in _REASONS:
        if needle in text:
            return reason
    return text[:60]


def unjudged_reasons(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{reason: count}`` over the records without a score (most frequent first)."""
    counts = Counter(unjudged_reason(r.get("error")) for r in records if r.get("score") is None)
    return dict(counts.most_common())


def coverage_line(coverage: JudgeCoverage | None) -> str | None:
    """One closing line when some questions are unjudged, else None, e.g.
    ``"judge: 60 of 60 questions unjudged (reply not valid JSON: 60); …"``."""
    if coverage is None or not coverage.errors:
        return None
    why = ", ".join(f"{k}: {n}" for k, n in coverage.reasons.items()) or "no score"
    return (
        f"judge: {coverage.errors} of {coverage.total} questions unjudged ({why}); see scores/judge.jsonl "
        "(error), then run the same `h2hmem evaluate --metrics judge` again to judge only those"
    )
