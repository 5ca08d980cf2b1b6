from __future__ import annotations

import json
from pathlib import Path

import pytest

from h2hmem.data import TaskType
from h2hmem.leaderboard import UploadedFile, check_submission, export_submission, validate_submission


def _files(run: Path) -> list[Path]:
    return export_submission(run)


def _rows(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["predictions"]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps({"predictions": rows}, ensure_ascii=False), encoding="utf-8")
    return path


def test_exported_files_validate_cleanly(mixed_run, sample_root):
    r = validate_submission(_files(mixed_run), sample_root)
    assert r.ok and r.problems == []
    assert r.rows == 441 and len(r.matched) == 441 and r.missing == []
    assert r.expected == {"dyadic": 289, "multi-party": 152}
    assert r.files == {
        str(mixed_run / "submission" / "prediction_dyadic.json"): "dyadic",
        str(mixed_run / "submission" / "prediction_multiparty.json"): "multi-party",
    }


def test_official_rows_without_ids_match_by_text_and_image(mixed_run, sample_root, tmp_path):
    files = _files(mixed_run)
    out = []
    for f in files:
        rows = _rows(f)
        for r in rows:
            del r["question_id"]
        name = "prediction_multi_party.json" if "multi" in f.name else f.name  # the other official spelling
        out.append(_write(tmp_path / name, rows))
    r = validate_submission(out, sample_root)
    assert r.ok and len(r.matched) == 441
    # the join recovers the exact ids the exporter wrote
    exported = {
        (f.name.replace("multiparty", "multi_party"), i): row["question_id"]
        for f in files
        for i, row in enumerate(_rows(f))
    }
    for m in r.matched:
        assert exported[(Path(m.file).name, m.row)] == m.question_id


def test_schema_errors_name_row_and_field(mixed_run, sample_root, tmp_path):
    rows = _rows(_files(mixed_run)[0])
    rows[3]["system_answer"] = 42
    del rows[5]["category"]
    rows[7]["question_text"] = None
    f = _write(tmp_path / "prediction_dyadic.json", rows)
    r = validate_submission([f], sample_root)
    assert not r.ok
    errs = {(e.row, e.field): e for e in r.errors}
    assert set(errs) == {(3, "system_answer"), (5, "category"), (7, "question_text")}
    assert errs[(3, "system_answer")].code == "invalid-field"
    assert "valid string" in errs[(3, "system_answer")].message and "got int" in errs[(3, "system_answer")].message
    assert str(errs[(5, "category")]).startswith(f"{f} predictions[5].category: Field required")
    assert len(r.matched) == 289 - 3  # the bad rows are not matched; the others are


def test_unmatched_duplicate_and_missing(mixed_run, sample_root, tmp_path):
    rows = _rows(_files(mixed_run)[0])
    for r_ in rows:
        del r_["question_id"]
    rows[0]["question_text"] = "What is the airspeed velocity of an unladen swallow?"
    rows.append(dict(rows[1]))  # the same question twice
    del rows[2:4]  # two questions missing
    f = _write(tmp_path / "prediction_dyadic.json", rows)
    r = validate_submission([f], sample_root)
    codes = r.counts()
    assert codes["error"] == {"unmatched": 1, "duplicate": 1}
    assert codes["warning"] == {"missing": 1, "missing-file": 1}
    assert len(r.missing) == 3  # rows[0] unmatched + two deleted
    dup = next(e for e in r.errors if e.code == "duplicate")
    assert dup.row == len(rows) - 1 and "predictions[1]" in dup.message


def test_gold_and_category_disagreements_are_warnings(mixed_run, sample_root, tmp_path):
    rows = _rows(_files(mixed_run)[1])
    rows[0]["original_answer"] = "something else"
    rows[1]["category"] = "Memory Magic"
    other = next(t for t in TaskType if t.value != rows[2]["category"])
    rows[2]["category"] = other.value
    mcr = next(i for i, x in enumerate(rows) if x["category"] == TaskType.MCR.value)
    rows[mcr]["category"] = "Multimodal Casual Reasoning"  # an alias from the official template
    f = _write(tmp_path / "prediction_multiparty.json", rows)
    r = validate_submission([f], sample_root)
    assert r.ok and len(r.matched) == 152
    assert r.counts()["warning"] == {
        "gold-mismatch": 1,
        "unknown-category": 1,
        "category-mismatch": 1,
        "missing-file": 1,
    }


def test_bad_files(sample_root, tmp_path, sample_dataset):
    r = check_submission([UploadedFile("prediction_dyadic.json", b"{not json")], sample_dataset)
    assert [(e.code, e.message) for e in r.errors] == [
        ("invalid-json", "invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes")
    ]
    r = check_submission([UploadedFile("prediction_dyadic.json", b'{"rows": []}')], sample_dataset)
    assert [(e.code, e.field, e.message) for e in r.errors] == [("invalid-field", "predictions", "Field required")]
    r = check_submission([UploadedFile("preds.json", b'{"predictions": []}')], sample_dataset)
    assert r.errors[0].code == "unknown-split"
    r = check_submission([UploadedFile("x.json", b'{"predictions": []}', split="dyadic")], sample_dataset, max_rows=0)
    assert r.ok and r.counts()["warning"] == {"empty-file": 1, "missing-file": 1, "missing": 1}
    big = json.dumps({"predictions": [{}] * 3}).encode()
    r = check_submission([UploadedFile("prediction_dyadic.json", big)], sample_dataset, max_rows=2)
    assert [e.code for e in r.errors] == ["too-many-rows"]
    r = check_submission([UploadedFile("prediction_dyadic.json", b"\xff\xfe")], sample_dataset)
    assert r.errors[0].code == "not-utf8"
    r = check_submission(
        [UploadedFile("prediction_dyadic.json", b'{"predictions": []}')], sample_dataset, require_both=True
    )
    assert [e.code for e in r.errors] == ["missing-file"] and "multi-party" in r.errors[0].message


def test_ids_are_checked(mixed_run, sample_root, tmp_path):
    rows = _rows(_files(mixed_run)[0])
    rows[0]["question_id"] = "dyadic/dialogue99/session1/q0"
    rows[1]["question_id"] = "multi-party/dialogue1/session1/q0"
    rows[2]["question_text"] = "A different question?"
    f = _write(tmp_path / "prediction_dyadic.json", rows)
    r = validate_submission([f], sample_root)
    assert [(e.row, e.code) for e in r.errors] == [
        (0, "unknown-question-id"),
        (1, "wrong-split"),
        (2, "id-text-mismatch"),
    ]


def test_split_option(mixed_run, sample_root, tmp_path):
    rows = _rows(_files(mixed_run)[1])
    f = _write(tmp_path / "mine.json", rows)
    assert validate_submission([f], sample_root, split="multi-party").ok
    with pytest.raises(ValueError, match="single file"):
        validate_submission([f, f], sample_root, split="dyadic")
    with pytest.raises(FileNotFoundError, match="nope.json"):
        validate_submission([tmp_path / "nope.json"], sample_root)


def test_swapped_files_are_named(mixed_run, sample_root, tmp_path):
    files = _files(mixed_run)
    rows = _rows(files[1])[:2]
    for r_ in rows:
        del r_["question_id"]
    f = _write(tmp_path / "prediction_dyadic.json", rows)  # multi-party rows in the dyadic file
    r = validate_submission([f], sample_root)
    assert [(e.code, e.row) for e in r.errors] == [("wrong-split", 0), ("wrong-split", 1)]
    assert "this is a multi-party question, not dyadic: were the files swapped?" in r.errors[0].message
