"""The prediction record: one JSON line per question in ``runs/<run-id>/predictions.jsonl``.

Plain JSON so users can read it without our code (``pandas.read_json(path, lines=True)``; JSON
Schema ``docs/schemas/prediction.schema.json``). A failed question is a record with ``error`` set
and ``answer`` null — never dropped.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ._base import Record
from ._evidence import Evidence
from ._usage import Usage
from ._versioned import Versioned, describe_error, error_type


class QuestionKey(Record):
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


class Prediction(Versioned, QuestionKey):
    """One question's answer (or failure) as the runner recorded it."""

    KIND = "prediction"
    schema_: Literal["h2hmem.prediction/1"] = Field("h2hmem.prediction/1", alias="schema")
    question: str
    question_images: list[str] = []
    """``"sessionK/<file>"`` keys of the question's images."""
    gold: str
    answer: str | None = None
    evidence: list[Evidence] = []
    """Memory units in the order the method ranked them."""
    latency_s: float = 0.0
    """Wall seconds of the method's ``answer()`` (``retrieve_evidence()`` in a retrieval-only run): its
    retrieval and its model calls, without the time its calls waited for one of the run's
    ``concurrency`` call slots."""
    usage: Usage = Usage()
    cached: bool = False
    error: str | None = None
    method: str = ""
    details: dict[str, Any] = {}
    """Method-specific facts (open), plus what the runner adds: ``answer_sessions`` (the gold
    sessions, copied for scoring without the dataset), ``retrieval_only``, ``invalid_unicode``."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def answer_sessions(self) -> list[str] | None:
        """The gold sessions the runner copied into ``details["answer_sessions"]``; None when absent."""
        if "answer_sessions" not in self.details:
            return None
        return [str(s) for s in self.details["answer_sessions"] or []]


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
    """``predictions.jsonl`` holds a later record for a question whose earlier record was an answer
    (not a failure): two writers, or files joined by hand. The last complete one is used."""


def read_predictions(path: str | Path, *, warn_duplicates: bool = True) -> list[Prediction]:
    """Read ``predictions.jsonl`` (or a run directory holding it).

    The rule every reader follows (evaluate, report, exports, the runner's resume): **the last
    complete line of a question id wins**. A torn last line (a crash during a write: an
    unterminated tail that is not a valid record) is not complete and is ignored; a later record
    of a question id replaces the earlier one.

    Superseded *failed* records are the normal case: ``run --retry-failed`` appends the redone
    answers after the failures they replace (the file stays append-only, so a crash during the
    retry loses nothing), and reading them is silent. A later record that replaces an *answer*
    is not something h2hmem writes (two processes, files concatenated by hand): a
    :class:`DuplicatePredictionsWarning` says how many such questions there are
    (``warn_duplicates=False`` silences it).

    Raises:
        FileNotFoundError: no predictions file.
        ValueError: a newline-terminated line is not a valid record, or is of a newer schema
            version (names file, line and field).
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
            raise error_type(e)(f"{p}: line {n} is not a prediction record: {describe_error(e)}") from None
        earlier = by_id.get(rec.question_id)
        if earlier is not None and not earlier.failed:  # a failure superseded by its retry is normal
            duplicates[rec.question_id] = duplicates.get(rec.question_id, 1) + 1
        by_id[rec.question_id] = rec
    if duplicates and warn_duplicates:
        warnings.warn(
            f"{p}: {len(duplicates)} question(s) have an answer replaced by a later record (e.g. "
            f"{next(iter(duplicates))}, {max(duplicates.values())} records); the last complete line of each is used",
            DuplicatePredictionsWarning,
            stacklevel=2,
        )
    return list(by_id.values())
