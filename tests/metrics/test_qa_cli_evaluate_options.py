"""``h2hmem evaluate``: option mistakes are named by their option, before any work; an unfinished
run is flagged (its scores cover the recorded questions only)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from h2hmem.cli import app

runner = CliRunner()


def test_negative_bootstrap_is_named_by_its_option(tmp_path):
    (tmp_path / "predictions.jsonl").write_text("")
    res = runner.invoke(app, ["evaluate", str(tmp_path), "--bootstrap", "-5"])
    assert res.exit_code == 2
    assert "--bootstrap must be >= 0, got -5" in res.output
    assert "n_boot" not in res.output


def test_zero_judge_concurrency_is_refused_by_the_option(tmp_path):
    (tmp_path / "predictions.jsonl").write_text("")
    res = runner.invoke(app, ["evaluate", str(tmp_path), "--metrics", "judge", "--concurrency", "0"])
    assert res.exit_code == 2
    assert "--concurrency" in res.output and "--judge-model" not in res.output


def _run_dir(tmp_path, selected: int):
    pred = {
        "question_id": "dyadic/dialogue1/session1/q0",
        "split": "dyadic",
        "dialogue": "dialogue1",
        "session": "session1",
        "task_type": "UPR",
        "main_category": "Memory Recall",
        "difficulty": "easy",
        "question": "Which city?",
        "gold": "Paris",
        "answer": "Paris",
        "method": "full-text",
    }
    (tmp_path / "predictions.jsonl").write_text(json.dumps(pred) + "\n")
    (tmp_path / "manifest.json").write_text(json.dumps({"method": "full-text", "counts": {"questions": selected}}))
    return tmp_path


def test_unfinished_run_is_flagged(tmp_path):
    res = runner.invoke(app, ["evaluate", str(_run_dir(tmp_path, 3)), "--bootstrap", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (
        "warning: the run is unfinished: 1 of 3 questions have a recorded answer, and these scores cover only those"
    ) in " ".join(res.output.split())


def test_finished_run_has_no_warning(tmp_path):
    res = runner.invoke(app, ["evaluate", str(_run_dir(tmp_path, 1)), "--bootstrap", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "unfinished" not in res.output
