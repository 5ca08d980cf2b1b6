"""The README's `--retry-failed` flow reads without a duplicate-prediction warning: a run with failed
questions, `run --retry-failed`, then `evaluate`, `report`, `runs list` and the viewer. The
superseded failed lines are the documented normal case; a later record replacing an *answer*
(two writers, files joined by hand) still warns."""

from __future__ import annotations

import warnings

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import load_dataset, synthesize_dataset
from h2hmem.llm import Usage
from h2hmem.records import DuplicatePredictionsWarning, read_predictions
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import ScriptedChatModel, When
from h2hmem.view import create_viewer_app

FAIL_ON = "how"


def answer_model(fail_on: str | None) -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            When(
                RuntimeError("scripted outage"), match=lambda r: bool(fail_on) and fail_on in (r.question or "").lower()
            )
        ],
        default="an answer",
        spec="fake:chat",
        usage=Usage(calls=1),
    )


@pytest.mark.filterwarnings("error::h2hmem.records.DuplicatePredictionsWarning")
def test_readme_retry_failed_flow_prints_no_duplicate_warning(tmp_path):
    root = tmp_path / "ds"
    synthesize_dataset(root)
    cfg = RunConfig(data_root=root, method="full-text", out_dir=tmp_path / "runs", use_cache=False)
    first = run_benchmark(cfg, chat_model=answer_model(FAIL_ON), progress=False)
    n_failed = sum(FAIL_ON in q.text.lower() for q in load_dataset(root).questions)
    assert 0 < first.failed == n_failed
    retry = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=answer_model(None), progress=False)
    assert retry.failed == 0

    d = cfg.run_dir
    # the store keeps the failures and appends their retries (append-only, crash-safe) ...
    n_lines = len((d / "predictions.jsonl").read_text().splitlines())
    assert n_lines == first.questions + n_failed
    # ... and every reader takes the retry, silently
    preds = read_predictions(d)
    assert len(preds) == first.questions and not any(p.failed for p in preds)

    cli = CliRunner()
    env = {"COLUMNS": "200"}
    for args in (
        ["evaluate", str(d), "--metrics", "lexical,evidence", "--bootstrap", "0", "--quiet"],
        ["report", str(d), "--bootstrap", "0"],
        ["runs", "list", "--out", str(cfg.out_dir)],
    ):
        res = cli.invoke(app, args, env=env)
        assert res.exit_code == 0, (args, res.output)
        assert "DuplicatePredictionsWarning" not in res.output and "more than one record" not in res.output
    client = TestClient(create_viewer_app([d]))
    for path in ("/", f"/runs/{d.name}"):
        assert client.get(path).status_code == 200


def test_a_replaced_answer_still_warns(tmp_path):
    """Two records answering one question (not a retried failure) are not what h2hmem writes."""
    line = (
        '{"question_id": "dyadic/dialogue1/session1/q0", "split": "dyadic", "dialogue": "dialogue1", '
        '"session": "session1", "task_type": "UPR", "main_category": "Memory Recall", "difficulty": "easy", '
        '"question": "q", "gold": "g", "answer": "%s", "error": %s}\n'
    )
    p = tmp_path / "predictions.jsonl"
    p.write_text(line % ("", '"RuntimeError: x"') + line % ("first", "null"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicatePredictionsWarning)
        assert read_predictions(p)[0].answer == "first"  # a failure, then its retry: silent
    p.write_text(line % ("first", "null") + line % ("second", "null"))
    with pytest.warns(DuplicatePredictionsWarning, match="1 question"):
        assert read_predictions(p)[0].answer == "second"
