"""Malformed leaderboard submission files through ``h2hmem submission validate``: each gives a
clear error or warning naming the file, the row and the field, never a traceback.

Every case starts from rows copied from a small synthetic dataset (a valid submission) and breaks
one thing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from relkit import cli, make_dataset

from h2hmem.data import load_dataset

DY = "prediction_dyadic.json"
MP = "prediction_multiparty.json"


@pytest.fixture(scope="module")
def dataset_root(tmp_path_factory) -> Path:
    return make_dataset(
        tmp_path_factory.mktemp("subdata") / "data", dialogues=1, sessions=2, questions_per_session=2
    ).root


def valid_rows(root: Path, split: str) -> list[dict]:
    from h2hmem.data import image_field

    return [
        {
            "question_text": q.text,
            "question_image": image_field(q.session, [i.key for i in q.images]),
            "system_answer": "an answer",
            "original_answer": q.gold,
            "category": q.task_type.value,
            "question_id": q.id,
        }
        for q in load_dataset(root).questions
        if q.split == split
    ]


Files = dict[str, bytes]


def _rows(fn: Callable[[list[dict]], object]) -> Callable[[Files, list[dict], list[dict]], None]:
    """Change the dyadic rows in place, then write both files."""

    def mutate(files: Files, dy: list[dict], mp: list[dict]) -> None:
        fn(dy)
        files[DY] = json.dumps({"predictions": dy}, ensure_ascii=False).encode()

    return mutate


def _dy_bytes(content: bytes):
    def mutate(files: Files, dy, mp) -> None:
        files[DY] = content

    return mutate


def _rename(new: str):
    def mutate(files: Files, dy, mp) -> None:
        files[new] = files.pop(DY)

    return mutate


def _set(i: int, key: str, value):
    def fn(rows: list[dict]) -> None:
        rows[i][key] = value

    return fn


def _del(i: int, key: str):
    def fn(rows: list[dict]) -> None:
        del rows[i][key]

    return fn


def _swap_in_mp_row(files: Files, dy, mp) -> None:
    dy.append(dict(mp[0]))
    files[DY] = json.dumps({"predictions": dy}).encode()


@dataclass
class Case:
    id: str
    mutate: Callable
    severity: str
    code: str
    where: str
    """``<file>`` or ``<file> predictions[i].field`` as the report prints it."""
    text: str = ""


CASES = [
    Case(
        "invalid-json",
        _dy_bytes(b'{"predictions": [\n {"question_text": }]}'),
        "error",
        "invalid-json",
        DY,
        "line 2 column 20",
    ),
    Case("zero-byte", _dy_bytes(b""), "error", "invalid-json", DY, "line 1"),
    Case("not-utf8", _dy_bytes('{"predictions": ["é"]}'.encode("latin-1")), "error", "not-utf8", DY, "byte"),
    Case("top-level-list", _dy_bytes(b"[]"), "error", "invalid-field", DY, "must hold a JSON object"),
    Case(
        "predictions-missing", _dy_bytes(b'{"answers": []}'), "error", "invalid-field", f"{DY}.predictions", "required"
    ),
    Case(
        "predictions-not-a-list",
        _dy_bytes(b'{"predictions": "all of them"}'),
        "error",
        "invalid-field",
        f"{DY}.predictions",
        "list",
    ),
    Case(
        "row-is-a-string",
        _rows(lambda r: r.insert(0, "just text")),
        "error",
        "invalid-field",
        f"{DY} predictions[0]",
        "dictionary",
    ),
    Case(
        "missing-system-answer",
        _rows(_del(1, "system_answer")),
        "error",
        "invalid-field",
        f"{DY} predictions[1].system_answer",
        "required",
    ),
    Case(
        "answer-is-number",
        _rows(_set(0, "system_answer", 42)),
        "error",
        "invalid-field",
        f"{DY} predictions[0].system_answer",
        "got int",
    ),
    Case(
        "answer-too-long",
        _rows(_set(0, "system_answer", "x" * 20_001)),
        "error",
        "invalid-field",
        f"{DY} predictions[0].system_answer",
        "20000",
    ),
    Case(
        "unknown-question-text",
        _rows(lambda r: r.append({**r[0], "question_text": "Who won?", "question_id": None})),
        "error",
        "unmatched",
        f"{DY} predictions[",
        "Who won?",
    ),
    Case(
        "duplicate-row",
        _rows(lambda r: r.append(dict(r[0]))),
        "error",
        "duplicate",
        f"{DY} predictions[",
        "already answered",
    ),
    Case(
        "unknown-question-id",
        _rows(_set(0, "question_id", "dyadic/dialogue7/session1/q0")),
        "error",
        "unknown-question-id",
        f"{DY} predictions[0].question_id",
        "dialogue7",
    ),
    Case("id-of-other-split", _swap_in_mp_row, "error", "wrong-split", f"{DY} predictions[", "multi-party"),
    Case("unknown-file-name", _rename("answers.json"), "error", "unknown-split", "answers.json", "split"),
    Case("too-many-rows", _rows(lambda r: r.extend([{}] * 10_001)), "error", "too-many-rows", DY, "10000"),
    Case("empty-predictions", _rows(lambda r: r.clear()), "warning", "empty-file", DY, "no predictions"),
    Case(
        "gold-mismatch",
        _rows(_set(0, "original_answer", "something else")),
        "warning",
        "gold-mismatch",
        f"{DY} predictions[0].original_answer",
        "ignored",
    ),
    Case(
        "category-mismatch",
        _rows(_set(0, "category", "Answer Refusal")),
        "warning",
        "category-mismatch",
        f"{DY} predictions[0].category",
        "Answer Refusal",
    ),
    Case(
        "unknown-category",
        _rows(_set(0, "category", "Vibes")),
        "warning",
        "unknown-category",
        f"{DY} predictions[0].category",
        "Vibes",
    ),
    Case(
        "surrogate-in-answer",
        lambda files, dy, mp: files.__setitem__(
            DY, json.dumps({"predictions": [{**dy[0], "system_answer": "caf\udce9"}, *dy[1:]]}).encode()
        ),
        "error",
        "invalid-field",
        f"{DY} predictions[0].system_answer",
        "unicode",
    ),
]


def _write(tmp_path: Path, root: Path, case: Case) -> list[Path]:
    dy, mp = valid_rows(root, "dyadic"), valid_rows(root, "multi-party")
    files: Files = {DY: json.dumps({"predictions": dy}).encode(), MP: json.dumps({"predictions": mp}).encode()}
    case.mutate(files, dy, mp)
    out = []
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        out.append(tmp_path / name)
    return out


def test_the_unbroken_submission_is_valid(tmp_path, dataset_root):
    paths = _write(tmp_path, dataset_root, Case("none", lambda *a: None, "ok", "", DY))
    res = cli("submission", "validate", *paths, "--data", dataset_root)
    assert res.code == 0 and "VALID" in res.output and "INVALID" not in res.output, res.output
    total = len(load_dataset(dataset_root).questions)
    assert f"{total} of {total} rows matched, 0 questions missing" in " ".join(res.output.split())


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_submission_validate_names_file_row_and_field(tmp_path, dataset_root, case):
    paths = _write(tmp_path, dataset_root, case)
    res = cli("submission", "validate", *paths, "--data", dataset_root, "--show", "50")
    assert "Traceback" not in res.output, res.output
    assert res.code == (1 if case.severity == "error" else 0), res.output
    if case.severity != "ok":
        where = case.where.replace(DY, str(tmp_path / DY)).replace("answers.json", str(tmp_path / "answers.json"))
        line = next((l for l in res.output.splitlines() if f"[{case.code}]" in l and where in l), None)
        assert line is not None, f"no line with {where!r} and [{case.code}] in:\n{res.output}"
        assert case.text in line, line

    as_json = cli("submission", "validate", *paths, "--data", dataset_root, "--json")
    assert "Traceback" not in as_json.output and as_json.code == res.code, as_json.output
    report = json.loads(as_json.output)
    if case.severity == "ok":
        assert report["ok"] and not report["problems"], report["problems"]
    else:
        assert any(p["code"] == case.code and p["severity"] == case.severity for p in report["problems"])


def test_missing_submission_file_is_a_clear_error(tmp_path, dataset_root):
    res = cli("submission", "validate", tmp_path / DY, "--data", dataset_root)
    assert res.code == 2 and "does not exist" in res.output and "Traceback" not in res.output, res.output
