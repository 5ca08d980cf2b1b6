"""Per-question score lines: ``scores/{lexical,evidence,turn_evidence,judge}.jsonl``.

Every line starts with the question's labels (what :func:`~h2hmem.metrics.aggregate` groups by),
``failed`` (the method's answer failed: scored 0) and the ``prediction_hash`` of the prediction it
scored. Metric keys keep their file spelling (``"hit@1"``, ``"turn_ndcg@5"``); in Python they are
attributes with ``@`` spelt ``_at_`` (``hit_at_1``). Metric values are None when the question is
excluded (``excluded`` names the reason) or the method reports no evidence of that kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from .._atomic import atomic_write_text
from ._base import Record
from ._prediction import QuestionKey
from ._versioned import Versioned, describe_error, error_type

EVIDENCE_METRIC_NAMES: tuple[str, ...] = tuple(
    f"{m}@{k}" for k in ("1", "3", "5", "10", "all") for m in ("hit", "recall")
)
"""The session-evidence metric keys of ``evidence.jsonl`` (cut-offs 1, 3, 5, 10, all)."""
TURN_METRIC_NAMES: tuple[str, ...] = (
    *(f"{m}@{k}" for k in (1, 3, 5, 10) for m in ("turn_recall", "turn_precision", "turn_ndcg")),
    "turn_mrr",
)
"""The turn-evidence metric keys of ``turn_evidence.jsonl``."""


class ScoreKey(Record):
    """The labels every score line starts with."""

    question_id: str
    split: str
    task_type: str
    main_category: str
    difficulty: str
    dialogue: str
    failed: bool = False
    """The method's answer failed: every metric scores 0."""
    prediction_hash: str | None = None
    """:func:`~h2hmem.records.prediction_hash` of the prediction scored (None in files written before it)."""


class LexicalScore(Versioned, ScoreKey):
    """One line of ``scores/lexical.jsonl`` (official definitions, docs/metric-definitions.md §1; each in [0, 1])."""

    KIND = "lexical-score"
    schema_: Literal["h2hmem.lexical-score/1"] = Field("h2hmem.lexical-score/1", alias="schema")
    precision: float
    recall: float
    f1: float
    bleu1: float
    exact_match: float


class _EvidenceScoreBase(Versioned, ScoreKey):
    """One line of ``scores/evidence.jsonl``: session hit@k / recall@k (docs/metric-definitions.md §4)."""

    model_config = ConfigDict(extra="allow")  # other cut-offs (score_evidence(ks=…)) are kept as they are
    KIND = "evidence-score"
    schema_: Literal["h2hmem.evidence-score/1"] = Field("h2hmem.evidence-score/1", alias="schema")
    excluded: str | None = None
    """Why the question is not scored (``no_gold_session``, ``gold_unknown``, ``gold_session_absent``)."""
    gold_sessions: list[str] | None = None
    retrieved_sessions: list[str] = []
    """Distinct sessions of the evidence, in rank order."""
    n_evidence: int = 0


class _TurnEvidenceScoreBase(Versioned, ScoreKey):
    """One line of ``scores/turn_evidence.jsonl``: turn recall/precision/nDCG@k and MRR against labels."""

    model_config = ConfigDict(extra="allow")
    KIND = "turn-evidence-score"
    schema_: Literal["h2hmem.turn-evidence-score/1"] = Field("h2hmem.turn-evidence-score/1", alias="schema")
    excluded: str | None = None
    """``no_label``, ``no_label_turns`` or the label's status when it is not ``labelled``."""
    gold_turns: list[str] | None = None
    """``"session3/4"`` keys of the labelled supporting turns."""
    retrieved_turns: list[str] = []
    """The first 10 turn units of the evidence, same form."""
    n_turns: int = 0


def _metric_fields(names: Sequence[str]) -> dict[str, Any]:
    return {n.replace("@", "_at_"): (float | None, Field(None, alias=n)) for n in names}


EvidenceScore = create_model(
    "EvidenceScore", __base__=_EvidenceScoreBase, __module__=__name__, **_metric_fields(EVIDENCE_METRIC_NAMES)
)
EvidenceScore.__doc__ = _EvidenceScoreBase.__doc__
TurnEvidenceScore = create_model(
    "TurnEvidenceScore", __base__=_TurnEvidenceScoreBase, __module__=__name__, **_metric_fields(TURN_METRIC_NAMES)
)
TurnEvidenceScore.__doc__ = _TurnEvidenceScoreBase.__doc__


class JudgeScore(Versioned, QuestionKey):
    """One question's judgment, one line of ``scores/judge.jsonl``."""

    KIND = "judge-score"
    schema_: Literal["h2hmem.judge-score/1"] = Field("h2hmem.judge-score/1", alias="schema")
    score: float | None
    """One of the judge levels (0 … 1), or None when the judge gave no valid score (see ``error``)."""
    reasoning: str = ""
    failed: bool = False
    """The method's answer failed (no system answer): score 0 without a judge call."""
    error: str | None = None
    """Why the item is unjudged (invalid score after the re-ask, call failure…)."""
    reasked: bool = False
    """The item was asked again on its own (missing, duplicated or invalid the first time)."""
    calls: int = 0
    """Judge calls that concerned this item (a batch call counts for each of its items)."""
    cached: bool = False
    """Every reply behind the score came from the request cache."""
    attempt: int = 0
    """The judging round of this answer: 0 the first time, ``n`` after ``n`` earlier evaluations left it
    unjudged. Sent as the calls' ``attempt`` (part of the request-cache key, never sent to the model), so
    rerunning an evaluation asks the judge again instead of replaying its cached unusable reply."""
    judge_model: str
    mode: str
    preset: str | None = None
    """The judge preset (``paper`` / ``harmonized``); None in records written before presets."""
    options: dict[str, str] = {}
    """Resolved judge option values; a judgment is reused only under equal options."""
    label: str | None = None
    """``"not comparable with published numbers"`` for a ``local:`` judge."""
    input_hash: str
    """SHA-256 of (question, gold, answer): a cached judgment is reused only for the same inputs."""
    prediction_hash: str | None = None
    """:func:`~h2hmem.records.prediction_hash` of the prediction judged (None in files written before it
    existed): a judgment whose prediction changed since is dropped, never reported as current."""

    @property
    def judged(self) -> bool:
        return self.score is not None


ScoreRecord = LexicalScore | EvidenceScore | TurnEvidenceScore | JudgeScore
"""Any per-question score line."""
SCORE_FILES: dict[str, type[BaseModel]] = {
    "lexical.jsonl": LexicalScore,
    "evidence.jsonl": EvidenceScore,
    "turn_evidence.jsonl": TurnEvidenceScore,
    "judge.jsonl": JudgeScore,
}
"""``scores/`` file name → the record type of its lines."""

R = TypeVar("R", bound=BaseModel)


def write_score_lines(path: str | Path, records: Iterable[BaseModel]) -> None:
    """Replace ``path`` atomically (fsynced) with one JSON line per record, in the given order."""
    atomic_write_text(path, "".join(r.model_dump_json() + "\n" for r in records), fsync=True)


def read_json_lines(path: str | Path) -> list[tuple[int, Any]]:
    """``(line number, parsed JSON)`` of each non-blank line; a torn last line (a crash while
    appending) is ignored.

    Raises:
        FileNotFoundError: no such file.
        ValueError: any other line is not valid JSON (names file and line).
    """
    p = Path(path)
    lines = p.read_text(encoding="utf-8").split("\n")
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            if n >= len(lines) - 1:
                break
            raise ValueError(f"{p}: line {n} is not valid JSON ({e})") from None
    return out


def read_score_lines(path: str | Path, record_type: type[R]) -> list[R]:
    """The records of a ``scores/*.jsonl`` file; a torn last line (a crash while appending) is ignored.

    Raises:
        FileNotFoundError: no such file.
        ValueError: any other line is not valid JSON or not a ``record_type`` line, or is of a
            newer schema version (names file, line and field).
    """
    p = Path(path)
    out = []
    for n, data in read_json_lines(p):
        try:
            out.append(record_type.model_validate(data))
        except ValueError as e:
            raise error_type(e)(f"{p}: line {n} is not a {record_type.__name__} line: {describe_error(e)}") from None
    return out
