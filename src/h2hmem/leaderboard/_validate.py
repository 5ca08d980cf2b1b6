"""Check submission files against the dataset: schema, matching, duplicates, missing questions.

Rows are joined to dataset questions by ``question_id`` when present, else by (split, question
text, question image) — the official format has no ids (``docs/leaderboard.md``). The
submitted ``original_answer`` and ``category`` are never used for scoring; rows where they
disagree with the dataset are reported as warnings. When several dataset questions share a text
and image, the submitted ``original_answer`` may pick among them (matching only).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from ..data import SPLITS, Dataset, Question, Split, TaskType, UnknownLabelError, image_field, load_dataset, loc_to_path
from ._format import MAX_ROWS, SubmissionFile, SubmissionRow, split_from_name

Severity = Literal["error", "warning"]

_JSON_TYPE = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


class SubmissionProblem(BaseModel):
    """One finding; ``row`` is the 0-based index in ``predictions``, ``field`` the row's field."""

    severity: Severity
    code: str
    file: str
    row: int | None = None
    field: str | None = None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f" predictions[{self.row}]"
        if self.field:
            where += f".{self.field}"
        return f"{where}: {self.message} [{self.code}]"


class MatchedRow(BaseModel):
    """A row joined to a dataset question."""

    question_id: str
    split: Split
    file: str
    row: int
    system_answer: str


class SubmissionReport(BaseModel):
    """What :func:`validate_submission` found. ``ok`` when there is no error."""

    files: dict[str, Split] = {}
    """File name → split it was read as."""
    rows: int = 0
    matched: list[MatchedRow] = []
    expected: dict[str, int] = {}
    """Questions per split in the dataset, for the splits submitted."""
    missing: list[str] = []
    """Question ids of the submitted splits that no row answers."""
    problems: list[SubmissionProblem] = []

    @property
    def errors(self) -> list[SubmissionProblem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[SubmissionProblem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, dict[str, int]]:
        """``{"error": {code: n}, "warning": {code: n}}``."""
        out: dict[str, dict[str, int]] = {"error": {}, "warning": {}}
        for p in self.problems:
            out[p.severity][p.code] = out[p.severity].get(p.code, 0) + 1
        return out


@dataclass(frozen=True)
class UploadedFile:
    """A submission file's bytes; ``split`` None means "infer it from the name"."""

    name: str
    content: bytes
    split: Split | None = None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _norm_image(value: str) -> str:
    return ",".join(p.strip() for p in value.split(",") if p.strip())


class _Index:
    def __init__(self, dataset: Dataset) -> None:
        self.by_id: dict[str, Question] = {}
        self.by_text: dict[tuple[str, str], list[Question]] = defaultdict(list)
        self.image_forms: dict[str, set[str]] = {}
        for q in dataset.questions:
            self.by_id[q.id] = q
            self.by_text[(q.split, _norm(q.text))].append(q)
            keys = [i.key for i in q.images]
            self.image_forms[q.id] = {_norm_image(image_field(q.session, keys)), _norm_image(",".join(keys))}


class _Checker:
    def __init__(self, dataset: Dataset, max_rows: int) -> None:
        self.index = _Index(dataset)
        self.dataset = dataset
        self.max_rows = max_rows
        self.report = SubmissionReport()
        self.claimed: dict[str, tuple[str, int]] = {}

    def add(
        self, sev: Severity, code: str, file: str, message: str, row: int | None = None, field: str | None = None
    ) -> None:
        self.report.problems.append(
            SubmissionProblem(severity=sev, code=code, file=file, row=row, field=field, message=message)
        )

    def parse(self, f: UploadedFile, split: Split) -> list[tuple[int, SubmissionRow]]:
        try:
            text = f.content.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            self.add("error", "not-utf8", f.name, f"file is not UTF-8 text (byte {e.start})")
            return []
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            self.add("error", "invalid-json", f.name, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")
            return []
        except RecursionError:
            self.add("error", "invalid-json", f.name, "invalid JSON: nesting too deep")
            return []
        except ValueError as e:  # an integer of more than 4,300 digits (Python's conversion limit), …
            self.add("error", "invalid-json", f.name, f"invalid JSON: {e}")
            return []
        if (
            isinstance(data, dict)
            and isinstance(data.get("predictions"), list)
            and len(data["predictions"]) > self.max_rows
        ):
            self.add(
                "error",
                "too-many-rows",
                f.name,
                f"{len(data['predictions'])} rows; at most {self.max_rows} are accepted",
                field="predictions",
            )
            return []
        if not isinstance(data, dict):
            self.add(
                "error",
                "invalid-field",
                f.name,
                'the file must hold a JSON object {"predictions": [...]}, '
                f"not a JSON {_JSON_TYPE.get(type(data), type(data).__name__)}",
            )
            return []
        try:
            top = SubmissionFile.model_validate(data)
        except ValidationError as e:
            for err in e.errors():
                self.add("error", "invalid-field", f.name, err["msg"], field=loc_to_path("", err["loc"]) or None)
            return []
        rows = []
        for i, raw in enumerate(top.predictions):
            try:
                rows.append((i, SubmissionRow.model_validate(raw)))
            except ValidationError as e:
                for err in e.errors():
                    field = loc_to_path("", err["loc"]) or None
                    got = "" if err["type"] == "missing" else f" (got {type(err.get('input')).__name__})"
                    self.add("error", "invalid-field", f.name, err["msg"] + got, row=i, field=field)
        if not top.predictions:
            self.add("warning", "empty-file", f.name, "file has no predictions")
        return rows

    def match(self, f: UploadedFile, split: Split, i: int, row: SubmissionRow) -> Question | None:
        name = f.name
        if row.question_id is not None:
            q = self.index.by_id.get(row.question_id)
            if q is None:
                self.add(
                    "error",
                    "unknown-question-id",
                    name,
                    f"question_id {row.question_id!r} is not in the dataset",
                    i,
                    "question_id",
                )
                return None
            if q.split != split:
                self.add(
                    "error",
                    "wrong-split",
                    name,
                    f"question {q.id} belongs to the {q.split} split, not {split}",
                    i,
                    "question_id",
                )
                return None
            if _norm(q.text) != _norm(row.question_text):
                self.add(
                    "error",
                    "id-text-mismatch",
                    name,
                    f"question_text differs from the dataset's question {q.id} (another dataset version?)",
                    i,
                    "question_text",
                )
                return None
            return q
        cands = self.index.by_text.get((split, _norm(row.question_text)), [])
        if not cands:
            other = [sp for sp in SPLITS if sp != split and self.index.by_text.get((sp, _norm(row.question_text)))]
            if other:
                self.add(
                    "error",
                    "wrong-split",
                    name,
                    f"this is a {other[0]} question, not {split}: were the files swapped?",
                    i,
                    "question_text",
                )
            else:
                self.add(
                    "error",
                    "unmatched",
                    name,
                    f"no {split} question has this text: {row.question_text[:80]!r}",
                    i,
                    "question_text",
                )
            return None
        image = _norm_image(row.question_image)
        with_image = [q for q in cands if image in self.index.image_forms[q.id]]
        if not with_image:
            if len(cands) > 1:
                self.add(
                    "error",
                    "unmatched",
                    name,
                    f"{len(cands)} questions have this text but none has image {row.question_image!r}",
                    i,
                    "question_image",
                )
                return None
            self.add(
                "warning",
                "image-mismatch",
                name,
                f"question_image {row.question_image!r} differs from the dataset's "
                f"{sorted(self.index.image_forms[cands[0].id])[0]!r}; matched {cands[0].id} by text",
                i,
                "question_image",
            )
            with_image = cands
        if len(with_image) == 1:
            return with_image[0]
        # Several questions share text and image: identical gold answers are interchangeable;
        # otherwise the submitted gold copy picks one (used for matching only, never scoring).
        free = [q for q in with_image if q.id not in self.claimed] or with_image
        if len({_norm(q.gold) for q in free}) == 1:
            return free[0]
        by_gold = [q for q in free if _norm(q.gold) == _norm(row.original_answer)]
        if len({_norm(q.gold) for q in by_gold}) == 1:
            return by_gold[0]
        self.add(
            "error",
            "ambiguous",
            name,
            f"{len(with_image)} questions share this text and image ({', '.join(q.id for q in with_image)}); "
            "add question_id to tell them apart",
            i,
            "question_text",
        )
        return None

    def compare(self, name: str, i: int, row: SubmissionRow, q: Question) -> None:
        if _norm(row.original_answer) != _norm(q.gold):
            self.add(
                "warning",
                "gold-mismatch",
                name,
                f"original_answer differs from the dataset's gold answer of {q.id} (ignored: the server scores against its own gold)",
                i,
                "original_answer",
            )
        try:
            cat = TaskType.parse(row.category)
        except UnknownLabelError as e:
            self.add(
                "warning", "unknown-category", name, f"{e} (ignored: {q.id} is {q.task_type.value})", i, "category"
            )
            return
        if cat is not q.task_type:
            self.add(
                "warning",
                "category-mismatch",
                name,
                f"category {row.category!r} differs from the dataset's {q.task_type.value!r} for {q.id} (ignored)",
                i,
                "category",
            )

    def check_file(self, f: UploadedFile, split: Split) -> None:
        rows = self.parse(f, split)
        self.report.rows += len(rows)
        for i, row in rows:
            q = self.match(f, split, i, row)
            if q is None:
                continue
            if q.id in self.claimed:
                fname, j = self.claimed[q.id]
                self.add(
                    "error", "duplicate", f.name, f"question {q.id} is already answered by {fname} predictions[{j}]", i
                )
                continue
            self.claimed[q.id] = (f.name, i)
            self.compare(f.name, i, row, q)
            self.report.matched.append(
                MatchedRow(question_id=q.id, split=split, file=f.name, row=i, system_answer=row.system_answer)
            )


def check_submission(
    files: Sequence[UploadedFile], dataset: Dataset, *, require_both: bool = False, max_rows: int = MAX_ROWS
) -> SubmissionReport:
    """Validate submission files held in memory (the server's entry point: no paths from users).

    Args:
        files: the files; each file's split is its ``split`` or inferred from its name.
        dataset: the gold dataset.
        require_both: a split of the dataset with no file is an error (a leaderboard entry needs
            both, docs/leaderboard.md) instead of a warning.
        max_rows: rows accepted per file.
    """
    c = _Checker(dataset, max_rows)
    seen: dict[Split, str] = {}
    for f in files:
        split = f.split or split_from_name(f.name)
        if split is None:
            c.add(
                "error",
                "unknown-split",
                f.name,
                "cannot tell the split from the file name; name it prediction_dyadic.json or prediction_multiparty.json, or pass --split",
            )
            continue
        if split in seen:
            c.add("error", "duplicate-file", f.name, f"a second {split} file (first: {seen[split]})")
            continue
        seen[split] = f.name
        c.report.files[f.name] = split
        c.check_file(f, split)
    present = {q.split for q in dataset.questions}
    for split in sorted(present - set(seen)):
        if require_both or seen:
            c.add(
                "error" if require_both else "warning",
                "missing-file",
                f"<{split}>",
                f"no {split} file: a complete entry needs both prediction files",
            )
    for split in seen:
        ids = [q.id for q in dataset.questions if q.split == split]
        c.report.expected[split] = len(ids)
        missing = [qid for qid in ids if qid not in c.claimed]
        c.report.missing.extend(missing)
        if missing:
            c.add(
                "warning",
                "missing",
                seen[split],
                f"{len(missing)} of {len(ids)} {split} questions have no row (scored 0), e.g. {', '.join(missing[:3])}",
            )
    return c.report


def validate_submission(
    files: Sequence[str | Path], data_root: str | Path, *, split: Split | None = None, max_rows: int = MAX_ROWS
) -> SubmissionReport:
    """Validate submission files on disk against the dataset at ``data_root``.

    Args:
        files: one or two files; each file's split comes from its name
            (``prediction_dyadic.json``, ``prediction_multiparty.json`` or
            ``prediction_multi_party.json``) unless ``split`` is given (one file only).
        data_root: dataset root (see :func:`h2hmem.data.load_dataset`).

    Raises:
        FileNotFoundError: a file or the dataset root does not exist.
        ValueError: ``split`` given with more than one file.
        h2hmem.data.DatasetError: the dataset itself has errors.
    """
    paths = [Path(f) for f in files]
    if split is not None and len(paths) != 1:
        raise ValueError("--split applies to a single file; name the files prediction_<split>.json instead")
    for p in paths:
        if not p.is_file():
            raise FileNotFoundError(f"submission file {p} does not exist")
    dataset = load_dataset(data_root)
    ups = [UploadedFile(name=str(p), content=p.read_bytes(), split=split) for p in paths]
    return check_submission(ups, dataset, max_rows=max_rows)
