"""The prediction record: one JSON line per question in ``runs/<run-id>/predictions.jsonl``.

Plain JSON so users can read it without our code (``pandas.read_json(path, lines=True)``).
A failed question is a record with ``error`` set and ``answer`` null — never dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..llm._types import Usage
from ..memory._protocol import Evidence


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


def read_predictions(path: str | Path) -> list[Prediction]:
    """Read ``predictions.jsonl`` (or a run directory holding it).

    A torn last line (a crash during a write: an unterminated tail that is not a valid record) is
    ignored; a later duplicate of a question id replaces the earlier record (``--retry-failed``
    appends the redone answers).

    Raises:
        FileNotFoundError: no predictions file.
        ValueError: a newline-terminated line is not a valid record (names file and line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "predictions.jsonl"
    lines = p.read_bytes().split(b"\n")
    by_id: dict[str, Prediction] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = Prediction.model_validate_json(line)
        except ValueError as e:
            if n == len(lines):
                break  # the unterminated tail: a torn final write (records are written with their newline)
            raise ValueError(f"{p}: line {n} is not a prediction record: {_describe(e)}") from None
        by_id[rec.question_id] = rec
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
