"""The nine H2HMem task types, their three main categories and every spelling seen in the wild.

Source: the paper's taxonomy (project page) and ``docs/taxonomy.md``. Spellings from the
dataset files, the official scripts and the submission template all map to one canonical
:class:`TaskType`; an unknown label raises :class:`UnknownLabelError` — never a silent drop
(docs/official-pitfalls.md #1).
"""

from __future__ import annotations

import enum
import re


class UnknownLabelError(ValueError):
    """A task-type, main-category or difficulty label that matches no known spelling."""


class MainCategory(str, enum.Enum):
    """The three main categories (``question_type.main_type``)."""

    RECALL = "Memory Recall"
    REASONING = "Memory Reasoning"
    APPLICATION = "Memory Application"

    @property
    def short(self) -> str:
        """``"Recall"``, ``"Reasoning"`` or ``"Application"`` (the paper's column names)."""
        return self.value.split(" ", 1)[1]


class TaskType(str, enum.Enum):
    """The nine sub-types. The value is the canonical name; ``abbr`` the paper's abbreviation."""

    UPR = "Unimodal Precise Recall"
    CRR = "Cross-modal Related Retrieval"
    KR = "Knowledge Resolution"
    TR = "Temporal Reasoning"
    MCR = "Multimodal Causal Reasoning"
    RET = "Reference & Evolution Tracking"
    TTL = "Test-Time Learning"
    CD = "Conflict Detection"
    AR = "Answer Refusal"

    @property
    def abbr(self) -> str:
        """The abbreviation, e.g. ``"UPR"``."""
        return self.name

    @property
    def main_category(self) -> MainCategory:
        """The main category this sub-type belongs to."""
        return _MAIN_OF[self]

    @classmethod
    def parse(cls, label: str) -> TaskType:
        """Map any known spelling to its canonical type.

        Comparison ignores case and surrounding whitespace, and a trailing abbreviation in
        parentheses ("Conflict Detection (CD)") may be present or absent.

        Raises:
            UnknownLabelError: the label matches no known spelling.
        """
        if not isinstance(label, str):
            raise UnknownLabelError(f"task type must be a string, got {type(label).__name__}")
        key = _norm(label)
        try:
            return _ALIASES[key]
        except KeyError:
            raise UnknownLabelError(f"unknown task type {label!r}") from None


_MAIN_OF = {
    TaskType.UPR: MainCategory.RECALL,
    TaskType.CRR: MainCategory.RECALL,
    TaskType.KR: MainCategory.RECALL,
    TaskType.TR: MainCategory.REASONING,
    TaskType.MCR: MainCategory.REASONING,
    TaskType.RET: MainCategory.REASONING,
    TaskType.TTL: MainCategory.APPLICATION,
    TaskType.CD: MainCategory.APPLICATION,
    TaskType.AR: MainCategory.APPLICATION,
}

_PAREN_ABBR = re.compile(r"\s*\(\s*[a-z]{2,3}\s*\)$")


def _norm(label: str) -> str:
    key = " ".join(label.strip().lower().split())
    return _PAREN_ABBR.sub("", key).strip()


# Every spelling listed in docs/taxonomy.md, normalised with _norm.
_EXTRA_SPELLINGS = {
    TaskType.CRR: ["Cross modal Related Retrieval"],
    TaskType.MCR: ["Multimodal Causal Inference", "Multimodal Casual Reasoning"],
    TaskType.RET: ["Cross-turn Reference Tracking", "Reference and Evolution Tracking"],
    TaskType.TTL: ["Test Time Learning"],
}

_ALIASES: dict[str, TaskType] = {}
for _t in TaskType:
    _ALIASES[_norm(_t.value)] = _t
    _ALIASES[_norm(_t.abbr)] = _t
    for _s in _EXTRA_SPELLINGS.get(_t, []):
        _ALIASES[_norm(_s)] = _t


def parse_main_category(label: str) -> MainCategory:
    """Map "Memory Recall" / "Recall" (any case) etc. to a :class:`MainCategory`.

    Raises:
        UnknownLabelError: the label is not one of the three categories.
    """
    if isinstance(label, str):
        key = _norm(label)
        for cat in MainCategory:
            if key in (cat.value.lower(), cat.short.lower()):
                return cat
    raise UnknownLabelError(f"unknown main category {label!r}")


DIFFICULTIES = ("easy", "medium", "hard")
"""Allowed ``difficulty`` values; a missing value is reported as ``"unknown"``."""


def parse_difficulty(label: object) -> str:
    """``"easy"``/``"medium"``/``"hard"`` (case-insensitive), or ``"unknown"`` when missing.

    Raises:
        UnknownLabelError: a present value that is not one of the three levels.
    """
    if label is None or (isinstance(label, str) and not label.strip()):
        return "unknown"
    if isinstance(label, str) and label.strip().lower() in DIFFICULTIES:
        return label.strip().lower()
    raise UnknownLabelError(f"unknown difficulty {label!r}")
