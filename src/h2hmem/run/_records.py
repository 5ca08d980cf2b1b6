"""The prediction record: one JSON line per question in ``runs/<run-id>/predictions.jsonl``.

Plain JSON so users can read it without our code (``pandas.read_json(path, lines=True)``).
A failed question is a record with ``error`` set and ``answer`` null — never dropped.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..llm import Usage
from ..memory import Evidence


class QuestionKey(BaseModel):
    """The question fields every per-question record starts with (predictions, judgments)."""

    question_id: str
    """``"{split}/dialogue{N}/session{K}/q{index}"``."""
    split: str
    dialogue: str
    session: str
    task_type: str
    """Abbreviation (UPR … AR)."""
    main_category: str
    difficulty: str


class Prediction(QuestionKey):
    question: str
    question_images: list[str] = []
    """``"sessionK/<file>"`` keys of the question's images."""
    gold: str
    answer: str | None = None
    evidence: list[Evidence] = []
    latency_s: float = 0.0
    usage: Usage = Usage()
    cached: bool = False
    error: str | None = None
    method: str = ""
    details: dict[str, Any] = {}

    @property
    def failed(self) -> bool:
        return self.error is not None


def prediction_hash(p: Prediction) -> str:
    """SHA-256 (first 16 hex) of what the method produced for one question: question id, answer,
    error and evidence. Every score line records it (``prediction_hash``), so a score that no
    longer describes the recorded prediction is recognised and recomputed or dropped."""
    data = json.dumps(
        [p.question_id, p.answer, p.error, [e.model_dump(mode="json") for e in p.evidence]],
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


class DuplicatePredictionsWarning(UserWarning):
    """``predictions.jsonl`` holds more than one record for some question ids (the last complete one is used)."""


def read_predictions(path: str | Path, *, warn_duplicates: bool = True) -> list[Prediction]:
    """Read ``predictions.jsonl`` (or a run directory holding it).

    The rule every reader follows (evaluate, report, exports, the runner's resume): **the last
    complete line of a question id wins**. A torn last line (a crash during a write: an
    unterminated tail that is not a valid record) is not complete and is ignored; a later record
    of a question id replaces the earlier one (``--retry-failed`` appends the redone answers).
    When some ids have several records, a :class:`DuplicatePredictionsWarning` says how many
    (``warn_duplicates=False`` for the runner, which appends them itself).

    Raises:
        FileNotFoundError: no predictions file.
        ValueError: a newline-terminated line is not a valid record (names file and line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "predictions.jsonl"
    lines = p.read_bytes().split(b"\n")
    by_id: dict[str, Prediction] = {}
    duplicates: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = Prediction.model_validate_json(line)
        except ValueError as e:
            if n == len(lines):
                break  # the unterminated tail: a torn final write (records are written with their newline)
            raise ValueError(f"{p}: line {n} is not a prediction record: {_describe(e)}") from None
        if rec.question_id in by_id:
            duplicates[rec.question_id] = duplicates.get(rec.question_id, 1) + 1
        by_id[rec.question_id] = rec
    if duplicates and warn_duplicates:
        warnings.warn(
            f"{p}: {len(duplicates)} question(s) have more than one record (e.g. {next(iter(duplicates))}, "
            f"{max(duplicates.values())} records); the last complete line of each is used",
            DuplicatePredictionsWarning,
            stacklevel=2,
        )
    return list(by_id.values())


def _describe(error: ValueError) -> str:
    """``"question_id: Input should be a valid string (got 5)"`` per field, without pydantic's boilerplate."""
    if not isinstance(error, ValidationError):
        return str(error)
    parts = []
    for err in error.errors():
        field = ".".join(map(str, err["loc"]))
        got = "" if err["type"] in ("missing", "json_invalid") else f" (got {err.get('input')!r:.60})"
        parts.append(f"{field + ': ' if field else ''}{err['msg']}{got}")
    return "; ".join(parts)
