"""Evidence hit@k and recall@k: did the memory units a method used come from the gold sessions?

Definition (``docs/metric-definitions.md`` §4, beyond the official metrics): take the method's
evidence list (ranked, as :class:`~h2hmem.memory.Evidence` units — turns or whole sessions), keep
its first ``k`` units, and look at the distinct sessions they come from:

- hit@k = 1 if any gold session (``Question.answer_sessions``) is among them, else 0;
- recall@k = |gold sessions among them| / |gold sessions|.

``k`` counts evidence units (the retriever's top-k, paper default 5), not sessions; ``"all"`` uses
the whole list. Questions of the ``session0`` pool name no gold session and are excluded (and
counted); so are questions whose gold sessions are all absent from the loaded data (a partial
download: no method could retrieve them), with their own reason; gold sessions that are absent
while others are present are left out of the gold set. A failed answer scores 0 (spec §3); a
method that never reports evidence is "n/a". Turn-level metrics against supporting-turn labels
are in :mod:`._turn_evidence`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..memory import Evidence
from ..records import Prediction

EVIDENCE_KS: tuple[int | None, ...] = (1, 3, 5, 10, None)
"""Cut-offs reported; ``None`` means all evidence units ("all")."""

EXCLUDED_NO_GOLD = "no_gold_session"
"""Exclusion reason: a ``session0`` question (or one whose ``answer_session`` names no session)."""
EXCLUDED_GOLD_UNKNOWN = "gold_unknown"
"""Exclusion reason: neither the dataset nor the prediction record gives the gold sessions."""
EXCLUDED_GOLD_ABSENT = "gold_session_absent"
"""Exclusion reason: every gold session is absent from the loaded data (no ``session.json``)."""


def k_label(k: int | None) -> str:
    """``1`` → ``"1"``, ``None`` → ``"all"``."""
    return "all" if k is None else str(k)


def fill_scores(
    rec: dict[str, Any],
    names: Sequence[str],
    *,
    reason: str | None,
    reports: bool,
    failed: bool,
    excluded: dict[str, int],
    scores: Callable[[], Mapping[str, float]],
) -> None:
    """Put one question's metric values into ``rec``: None when it is excluded (counted in ``excluded``
    by ``reason``) or the method reports no evidence of this kind; 0.0 for a failed answer; else ``scores()``."""
    if reason is not None:
        excluded[reason] = excluded.get(reason, 0) + 1
        rec.update(dict.fromkeys(names))
    elif not reports:
        rec.update(dict.fromkeys(names))
    elif failed:
        rec.update(dict.fromkeys(names, 0.0))
    else:
        rec.update(scores())


def evidence_metric_names(ks: Sequence[int | None] = EVIDENCE_KS) -> list[str]:
    """Metric keys, e.g. ``["hit@1", "recall@1", …, "hit@all", "recall@all"]``."""
    return [f"{m}@{k_label(k)}" for k in ks for m in ("hit", "recall")]


def ranked_sessions(evidence: Sequence[Evidence], k: int | None = None) -> list[str]:
    """Distinct sessions of the first ``k`` evidence units (all for ``None``), in rank order."""
    units = evidence if k is None else evidence[:k]
    return list(dict.fromkeys(e.session for e in units))


def evidence_scores(
    evidence: Sequence[Evidence], gold_sessions: Iterable[str], ks: Sequence[int | None] = EVIDENCE_KS
) -> dict[str, float]:
    """hit@k and recall@k of one answer, each in [0, 1], keyed as :func:`evidence_metric_names`.

    Example: evidence sessions [s2, s2, s5, s1] (ranked), gold {s1, s5} → hit@1 0, recall@1 0;
    hit@3 1, recall@3 0.5; hit@all 1, recall@all 1.

    Raises:
        ValueError: ``gold_sessions`` is empty (such questions are excluded, not scored) or a
            ``k`` is not positive.
    """
    gold = set(gold_sessions)
    if not gold:
        raise ValueError("evidence recall needs at least one gold session")
    out: dict[str, float] = {}
    for k in ks:
        if k is not None and k < 1:
            raise ValueError(f"k must be positive, got {k}")
        found = len(gold.intersection(ranked_sessions(evidence, k)))
        out[f"hit@{k_label(k)}"] = float(found > 0)
        out[f"recall@{k_label(k)}"] = found / len(gold)
    return out


def score_evidence(
    predictions: Sequence[Prediction],
    gold: Mapping[str, Sequence[str]] | None = None,
    ks: Sequence[int | None] = EVIDENCE_KS,
    *,
    absent: Mapping[str, set[str]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-question evidence records and a status summary.

    Args:
        predictions: the run's prediction records.
        gold: question id → gold session folder names (from the dataset; preferred). Without it,
            :attr:`~h2hmem.records.Prediction.answer_sessions` (copied by the runner) is used.
        ks: cut-offs.
        absent: ``"<split>/<dialogue>"`` → names of its sessions absent from the loaded data
            (from the dataset); None when unknown (gold read from the predictions).

    Returns:
        ``(records, info)``. Each record: ``question_id, split, task_type, main_category,
        difficulty, dialogue, failed, excluded`` (None or a reason), ``gold_sessions``,
        ``retrieved_sessions`` (distinct, rank order), ``n_evidence`` and the metric keys
        (None when excluded or when the method reports no evidence). ``info``:
        ``{"status": "ok" | "n/a", "reason", "excluded": {reason: count}, "gold_source"}``.
    """
    names = evidence_metric_names(ks)
    reports = any(p.evidence for p in predictions)
    excluded: dict[str, int] = {}
    records: list[dict[str, Any]] = []
    for p in predictions:
        if gold is not None and p.question_id in gold:
            gold_sessions: list[str] | None = list(gold[p.question_id])
        else:
            gold_sessions = p.answer_sessions  # copied by the runner; None when the record lacks it
        reason = None
        if gold_sessions is not None:
            # "session0" holds no dialogue: the public session0 pool names itself, not where the answer
            # is; a session0 question whose gold names real sessions (the synthetic data) is scored
            gold_sessions = [s for s in gold_sessions if s != "session0"]
        if gold_sessions is None:
            reason = EXCLUDED_NO_GOLD if p.session == "session0" else EXCLUDED_GOLD_UNKNOWN
        elif not gold_sessions:
            reason = EXCLUDED_NO_GOLD
        elif absent is not None:
            gone = absent.get(f"{p.split}/{p.dialogue}", set())
            gold_sessions = [s for s in gold_sessions if s not in gone]
            if not gold_sessions:
                reason = EXCLUDED_GOLD_ABSENT
        rec: dict[str, Any] = {
            "question_id": p.question_id,
            "split": p.split,
            "task_type": p.task_type,
            "main_category": p.main_category,
            "difficulty": p.difficulty,
            "dialogue": p.dialogue,
            "failed": p.failed,
            "excluded": reason,
            "gold_sessions": gold_sessions,
            "retrieved_sessions": ranked_sessions(p.evidence),
            "n_evidence": len(p.evidence),
        }
        fill_scores(
            rec,
            names,
            reason=reason,
            reports=reports,
            failed=p.failed,
            excluded=excluded,
            scores=partial(evidence_scores, p.evidence, gold_sessions or [], ks),
        )
        records.append(rec)
    info = {
        "status": "ok" if reports else "n/a",
        "reason": None if reports else "the method reports no evidence units",
        "excluded": excluded,
        "gold_source": "dataset" if gold is not None else "predictions",
    }
    return records, info
