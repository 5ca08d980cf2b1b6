"""The prediction record: one JSON line per question in ``runs/<run-id>/predictions.jsonl``.

Plain JSON so users can read it without our code (``pandas.read_json(path, lines=True)``).
A failed question is a record with ``error`` set and ``answer`` null — never dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..llm._types import Usage
from ..memory._protocol import Evidence


class Prediction(BaseModel):
    question_id: str
    """``"{split}/dialogue{N}/session{K}/q{index}"``."""
    split: str
    dialogue: str
    session: str
    task_type: str
    """Abbreviation (UPR … AR)."""
    main_category: str
    difficulty: str
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
