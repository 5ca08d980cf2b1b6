"""Turn-level evidence metrics: recall@k, precision@k, nDCG@k and MRR against supporting-turn labels.

Session hit@k saturates on H2HMem (the gold session is the question's own session for 98% of the
questions); the labels (:mod:`._labels`) name the turns that support each gold answer, so
retrieval can be measured where it matters. Definitions, for one question with gold turn set
``G`` (``(session, turn)`` pairs) and the method's ranked evidence reduced to its turn units
(whole-session units are skipped, repeated turns keep their first rank), ``R = r_1, r_2, …``:

- ``turn_recall@k = |G ∩ R[:k]| / |G|``;
- ``turn_precision@k = |G ∩ R[:k]| / k`` (divided by k even when fewer than k units were
  returned: returning less is not rewarded);
- ``turn_ndcg@k = DCG@k / IDCG@k`` with binary relevance, ``DCG@k = Σ_{i ≤ k, r_i ∈ G} 1/log2(i+1)``
  and ``IDCG@k = Σ_{i ≤ min(k, |G|)} 1/log2(i+1)``;
- ``turn_mrr = 1 / rank of the first r_i ∈ G`` over the whole list (0 when none).

Exclusions (counted by reason, never scored 0): no label for the question (``no_label``), a label
whose status is not ``labelled`` (``no_support_expected``, ``evidence_missing``, ``unclear``) or
that lists no turns (``no_label_turns``). A failed answer scores 0. A method that reports no turn
units at all (whole-context methods report sessions) makes the metric "n/a".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..memory import Evidence
from ..records import Prediction
from ._evidence import fill_scores, k_label
from ._labels import EvidenceLabel

TURN_KS: tuple[int, ...] = (1, 3, 5, 10)
"""Cut-offs of the turn metrics."""
TURN_METRICS: tuple[str, ...] = ("turn_recall", "turn_precision", "turn_ndcg")
EXCLUDED_NO_LABEL = "no_label"
EXCLUDED_NO_TURNS = "no_label_turns"


def turn_metric_names(ks: Sequence[int] = TURN_KS) -> list[str]:
    """``["turn_recall@1", "turn_precision@1", "turn_ndcg@1", …, "turn_mrr"]``."""
    return [f"{m}@{k_label(k)}" for k in ks for m in TURN_METRICS] + ["turn_mrr"]


def ranked_turns(evidence: Sequence[Evidence]) -> list[tuple[str, int]]:
    """The turn units of ``evidence`` as ``(session, turn)``, in rank order, first occurrence kept."""
    return list(dict.fromkeys((e.session, e.turn) for e in evidence if e.turn is not None))


def _dcg(hits: Iterable[bool]) -> float:
    return sum(1.0 / math.log2(i + 2) for i, h in enumerate(hits) if h)


def turn_scores(
    ranked: Sequence[tuple[str, int]], gold: Iterable[tuple[str, int]], ks: Sequence[int] = TURN_KS
) -> dict[str, float]:
    """Turn metrics of one ranking, keyed as :func:`turn_metric_names`.

    Example: ranked [a, b, c, d], gold {b, d}: recall@1 0, precision@1 0, nDCG@1 0; recall@3 0.5,
    precision@3 1/3, nDCG@3 = (1/log2 3) / (1 + 1/log2 3) = 0.3869; MRR 0.5.

    Raises:
        ValueError: ``gold`` is empty or a ``k`` is not positive.
    """
    g = set(gold)
    if not g:
        raise ValueError("turn metrics need at least one gold turn")
    rel = [r in g for r in ranked]
    out: dict[str, float] = {}
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        found = sum(rel[:k])
        out[f"turn_recall@{k}"] = found / len(g)
        out[f"turn_precision@{k}"] = found / k
        out[f"turn_ndcg@{k}"] = _dcg(rel[:k]) / _dcg([True] * min(k, len(g)))
    first = next((i for i, r in enumerate(rel) if r), None)
    out["turn_mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def score_turn_evidence(
    predictions: Sequence[Prediction], labels: Mapping[str, EvidenceLabel], ks: Sequence[int] = TURN_KS
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-question turn-metric records and a status summary.

    Returns:
        ``(records, info)``. Each record: ``question_id, split, task_type, main_category,
        difficulty, dialogue, failed, excluded`` (None or a reason), ``gold_turns``
        (``["session3/4", …]``), ``retrieved_turns`` (first 10, same form), ``n_turns`` and the
        metric keys (None when excluded or n/a). ``info``: ``{"status": "ok" | "n/a", "reason",
        "excluded": {reason: count}, "labelled": n scored}``.
    """
    names = turn_metric_names(ks)
    reports = any(e.turn is not None for p in predictions for e in p.evidence)
    excluded: dict[str, int] = {}
    records: list[dict[str, Any]] = []
    for p in predictions:
        label = labels.get(p.question_id)
        reason = None
        if label is None:
            reason = EXCLUDED_NO_LABEL
        elif label.status != "labelled":
            reason = label.status
        elif not label.turn_keys:
            reason = EXCLUDED_NO_TURNS
        ranked = ranked_turns(p.evidence)
        rec: dict[str, Any] = {
            "question_id": p.question_id,
            "split": p.split,
            "task_type": p.task_type,
            "main_category": p.main_category,
            "difficulty": p.difficulty,
            "dialogue": p.dialogue,
            "failed": p.failed,
            "excluded": reason,
            "gold_turns": [f"{s}/{t}" for s, t in label.turn_keys] if label is not None else None,
            "retrieved_turns": [f"{s}/{t}" for s, t in ranked[:10]],
            "n_turns": len(ranked),
        }
        fill_scores(
            rec,
            names,
            reason=reason,
            reports=reports,
            failed=p.failed,
            excluded=excluded,
            # called only when not excluded, i.e. with a label
            scores=partial(turn_scores, ranked, label.turn_keys if label is not None else [], ks),
        )
        records.append(rec)
    info = {
        "status": "ok" if reports else "n/a",
        "reason": None if reports else "the method reports no turn-level evidence (whole sessions only, or none)",
        "excluded": excluded,
        "labelled": sum(1 for r in records if r["excluded"] is None),
    }
    return records, info
