"""Selection: filters, the stratified sample, the run id and manifest, the CLI options."""

import json
from collections import Counter

import pytest
from fakes import fake_chat
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import load_dataset
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, Selection, SelectionError, SelectionWarning, run_benchmark, select_questions
from h2hmem.run._selection import stratified_sample


def _strata(qs):
    return Counter((q.split, q.task_type.abbr) for q in qs)


def test_sample_40_seed_1_is_stable_and_covers_every_stratum(sample_root):
    ds = load_dataset(sample_root, "all")
    everything = select_questions(ds, None)
    first = select_questions(ds, None, Selection(sample=40, seed=1))
    again = select_questions(load_dataset(sample_root, "all"), None, Selection(sample=40, seed=1))
    assert len(first) == 40 and [q.id for q in first] == [q.id for q in again]
    assert set(_strata(first)) == set(_strata(everything))  # all 18 non-empty split × task type strata
    assert len(_strata(everything)) == 18
    # dataset order is kept
    order = {q.id: i for i, q in enumerate(everything)}
    assert [order[q.id] for q in first] == sorted(order[q.id] for q in first)
    other = select_questions(ds, None, Selection(sample=40, seed=2))
    assert [q.id for q in other] != [q.id for q in first]


def test_allocation_is_proportional_with_one_per_stratum():
    pool = (
        [{"id": f"a{i}", "split": "dyadic", "task_type": "UPR"} for i in range(50)]
        + [{"id": f"b{i}", "split": "dyadic", "task_type": "TR"} for i in range(10)]
        + [{"id": "c0", "split": "multi-party", "task_type": "AR"}]
    )
    got = Counter(x["task_type"] for x in stratified_sample(pool, 7, seed=0))
    # shares 7·50/61 = 5.74, 7·10/61 = 1.15, 7·1/61 = 0.11 → floors 5, 1, 1 (minimum one)
    assert got == {"UPR": 5, "TR": 1, "AR": 1}
    with pytest.raises(SelectionError, match="smaller than the 3 non-empty"):
        stratified_sample(pool, 2, seed=0)


def test_filters_combine(sample_root):
    ds = load_dataset(sample_root, "all")
    sel = Selection(task_types=["Temporal Reasoning", "cd"], difficulties=["hard", "medium"], dialogues=["dialogue1"])
    got = select_questions(ds, None, sel)
    assert got and all(
        q.task_type.abbr in ("TR", "CD") and q.difficulty in ("hard", "medium") and q.dialogue == "dialogue1"
        for q in got
    )
    expected = [
        q
        for q in select_questions(ds, None)
        if q.task_type.abbr in ("TR", "CD") and q.difficulty in ("hard", "medium") and q.dialogue == "dialogue1"
    ]
    assert [q.id for q in got] == [q.id for q in expected]
    ids = [q.id for q in expected[:2]]
    assert [q.id for q in select_questions(ds, None, Selection(question_ids=ids, task_types=["TR", "CD"]))] == ids
    # the limit comes last
    assert [q.id for q in select_questions(ds, 1, sel)] == [expected[0].id]
    with pytest.raises(SelectionError, match="question id.*not in the data: nope"):
        select_questions(ds, None, Selection(question_ids=["nope"]))
    with pytest.raises(ValueError, match="unknown task type"):
        Selection(task_types=["XYZ"])


def test_run_records_the_selection_in_run_id_and_manifest(sample_root, tmp_path):
    sel = Selection(sample=20, seed=3, task_types=["UPR", "CRR", "AR"])
    cfg = RunConfig(data_root=sample_root, method="full-text", out_dir=tmp_path, use_cache=False, selection=sel)
    summary = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert "tt-UPR-CRR-AR_s20-seed3" in summary.run_dir.name
    preds = read_predictions(summary.run_dir)
    assert len(preds) == 20 and {p.task_type for p in preds} <= {"UPR", "CRR", "AR"}
    m = json.loads((summary.run_dir / "manifest.json").read_text())
    assert m["identity"]["selection"] == {"task_types": ["UPR", "CRR", "AR"], "sample": 20, "seed": 3}
    assert m["config"]["selection"]["sample"] == 20 and m["counts"]["questions"] == 20


def test_cli_selection_options_and_id_file(sample_root, tmp_path):
    ds = load_dataset(sample_root, "all")
    ids = [q.id for q in select_questions(ds, None)[:3]]
    idfile = tmp_path / "ids.txt"
    idfile.write_text("# chosen\n" + "\n".join(ids[1:]) + "\n")
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--data",
            str(sample_root),
            "--method",
            "full-text",
            "--out",
            str(tmp_path),
            "--question-id",
            ids[0],
            "--question-id",
            f"@{idfile}",
            "--dry-run",
            "--quiet",
            "--model",
            "openai:gpt-4.1-nano",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--no-cache",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "3 questions selected" in res.output
    bad = CliRunner().invoke(app, ["run", "--data", str(sample_root), "--task-type", "XYZ", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "--task-type" in bad.output and "unknown task type" in bad.output


def test_a_selection_of_nothing_is_refused_and_a_sample_above_the_pool_is_said(sample_root, tmp_path):
    ds = load_dataset(sample_root, "multi-party")
    # AR questions of the multi-party split are none of them hard: the run would be an empty "complete" one
    assert not [q for q in ds.questions if q.task_type.abbr == "AR" and q.difficulty == "hard"]
    with pytest.raises(
        SelectionError,
        match=r"the selection \{'task_types': \['AR'\], 'difficulties': \['hard'\]\} matches no question",
    ):
        select_questions(ds, None, Selection(task_types=["AR"], difficulties=["hard"]))
    res = CliRunner().invoke(
        app,
        ["run", "--data", str(sample_root), "--split", "multi-party", "--task-type", "AR", "--difficulty", "hard",
         "--out", str(tmp_path / "runs"), "--method", "full-text"],
    )  # fmt: skip
    assert res.exit_code == 2 and "matches no question" in res.output, res.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    n_kr = sum(q.task_type.abbr == "KR" for q in ds.questions)
    with pytest.warns(SelectionWarning, match=f"--sample 50 is more than the {n_kr} questions the filters leave"):
        assert len(select_questions(ds, None, Selection(task_types=["KR"], sample=50))) == n_kr
