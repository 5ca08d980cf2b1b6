from __future__ import annotations

import json
from pathlib import Path

from lb_helpers import make_prediction

from h2hmem.data import TaskType, image_field
from h2hmem.leaderboard import export_submission, submission_row
from h2hmem.leaderboard._format import split_from_name


def test_export_writes_official_rows(mixed_run: Path, sample_dataset, sample_root: Path):
    files = export_submission(mixed_run)
    assert [f.name for f in files] == ["prediction_dyadic.json", "prediction_multiparty.json"]
    assert all(f.parent == mixed_run / "submission" for f in files)
    dy = json.loads(files[0].read_text(encoding="utf-8"))["predictions"]
    mp = json.loads(files[1].read_text(encoding="utf-8"))["predictions"]
    assert len(dy) == 289 and len(mp) == 152  # the sample's question counts per split
    assert set(dy[0]) == {
        "question_id",
        "question_text",
        "question_image",
        "system_answer",
        "original_answer",
        "category",
    }
    # dataset order: dialogue5 before dialogue10, session2 before session10
    ids = [r["question_id"] for r in dy]
    assert ids.index("dyadic/dialogue5/session0/q0") < ids.index("dyadic/dialogue10/session0/q0")
    assert ids.index("dyadic/dialogue10/session2/q0") < ids.index("dyadic/dialogue10/session10/q0")
    by_id = {q.id: q for q in sample_dataset.questions}
    # failed answers (every 7th question) are exported as ""
    qs = sample_dataset.questions
    failed = qs[6]
    row = next(r for r in dy + mp if r["question_id"] == failed.id)
    assert row["system_answer"] == "" and row["original_answer"] == failed.gold
    for r in dy + mp:
        q = by_id[r["question_id"]]
        assert r["category"] == q.task_type.value and r["question_text"] == q.text


def test_question_image_is_written_as_in_the_dataset(mixed_run: Path, sample_root: Path):
    """Every exported question_image equals the raw question.image of the dataset file."""
    files = export_submission(mixed_run, mixed_run / "out")
    rows = {r["question_id"]: r for f in files for r in json.loads(f.read_text())["predictions"]}
    checked = qualified = 0
    for qf in sorted(sample_root.glob("*/dialogue*/scenes/session*/questions.json")):
        split, dialogue, session = qf.parts[-5], qf.parts[-4], qf.parts[-2]
        for i, raw in enumerate(json.loads(qf.read_text(encoding="utf-8"))["questions"]):
            assert rows[f"{split}/{dialogue}/{session}/q{i}"]["question_image"] == raw["question"]["image"]
            checked += 1
            qualified += "/" in raw["question"]["image"]
    assert checked == 441 and qualified == 5  # 5 session0 questions name "sessionK/<file>"


def test_image_field_forms():
    assert image_field("session3", ["session3/2.png"]) == "2.png"
    assert image_field("session0", ["session3/2.png"]) == "session3/2.png"
    assert image_field("session4", ["session2/1.jpg"]) == "session2/1.jpg"  # another session's image stays qualified
    assert image_field("session4", ["session4/1.jpg", "session4/2.jpg"]) == "1.jpg,2.jpg"
    assert image_field("session4", []) == ""


def test_split_from_name():
    assert split_from_name("prediction_dyadic.json") == "dyadic"
    assert split_from_name("prediction_multiparty.json") == "multi-party"
    assert split_from_name("dir/prediction_multi_party.json") == "multi-party"
    assert split_from_name("My-Run_Multi-Party.JSON") == "multi-party"
    assert split_from_name("predictions.json") is None


def test_submission_row_category_from_abbreviation(sample_dataset):
    q = next(q for q in sample_dataset.questions if q.task_type is TaskType.MCR)
    row = submission_row(make_prediction(q, "because it rained"))
    assert row["category"] == "Multimodal Causal Reasoning" and row["system_answer"] == "because it rained"
