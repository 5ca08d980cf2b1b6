"""The ``evidence`` scorer (session hit@k / recall@k) and the ``turn_evidence`` scorer (turn
recall/precision/nDCG@k and MRR against supporting-turn labels), both of the method's evidence list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records import (
    EvidenceScore,
    EvidenceSection,
    MetricSection,
    Prediction,
    TurnEvidenceScore,
    TurnEvidenceSection,
    prediction_hash,
)
from ._aggregate import aggregate
from ._evidence import EVIDENCE_KS, evidence_metric_names, score_evidence
from ._labels import EvidenceLabels, find_evidence_labels, load_evidence_labels
from ._scorer import Scorer, ScoringContext
from ._turn_evidence import score_turn_evidence, turn_metric_names

TURN_INFO = "turn_evidence.info.json"
"""``scores/`` side file of the turn scorer: the status, exclusions and the labels used."""


def _section(
    section_type: type[MetricSection],
    info: dict[str, Any],
    records: list[dict[str, Any]],
    fields: list[str],
    ctx: ScoringContext,
    *,
    need_included: bool,
) -> MetricSection:
    """The section: ``info`` (status, exclusions…) and the aggregate of the included records
    (None when the status is n/a, or, with ``need_included``, when no record is included)."""
    included = [r for r in records if not r.get("excluded")]
    ok = info.get("status", "ok") == "ok" and (bool(included) or not need_included)
    agg = aggregate(included, fields, n_boot=ctx.n_boot, seed=ctx.seed) if ok else None
    return section_type.model_validate({**info, "fields": fields, "aggregate": agg})


class EvidenceScorer(Scorer):
    """``scores/evidence.jsonl``: did the evidence units come from the gold sessions
    (:func:`~h2hmem.metrics.score_evidence`; ``session0`` questions and absent gold excluded)."""

    name = "evidence"
    record_type = EvidenceScore
    fields = tuple(evidence_metric_names(EVIDENCE_KS))
    section_type = EvidenceSection
    needs_answers = False

    def __init__(self) -> None:
        self._info: dict[str, Any] | None = None

    def score(self, predictions: list[Prediction], context: ScoringContext) -> list[EvidenceScore]:
        records, self._info = score_evidence(predictions, context.gold_sessions, absent=context.absent_sessions)
        return [
            EvidenceScore.model_validate({**r, "prediction_hash": prediction_hash(p)})
            for r, p in zip(records, predictions)
        ]

    def summarize(self, records: list[dict[str, Any]], context: ScoringContext) -> MetricSection:
        info = self._info if self._info is not None else _info_from_records(records)
        return _section(EvidenceSection, info, records, list(self.fields), context, need_included=False)


def _info_from_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The status part of the evidence section, rebuilt from an existing ``evidence.jsonl``."""
    excluded: dict[str, int] = {}
    for r in records:
        if r["excluded"]:
            excluded[r["excluded"]] = excluded.get(r["excluded"], 0) + 1
    ok = any(r["n_evidence"] for r in records)
    return {
        "status": "ok" if ok else "n/a",
        "reason": None if ok else "the method reports no evidence units",
        "excluded": excluded,
        "gold_source": "file",
    }


class TurnEvidenceScorer(Scorer):
    """``scores/turn_evidence.jsonl``: the evidence's turn units against supporting-turn labels
    (:func:`~h2hmem.metrics.score_turn_evidence`). Comes with ``evidence``; applies only when labels
    are given (:attr:`ScoringContext.evidence_labels`), found next to the dataset
    (:func:`~h2hmem.metrics.find_evidence_labels`) or used by an earlier evaluation and still there."""

    name = "turn_evidence"
    record_type = TurnEvidenceScore
    fields = tuple(turn_metric_names())
    section_type = TurnEvidenceSection
    needs_answers = False
    selected_with = ("evidence",)

    def __init__(self) -> None:
        self._info: dict[str, Any] | None = None

    def _labels(self, ctx: ScoringContext) -> EvidenceLabels | None:
        labels = ctx.evidence_labels
        if isinstance(labels, EvidenceLabels):
            return labels
        if labels is not None:
            return load_evidence_labels(labels)
        found = find_evidence_labels(ctx.data_root) if ctx.data_root is not None else None
        info_path = ctx.scores_dir / TURN_INFO
        if found is None and info_path.is_file():
            source = json.loads(info_path.read_text(encoding="utf-8")).get("labels")
            found = Path(source) if source and Path(source).exists() else None
        return load_evidence_labels(found) if found is not None else None

    def score(self, predictions: list[Prediction], context: ScoringContext) -> list[TurnEvidenceScore] | None:
        labels = self._labels(context)
        if labels is None:
            return None
        records, info = score_turn_evidence(predictions, labels.labels)
        info.update(labels=labels.source, labels_meta=labels.meta)
        self._info = info
        context.write_side_file(TURN_INFO, json.dumps(info, ensure_ascii=False, indent=1))
        return [
            TurnEvidenceScore.model_validate({**r, "prediction_hash": prediction_hash(p)})
            for r, p in zip(records, predictions)
        ]

    def summarize(self, records: list[dict[str, Any]], context: ScoringContext) -> MetricSection:
        info = self._info
        info_path = context.scores_dir / TURN_INFO
        if info is None and info_path.is_file():
            info = json.loads(info_path.read_text(encoding="utf-8"))
        info = info or {"status": "ok", "reason": None, "excluded": {}}
        return _section(TurnEvidenceSection, info, records, list(self.fields), context, need_included=True)
