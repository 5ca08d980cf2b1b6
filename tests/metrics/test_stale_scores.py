"""Scores that follow the predictions: the stale-judge sequence (run with failed answers → evaluate
lexical,judge → run --retry-failed → evaluate with and without the judge), the report headline,
a judge whose replies are all unparseable (exit 1, one line naming the reason), and the README's
`--retry-failed` flow (evaluate, report, runs list, viewer) reading without a duplicate-prediction
warning: superseded failed lines are the documented normal case, a replaced answer still warns."""

from __future__ import annotations

import json
import warnings

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import load_dataset, synthesize_dataset
from h2hmem.llm import Usage, load_chat_model
from h2hmem.metrics import evaluate_run
from h2hmem.records import DuplicatePredictionsWarning, prediction_hash, read_predictions
from h2hmem.report._runs import load_run
from h2hmem.report._scores import primary_metric
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel, When
from h2hmem.view import create_viewer_app

from .judge_helpers import ScriptedJudge

FAIL_ON = "how"  # the scripted answer model fails the questions whose text holds this word


def answer_model(fail_on: str | None) -> ScriptedChatModel:
    """Answers "an answer"; raises RuntimeError for the questions whose text holds ``fail_on``."""
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


@pytest.fixture()
def failed_run(tmp_path):
    root = tmp_path / "ds"
    synthesize_dataset(root)
    cfg = RunConfig(data_root=root, method="full-text", out_dir=tmp_path / "runs", use_cache=False)
    summary = run_benchmark(cfg, chat_model=answer_model(FAIL_ON), progress=False)
    n_failed = sum(FAIL_ON in q.text.lower() for q in load_dataset(root).questions)
    assert 0 < summary.failed == n_failed < summary.questions
    return cfg, summary.questions, n_failed


def _judge(srv):
    return load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)


@pytest.mark.filterwarnings("error::h2hmem.records.DuplicatePredictionsWarning")
def test_stale_judge_sequence(failed_run):
    cfg, n, n_failed = failed_run
    d = cfg.run_dir
    with MockOpenAIServer(responder=ScriptedJudge()) as srv:  # every item: score 1
        first = evaluate_run(d, ["lexical", "judge"], judge_model=_judge(srv), n_boot=0)
    cov = first["metrics"]["judge"]["coverage"]
    assert cov["failed_answers"] == n_failed and cov["judged"] == n and first["metrics"]["judge"]["stale"] is None
    judged = [json.loads(x) for x in (d / "scores" / "judge.jsonl").read_text().splitlines()]
    preds = {p.question_id: p for p in read_predictions(d)}
    assert all(r["prediction_hash"] == prediction_hash(preds[r["question_id"]]) for r in judged)
    assert primary_metric([load_run(d, n_boot=0)]).source == "judge"

    retry = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=answer_model(None), progress=False)
    assert retry.failed == 0 and retry.answered_now == n_failed
    # the retried failures are superseded by their redone answers: the documented case, read silently
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicatePredictionsWarning)
        assert len(read_predictions(d)) == n

    # the report, before any evaluate: re-scored offline, the judge section stale, headline F1
    run = load_run(d, n_boot=0)
    stale = run.summary.metrics.judge.stale
    assert (stale.missing, stale.dropped) == (n_failed, n_failed) and stale.reason
    assert primary_metric([run]).source == "lexical" and any("STALE" in note for note in run.notes)

    # evaluate without the judge: the changed answers' judgments are dropped, the section is stale
    second = evaluate_run(d, ["lexical"], n_boot=0)
    j = second["metrics"]["judge"]
    assert j["stale"]["missing"] == n_failed  # (the report's re-scoring already dropped the changed lines)
    assert j["coverage"]["failed_answers"] == 0 and j["coverage"]["judged"] == n - n_failed
    assert j["coverage"]["total"] == n
    lex = [json.loads(x) for x in (d / "scores" / "lexical.jsonl").read_text().splitlines()]
    assert not any(r["failed"] for r in lex) and len(lex) == n
    res = CliRunner().invoke(
        app, ["evaluate", str(d), "--metrics", "lexical", "--quiet", "--bootstrap", "0"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0 and "STALE" in res.output and "the judge scores are stale" in res.output

    # evaluate with the judge: only the fixed answers are judged again, nothing is stale
    with MockOpenAIServer(responder=ScriptedJudge()) as srv:
        third = evaluate_run(d, ["lexical", "judge"], judge_model=_judge(srv), n_boot=0)
        asked = [json.dumps(r) for r in srv.requests]
    j = third["metrics"]["judge"]
    assert j["stale"] is None and j["coverage"] == {
        "judged": n,
        "total": n,
        "errors": 0,
        "failed_answers": 0,
        "reasons": {},
    }
    # re-judged: exactly the fixed answers were sent to the judge, the others were kept
    fixed = [q.text for q in load_dataset(cfg.data_root).questions if FAIL_ON in q.text.lower()]
    sent = [t for t in fixed if any(json.dumps(t)[1:-1] in body for body in asked)]
    assert sent == fixed and sum(body.count("Question: ") for body in asked) == n_failed
    assert primary_metric([load_run(d, n_boot=0)]).source == "judge"


def test_unparseable_judge_exits_1_naming_the_reason(failed_run, monkeypatch, tmp_path):
    cfg, n, n_failed = failed_run
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=lambda body: "I think they are all fine.") as srv:
        res = CliRunner().invoke(
            app,
            [
                "evaluate",
                str(cfg.run_dir),
                "--metrics",
                "judge",
                "--judge-base-url",
                srv.base_url,
                "--quiet",
                "--bootstrap",
                "0",
                "--no-cache",
            ],
            env={"COLUMNS": "300"},
        )
    assert res.exit_code == 1, res.output
    closing = [line for line in res.output.splitlines() if line.startswith("judge:")]
    unjudged = n - n_failed  # failed answers are scored 0 without a call: not a reason to fail
    assert closing == [
        f"judge: {unjudged} of {n} questions unjudged (reply not valid JSON: {unjudged}); see "
        "scores/judge.jsonl (error), then run the same `h2hmem evaluate --metrics judge` again to "
        "judge only those"
    ]
    summary = json.loads((cfg.run_dir / "scores" / "summary.json").read_text())
    assert summary["metrics"]["judge"]["coverage"]["reasons"] == {"reply not valid JSON": unjudged}


@pytest.mark.parametrize("mode", ["session", "question"])
def test_rerun_after_unusable_judge_replies_asks_the_judge_again(failed_run, monkeypatch, tmp_path, mode):
    # with the request cache on, the rerun the closing line advises used to replay the cached
    # unusable replies (0 calls) and judge nothing, however often it was run
    cfg, n, n_failed = failed_run
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    unjudged = n - n_failed
    args = ["evaluate", str(cfg.run_dir), "--metrics", "judge", "--judge-mode", mode, "--quiet", "--bootstrap", "0"]
    with MockOpenAIServer(responder=lambda body: "I think they are all fine.") as srv:
        res = CliRunner().invoke(app, [*args, "--judge-base-url", srv.base_url])
    assert res.exit_code == 1 and f"judge: {unjudged} of {n} questions unjudged" in res.output, res.output
    rounds = [json.loads(x)["attempt"] for x in (cfg.run_dir / "scores" / "judge.jsonl").read_text().splitlines()]
    assert sorted(set(rounds)) == [0]
    # the dry run of that rerun counts what it will pay: the next round misses the cache
    from h2hmem.metrics import estimate_judge

    est = estimate_judge(cfg.run_dir, "openai:gpt-4o-mini", mode=mode, base_url="http://127.0.0.1:9/v1")
    assert est.stages["judge"].calls > 0 and est.stages["judge"].cached_calls == 0
    with MockOpenAIServer(responder=ScriptedJudge()) as srv:  # the judge is fixed
        res = CliRunner().invoke(app, [*args, "--judge-base-url", srv.base_url])
        calls = len(srv.requests)
    assert res.exit_code == 0, res.output
    j = json.loads((cfg.run_dir / "scores" / "summary.json").read_text())["metrics"]["judge"]
    assert j["coverage"]["judged"] == n and calls > 0
    records = [json.loads(x) for x in (cfg.run_dir / "scores" / "judge.jsonl").read_text().splitlines()]
    assert {r["attempt"] for r in records if not r["failed"]} == {1} and all(not r["cached"] for r in records)


def test_judge_with_only_failed_answers_unscored_exits_0(failed_run, monkeypatch, tmp_path):
    cfg, n, n_failed = failed_run
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer(responder=ScriptedJudge()) as srv:
        res = CliRunner().invoke(
            app,
            [
                "evaluate",
                str(cfg.run_dir),
                "--metrics",
                "judge",
                "--judge-base-url",
                srv.base_url,
                "--quiet",
                "--bootstrap",
                "0",
                "--no-cache",
            ],
        )
    assert res.exit_code == 0, res.output
    assert f"{n_failed} failed answers scored 0" in res.output


@pytest.mark.filterwarnings("error::h2hmem.records.DuplicatePredictionsWarning")
def test_readme_retry_failed_flow_prints_no_duplicate_warning(failed_run):
    cfg, n, n_failed = failed_run
    retry = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=answer_model(None), progress=False)
    assert retry.failed == 0
    d = cfg.run_dir
    # the store keeps the failures and appends their retries (append-only, crash-safe) ...
    assert len((d / "predictions.jsonl").read_text().splitlines()) == n + n_failed
    # ... and every reader takes the retry, silently
    preds = read_predictions(d)
    assert len(preds) == n and not any(p.failed for p in preds)
    for args in (
        ["evaluate", str(d), "--metrics", "lexical,evidence", "--bootstrap", "0", "--quiet"],
        ["report", str(d), "--bootstrap", "0"],
        ["runs", "list", "--out", str(cfg.out_dir)],
    ):
        res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert res.exit_code == 0, (args, res.output)
        assert "DuplicatePredictionsWarning" not in res.output and "replaced by a later record" not in res.output
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


def test_the_judge_may_be_given_as_a_model_spec(failed_run, monkeypatch, tmp_path):
    # the README's async example passed a name; a str reached the judge and failed ('str' has no .spec)
    cfg, n, _ = failed_run
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with MockOpenAIServer(responder=ScriptedJudge()) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        out = evaluate_run(cfg.run_dir, ["judge"], judge_model="openai:gpt-4o-mini", n_boot=0)
        assert srv.calls > 0
    assert (
        out["metrics"]["judge"]["coverage"]["judged"] == n and out["metrics"]["judge"]["model"] == "openai:gpt-4o-mini"
    )
    with pytest.raises(ValueError, match="invalid model spec 'gpt4'"):
        evaluate_run(cfg.run_dir, ["judge"], judge_model="gpt4", n_boot=0, refresh=True)
