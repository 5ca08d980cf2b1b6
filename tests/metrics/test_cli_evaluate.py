"""``h2hmem evaluate`` end to end: tables printed, files written, clear errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.testing import MockOpenAIServer

from .test_evaluate import judge_model, run  # noqa: F401  (fixture)

runner = CliRunner()


def test_evaluate_prints_tables_and_writes_scores(run, monkeypatch, tmp_path):  # noqa: F811
    d, qs = run
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=judge_model().responder) as srv:
        res = runner.invoke(
            app,
            [
                "evaluate",
                str(d),
                "--metrics",
                "lexical,evidence,judge",
                "--judge-base-url",
                srv.base_url,
                "--bootstrap",
                "100",
                "--quiet",
                "--no-ci",
                "--preset",
                "harmonized",
            ],
            env={"COLUMNS": "200"},
        )
    assert res.exit_code == 0, res.output
    for text in (
        "F1 (official, set-based)",
        "BLEU-1",
        "Exact match",
        "LLM judge score (openai:gpt-4o-mini, session mode)",
        "Evidence recall@5",
        "UPR  Unimodal Precise Recall",
        "Memory Application",
        "Weighted average (micro)",
        "Macro average",
        "multi-party",
        f"coverage {len(qs)}/{len(qs)} judged",
    ):
        assert text in res.output, text
    summary = json.loads((d / "scores" / "summary.json").read_text())
    # the sample's supporting-turn labels lie beside it (h2hmem-sample-labels): found by convention
    assert set(summary["metrics"]) == {"lexical", "evidence", "judge", "turn_evidence"}
    assert "Turn evidence" in res.output  # n/a here: the fixture's evidence names whole sessions
    assert summary["metrics"]["judge"]["usage"]["calls"] > 0


def test_evaluate_errors_are_clean(run, tmp_path):  # noqa: F811
    d, _ = run
    res = runner.invoke(app, ["evaluate", str(tmp_path)])
    assert res.exit_code == 2 and "no predictions.jsonl" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["evaluate", str(d), "--metrics", "lexical,rouge"])
    assert res.exit_code == 2 and "unknown metric rouge" in res.output
    res = runner.invoke(app, ["evaluate", str(d), "--metrics", "lexicl"], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and "did you mean lexical?" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["evaluate", str(d), "--data", str(tmp_path / "missing"), "--quiet"])
    assert res.exit_code == 2 and "error" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["evaluate", str(d), "--metrics", "judge", "--judge-model", "nonsense"])
    assert res.exit_code == 2 and "invalid model spec" in res.output


def test_a_judge_cache_that_cannot_be_opened_is_one_line(run, tmp_path, monkeypatch):  # noqa: F811
    import h2hmem.llm._cache as cache_module

    def unopenable(self, path, **kw):  # as on a read-only file system: SQLite cannot create the file
        raise OSError(f"request cache {path} cannot be opened: unable to open database file")

    monkeypatch.setattr(cache_module.RequestCache, "__init__", unopenable)
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    d, _ = run
    args = [
        "evaluate",
        str(d),
        "--metrics",
        "judge",
        "--judge-model",
        "openai:mock",
        "--judge-base-url",
        "http://127.0.0.1:9/v1",
    ]
    res = runner.invoke(app, args, env={"COLUMNS": "300"})
    out = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in out, out
    assert "--judge-model openai:mock: request cache" in out and "cannot be opened: unable to open database file" in out
    assert "(or judge without the cache: --no-cache)" in out


def test_cli_default_judge_is_the_official_one():
    import inspect

    from h2hmem.cli._evaluate import evaluate_cmd
    from h2hmem.metrics import DEFAULT_JUDGE_SPEC

    assert (
        inspect.signature(evaluate_cmd).parameters["judge_model"].default.default
        == DEFAULT_JUDGE_SPEC
        == "openai:gpt-4o-mini"
    )
