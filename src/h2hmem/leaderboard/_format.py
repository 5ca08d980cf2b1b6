"""The leaderboard submission file: two JSON files, one per split (``docs/leaderboard.md``).

Each file is ``{"predictions": [row, ...]}``; a row holds the official fields
(``question_text``, ``question_image``, ``system_answer``, ``original_answer``, ``category``) and
our optional ``question_id``, which lets our tools join exactly instead of by text.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from ..data import SPLITS, Split

FILE_NAMES: dict[Split, str] = {"dyadic": "prediction_dyadic.json", "multi-party": "prediction_multiparty.json"}
"""The names :func:`export_submission` writes (docs/leaderboard.md)."""

ACCEPTED_NAMES: dict[str, Split] = {
    "prediction_dyadic.json": "dyadic",
    "prediction_multiparty.json": "multi-party",
    "prediction_multi_party.json": "multi-party",  # the official documents' other spelling
}

MAX_ROWS = 10_000
"""Rows per file. The full dataset has 2,046 dyadic and 190 multi-party questions (docs/dataset-format.md)."""
MAX_ANSWER_CHARS = 20_000
"""Longest accepted ``system_answer``/``original_answer``: the dataset's own text limit (data loader)."""
MAX_QUESTION_CHARS = 5_000
"""Longest accepted ``question_text``; real questions are at most a few hundred characters."""
MAX_LABEL_CHARS = 500
"""Longest accepted ``question_image``, ``category`` and ``question_id``."""


def _none_as_empty(v: object) -> object:
    return "" if v is None else v


class SubmissionRow(BaseModel):
    """One prediction row. Unknown extra fields are ignored; types are strict (a number is not a string)."""

    model_config = ConfigDict(extra="ignore")

    question_text: Annotated[StrictStr, Field(max_length=MAX_QUESTION_CHARS)]
    question_image: Annotated[StrictStr, BeforeValidator(_none_as_empty), Field(max_length=MAX_LABEL_CHARS)] = ""
    """The question's image as the dataset writes it: a bare file name, ``"sessionK/<file>"`` in
    ``session0``, or ``""`` when the question has none (``null`` is read as ``""``)."""
    system_answer: Annotated[StrictStr, Field(max_length=MAX_ANSWER_CHARS)]
    original_answer: Annotated[StrictStr, Field(max_length=MAX_ANSWER_CHARS)]
    category: Annotated[StrictStr, Field(max_length=MAX_LABEL_CHARS)]
    question_id: Annotated[StrictStr, Field(max_length=MAX_LABEL_CHARS)] | None = None
    """Our stable id ``"{split}/dialogue{N}/session{K}/q{index}"``; optional (absent in official files)."""


class SubmissionFile(BaseModel):
    """The top level of one file. Rows are validated one by one (see ``_validate``)."""

    model_config = ConfigDict(extra="ignore")

    predictions: list[object] = Field(max_length=MAX_ROWS)


def split_from_name(name: str) -> Split | None:
    """The split a file name stands for, or None.

    ``prediction_dyadic.json`` → ``"dyadic"``; ``prediction_multiparty.json`` and
    ``prediction_multi_party.json`` → ``"multi-party"``. Other names are read leniently: a name
    whose letters contain ``dyadic`` or ``multiparty`` (``my-run_multi-party.json``).
    """
    base = re.split(r"[/\\]", name)[-1].lower()
    if base in ACCEPTED_NAMES:
        return ACCEPTED_NAMES[base]
    letters = re.sub(r"[^a-z]", "", base)
    hits = [s for s in SPLITS if s.replace("-", "") in letters]
    return hits[0] if len(hits) == 1 else None
