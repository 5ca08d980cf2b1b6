"""Which questions a run, an evaluation or a report covers: filters, a stratified sample, a limit.

One :class:`Selection` is used by ``h2hmem run``, ``evaluate`` and ``report`` (and the Python API)
so the three commands choose questions the same way. It applies, in this order:

1. filters, combined with AND (within one filter, values are OR-ed): task types (any spelling of
   the alias table in :mod:`h2hmem.data._taxonomy`), dialogues, question ids, difficulties;
2. ``sample`` = N questions drawn stratified over split × task type: proportional allocation
   (largest remainders), at least one question per non-empty stratum, drawn with a generator
   seeded by ``seed`` and the stratum name, so the same N and seed give the same questions
   whatever else is in the dataset;
3. ``limit`` (a :class:`~h2hmem.run.RunConfig` setting, not part of this model): the first N of
   what is left, in dataset order.

The result keeps dataset order (split, dialogue, session number, index).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from ..data import SPLITS, TaskType, parse_difficulty
from ..records import Manifest

T = TypeVar("T")


class SelectionError(ValueError):
    """A selection that names questions or dialogues absent from the data, asks for an impossible
    sample, or matches no question."""


class SelectionWarning(UserWarning):
    """A selection that does less than it says: a ``sample`` larger than the questions its filters leave."""


_DIALOGUE = re.compile(r"^(?:(?P<split>dyadic|multi-party)/)?(?:dialogue)?(?P<n>\d+)$")


def _norm_dialogue(value: str) -> str:
    """``"3"``, ``"dialogue3"`` → ``"dialogue3"``; ``"dyadic/3"`` → ``"dyadic/dialogue3"``."""
    m = _DIALOGUE.match(value.strip().lower())
    if not m:
        raise ValueError(
            f"dialogue {value!r}: expected dialogueN, N or <split>/dialogueN (split one of {', '.join(SPLITS)})"
        )
    name = f"dialogue{int(m['n'])}"
    return f"{m['split']}/{name}" if m["split"] else name


class Selection(BaseModel):
    """Question filters and a stratified sample (see the module docstring for the order).

    Empty tuples mean "no filter". Values are normalised on construction: task types to their
    abbreviations (``"Temporal Reasoning"`` → ``"TR"``), difficulties to lower case, dialogues to
    ``dialogueN`` or ``<split>/dialogueN``.

    Raises (``pydantic.ValidationError``, a ``ValueError``): an unknown task type or difficulty, a
    malformed dialogue, ``sample < 1``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_types: tuple[str, ...] = ()
    dialogues: tuple[str, ...] = ()
    question_ids: tuple[str, ...] = ()
    difficulties: tuple[str, ...] = ()
    sample: int | None = None
    """Draw this many questions, stratified over split × task type."""
    seed: int = 0
    """Seed of the sample (ignored without ``sample``)."""

    @field_validator("task_types", mode="before")
    @classmethod
    def _task_types(cls, v: Any) -> tuple[str, ...]:
        return _unique(TaskType.parse(str(t)).abbr for t in _as_tuple(v))

    @field_validator("dialogues", mode="before")
    @classmethod
    def _dialogues(cls, v: Any) -> tuple[str, ...]:
        return _unique(_norm_dialogue(str(d)) for d in _as_tuple(v))

    @field_validator("question_ids", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> tuple[str, ...]:
        return _unique(str(q).strip() for q in _as_tuple(v) if str(q).strip())

    @field_validator("difficulties", mode="before")
    @classmethod
    def _difficulties(cls, v: Any) -> tuple[str, ...]:
        return _unique(parse_difficulty(str(d)) for d in _as_tuple(v))

    @field_validator("sample")
    @classmethod
    def _sample(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError("sample must be at least 1")
        return v

    # ----- description ---------------------------------------------------------------------
    @property
    def is_empty(self) -> bool:
        """True when nothing is filtered or sampled (every question is selected)."""
        return not (self.task_types or self.dialogues or self.question_ids or self.difficulties or self.sample)

    def recorded(self) -> dict[str, Any]:
        """The selection as recorded in a manifest (only what is set; ``{}`` when empty)."""
        if self.is_empty:
            return {}
        data = self.model_dump(mode="json", exclude_defaults=True)
        if self.sample:
            data["seed"] = self.seed
        return data

    def slug(self) -> str:
        """Short readable run-id part, e.g. ``"tt-TR+CD_s40-seed1"``; long id/dialogue lists become a hash."""
        if self.is_empty:
            return ""
        parts = []
        if self.task_types:
            parts.append("tt-" + "+".join(self.task_types))
        if self.difficulties:
            parts.append("d-" + "+".join(self.difficulties))
        if self.dialogues:
            names = "+".join(d.replace("/", "-").replace("dialogue", "dlg") for d in self.dialogues)
            parts.append(names if len(self.dialogues) <= 3 else f"dlg{len(self.dialogues)}-" + _hash(self.dialogues))
        if self.question_ids:
            parts.append(f"q{len(self.question_ids)}-" + _hash(self.question_ids))
        if self.sample:
            parts.append(f"s{self.sample}-seed{self.seed}")
        return "_".join(parts)

    # ----- applying ------------------------------------------------------------------------
    def apply(self, items: Sequence[T], *, strict: bool = True) -> list[T]:
        """The selected items, in input order.

        Args:
            items: questions (:class:`~h2hmem.data.Question`) or prediction/score records — any
                objects or dicts with ``id``/``question_id``, ``split``, ``dialogue``,
                ``task_type`` (enum, abbreviation or name) and ``difficulty``.
            strict: raise when a requested question id or dialogue is not among ``items`` (a run
                must not silently answer fewer questions than asked); reports pass False.

        Raises:
            SelectionError: (strict) unknown ids or dialogues, naming them; a sample smaller
                than the number of non-empty strata.
        """
        if strict:
            self._check_known(items)
        ids = set(self.question_ids)
        pool = [x for x in items if self._keep(x, ids)]
        if self.sample is None or self.sample >= len(pool):
            return pool
        return stratified_sample(pool, self.sample, self.seed)

    def _keep(self, x: Any, ids: set[str]) -> bool:
        if self.task_types and task_type_of(x) not in self.task_types:
            return False
        if self.difficulties and str(_get(x, "difficulty") or "unknown") not in self.difficulties:
            return False
        if self.dialogues:
            dialogue = _get(x, "dialogue")
            if dialogue not in self.dialogues and f"{_get(x, 'split')}/{dialogue}" not in self.dialogues:
                return False
        return not ids or question_id_of(x) in ids

    def _check_known(self, items: Sequence[Any]) -> None:
        problems = []
        if self.question_ids:
            ids = {question_id_of(x) for x in items}
            missing = [q for q in self.question_ids if q not in ids]
            if missing:
                problems.append(
                    f"{len(missing)} question id(s) not in the data: {', '.join(missing[:10])}"
                    + (" …" if len(missing) > 10 else "")
                )
        if self.dialogues:
            known = {_get(x, "dialogue") for x in items} | {f"{_get(x, 'split')}/{_get(x, 'dialogue')}" for x in items}
            missing = [d for d in self.dialogues if d not in known]
            if missing:
                problems.append(f"dialogue(s) not in the data: {', '.join(missing)}")
        if problems:
            raise SelectionError("; ".join(problems))


def stratified_sample(pool: Sequence[T], n: int, seed: int) -> list[T]:
    """``n`` items of ``pool`` stratified over split × task type, in pool order.

    Allocation: each non-empty stratum gets ``max(1, ⌊n·size/total⌋)`` (capped at its size), then
    the total is brought to ``n`` by the largest remainders (strata whose share is furthest above
    their count gain first; those furthest below lose first, never under one). Within a stratum
    the items are drawn with ``random.Random(f"{seed}|{split}|{task type}")``.

    Example: strata of sizes 50 and 10, n = 6 → shares 5.0 and 1.0 → 5 and 1.

    Raises:
        SelectionError: ``n`` is smaller than the number of non-empty strata.
    """
    strata: dict[tuple[str, str], list[int]] = {}
    for i, x in enumerate(pool):
        strata.setdefault((str(_get(x, "split")), task_type_of(x)), []).append(i)
    keys = sorted(strata, key=_stratum_order)
    if n < len(keys):
        raise SelectionError(
            f"--sample {n} is smaller than the {len(keys)} non-empty split × task type strata "
            "(at least one question per stratum); ask for at least that many"
        )
    total = len(pool)
    share = {k: n * len(strata[k]) / total for k in keys}
    alloc = {k: min(len(strata[k]), max(1, math.floor(share[k]))) for k in keys}
    while sum(alloc.values()) < n:  # give to the stratum whose share exceeds its count most
        k = max((k for k in keys if alloc[k] < len(strata[k])), key=lambda k: share[k] - alloc[k])
        alloc[k] += 1
    while sum(alloc.values()) > n:  # take from the one most above its share (never below one)
        k = min((k for k in keys if alloc[k] > 1), key=lambda k: share[k] - alloc[k])
        alloc[k] -= 1
    chosen: list[int] = []
    for k in keys:
        rng = random.Random(f"{seed}|{k[0]}|{k[1]}")
        chosen.extend(rng.sample(strata[k], alloc[k]))
    return [pool[i] for i in sorted(chosen)]


def _stratum_order(key: tuple[str, str]) -> tuple[int, int]:
    split, tt = key
    return (SPLITS.index(split) if split in SPLITS else len(SPLITS), list(TaskType).index(TaskType[tt]))


def read_id_file(path: str | Path) -> list[str]:
    """Question ids from a text file: one per line; blank lines and ``#`` comments ignored.

    Raises:
        FileNotFoundError / OSError: the file cannot be read (the message names it).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"question-id file {p} does not exist") from None
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def expand_id_args(values: Iterable[str]) -> list[str]:
    """Command-line ``--question-id`` values: ``@file`` reads ids from a file, anything else is an id."""
    out: list[str] = []
    for v in values:
        out.extend(read_id_file(v[1:]) if v.startswith("@") else [v])
    return out


def task_type_of(x: Any) -> str:
    """Task-type abbreviation of a question or record."""
    t = _get(x, "task_type")
    return t.abbr if isinstance(t, TaskType) else TaskType.parse(str(t)).abbr


def question_id_of(x: Any) -> str:
    return str(_get(x, "question_id") if _get(x, "question_id") is not None else _get(x, "id"))


def _get(x: Any, name: str) -> Any:
    return x.get(name) if isinstance(x, dict) else getattr(x, name, None)


def _as_tuple(v: Any) -> tuple:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    return tuple(v)


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _hash(values: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(values)).encode()).hexdigest()[:8]


def selection_from_manifest(manifest: Manifest | None) -> Selection:
    """The selection a run recorded (empty for runs made before selections existed, or without a manifest)."""
    return Selection(**((manifest.config.selection if manifest is not None else None) or {}))
