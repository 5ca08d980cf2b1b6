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


def test_a_run_still_being_written_is_flagged(tmp_path):
    """While another writer holds the run's lock (here: this process, on its own handle, as a running
    `h2hmem run` holds it) the manifest has no counts yet; evaluate names the writer."""
    import os

    from h2hmem.records import RunStore

    run_dir = _run_dir(tmp_path, 3)
    (run_dir / "manifest.json").write_text(json.dumps({"method": "full-text"}))  # as while the first invocation runs
    with RunStore(run_dir).locked() as holder:
        assert holder is None
        res = runner.invoke(app, ["evaluate", str(run_dir), "--bootstrap", "0", "--quiet"])
    out = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert f"warning: the run is still being written (pid {os.getpid()}); answers recorded so far: 1," in out
    # the lock released: the same run is now one whose process ended without recording an end
    res = runner.invoke(app, ["evaluate", str(run_dir), "--bootstrap", "0", "--quiet"])
    assert "warning: the run never finished (its process ended without recording an end)" in " ".join(
        res.output.split()
    )
    assert RunStore(run_dir).writer() is None and (run_dir / ".lock").read_text() == f"pid {os.getpid()}"
