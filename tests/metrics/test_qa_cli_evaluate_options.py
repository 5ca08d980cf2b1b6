"""``h2hmem evaluate`` option mistakes are named by their option, before any work."""

from __future__ import annotations

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
