"""Supporting-turn labels: which turns of a dialogue support each question's gold answer.

Format (one JSON object per line, ``<split>.jsonl``; fields and statuses in
``docs/dataset-format.md``, "Supporting-turn labels")::

    {"question_id": "dyadic/dialogue5/session3/q0", "status": "labelled",
     "turns": [{"session": "session3", "turn": 4, "quote": "…"}], "note": "…", "sub_type": "…", "gold": "…"}

``status`` is ``labelled`` (scored), ``no_support_expected`` (Answer Refusal: nothing supports an
answer), ``evidence_missing`` (the evidence lies in a session absent from the data) or
``unclear``; only ``labelled`` questions are scored at the turn level, the others are excluded and
counted by status. ``turn`` is the 0-based index in the session's ``dialogue`` list.

Where labels are found (:func:`find_evidence_labels`), first match wins:

1. ``<ROOT>/evidence-labels/`` (a folder of ``*.jsonl`` inside the dataset root);
2. ``<ROOT>-labels/`` beside the dataset root (``h2hmem-sample`` → ``h2hmem-sample-labels``,
   the layout of the shared sample).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

LabelStatus = Literal["labelled", "no_support_expected", "evidence_missing", "unclear"]
LABEL_STATUSES: tuple[str, ...] = ("labelled", "no_support_expected", "evidence_missing", "unclear")
LABELS_FOLDER = "evidence-labels"
"""Folder name inside a dataset root that holds its labels (convention 1)."""
LABELS_SUFFIX = "-labels"
"""Suffix of a sibling folder holding a dataset's labels (convention 2)."""


class LabelTurn(BaseModel):
    """One supporting turn."""

    model_config = ConfigDict(extra="ignore")

    session: str
    """Session folder name, ``"session3"``."""
    turn: int
    """0-based turn index in that session."""
    quote: str | None = None
    """Exact excerpt of the turn (≤ 100 characters) or ``IMAGE <file>``; for humans, not scored."""


class EvidenceLabel(BaseModel):
    """The supporting turns of one question."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    status: LabelStatus
    turns: list[LabelTurn] = []
    note: str | None = None
    sub_type: str | None = None
    gold: str | None = None

    @property
    def turn_keys(self) -> list[tuple[str, int]]:
        """``[(session, turn), …]`` without duplicates, in file order."""
        return list(dict.fromkeys((t.session, t.turn) for t in self.turns))


class EvidenceLabels(BaseModel):
    """Labels by question id, and where they came from (recorded in the scores summary)."""

    source: str
    labels: dict[str, EvidenceLabel]
    meta: dict[str, Any] = {}
    """Header facts such as the labelling model (from a ``labels.meta.json`` beside the files)."""

    def get(self, question_id: str) -> EvidenceLabel | None:
        return self.labels.get(question_id)

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for lab in self.labels.values():
            out[lab.status] = out.get(lab.status, 0) + 1
        return out


def _read_file(path: Path, into: dict[str, EvidenceLabel]) -> None:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: line {n} is not valid JSON ({e.msg})") from None
        try:
            label = EvidenceLabel.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "(record)"
            raise ValueError(f"{path}: line {n}, field {field}: {err['msg']}") from None
        if label.question_id in into:
            raise ValueError(f"{path}: line {n}: question {label.question_id!r} is labelled twice")
        into[label.question_id] = label


def load_evidence_labels(path: str | Path) -> EvidenceLabels:
    """Read a labels file, or every ``*.jsonl`` of a labels folder.

    Raises:
        FileNotFoundError: ``path`` does not exist, or a folder holds no ``*.jsonl``.
        ValueError: a bad line (names the file, line and field) or a question labelled twice.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"evidence labels {path} do not exist")
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"evidence labels folder {path} holds no *.jsonl file")
    labels: dict[str, EvidenceLabel] = {}
    for f in files:
        _read_file(f, labels)
    meta_path = (path if path.is_dir() else path.parent) / "labels.meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    return EvidenceLabels(source=str(path), labels=labels, meta=meta)


def find_evidence_labels(data_root: str | Path) -> Path | None:
    """The labels folder of a dataset root by the conventions in this module's docstring, or None."""
    root = Path(data_root).resolve()
    for cand in (root / LABELS_FOLDER, root.with_name(root.name + LABELS_SUFFIX)):
        if cand.is_dir() and any(cand.glob("*.jsonl")):
            return cand
    return None


def labels_by_id(labels: EvidenceLabels | Mapping[str, EvidenceLabel] | None) -> Mapping[str, EvidenceLabel]:
    """A plain mapping for either form (None → empty)."""
    if labels is None:
        return {}
    return labels.labels if isinstance(labels, EvidenceLabels) else labels
