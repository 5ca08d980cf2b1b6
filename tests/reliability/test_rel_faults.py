"""Fault injection against the mock OpenAI-compatible server, stage by stage: caption, memory build
(A-Mem's note writer), answer, judge.

For every fault kind — 429 with and without ``Retry-After``, 500/502/503, connection reset, read
timeout, truncated JSON, a body cut short, empty or missing ``choices`` — a fault that clears
after two attempts is absorbed by the retries (the stage completes with the reply the server gave
on the third attempt); a fault that never clears leaves exactly the affected item as a failure
(a failed prediction scored 0 and listed, a caption failure, an unjudged item counted in the judge
coverage) while everything else completes; redoing the failures redoes only them.
``finish_reason`` "content_filter" is never retried (a failed item at once); "length" returns the
reply (the answer is kept).
"""

from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path

import pytest
from PIL import Image
from relkit import cli, expected_judge_mean, judge_aware, judged_run, make_dataset

from h2hmem.caption import caption_dataset
from h2hmem.embed import load_embedder
from h2hmem.llm import RetryPolicy, load_chat_model
from h2hmem.metrics import evaluate_run
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import Fault, MockOpenAIServer, Rule, default_responder

MAX_RETRIES = 3
FAST = RetryPolicy(max_retries=MAX_RETRIES, initial_backoff_s=0.01, max_backoff_s=0.05, max_retry_after_s=2.0)
CALL_TIMEOUT_S = 1.0
"""Per-attempt limit: 200× a normal mock round trip, so only the injected read timeout trips it."""

TRANSIENT = {
    "429-retry-after": Fault.http(429, retry_after=0.3),
    "429-no-retry-after": Fault.http(429),
    "500": Fault.http(500),
    "502": Fault.http(502),
    "503": Fault.http(503),
    "connection-reset": Fault.reset(),
    "read-timeout": Fault.timeout(delay_s=2.5),
    "truncated-json": Fault.malformed_json(),
    "truncated-body": Fault.truncated_body(),
    "empty-choices": Fault.empty_choices(),
    "missing-choices": Fault.missing_choices(),
}
ERROR_CLASS = {
    "429-retry-after": "RateLimitError",
    "429-no-retry-after": "RateLimitError",
    "500": "ServerError",
    "502": "ServerError",
    "503": "ServerError",
    "connection-reset": "ConnectionFailure",
    "read-timeout": "ModelTimeoutError",
    "truncated-json": "BadResponseError",
    "truncated-body": "ConnectionFailure",
    "empty-choices": "BadResponseError",
    "missing-choices": "BadResponseError",
}
PERSISTENT_SUBSET = ["503", "connection-reset", "truncated-json", "missing-choices"]
"""Never-clearing faults for the stages other than answer (which gets every kind)."""
JUDGE_ERROR_TEXT = {
    "503": "HTTP 503",
    "connection-reset": "reset",
    "truncated-json": "not valid JSON",
    "missing-choices": "no 'choices'",
}
"""The judge records the model error's message (not its class name)."""

# the marker of one question: its text appears only in that question's answer request
TARGET_ID = "dyadic/dialogue1/session2/q1"
TARGET_TEXT = "In session 2 of dialogue 1, what did speaker say about item 1?"


@pytest.fixture(scope="module")
def server():
    with MockOpenAIServer(responder=judge_aware) as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.set_script(None)
    server.reset_stats()
    yield server
    server.set_script(None)


@pytest.fixture
def data(tmp_path):
    return make_dataset(tmp_path / "data", dialogues=2, sessions=2, questions_per_session=2, multi_party=False)


def _model(srv, cache: Path | None = None):
    return load_chat_model(
        "openai:mock", base_url=srv.base_url, cache=cache, retry=FAST, timeout_s=CALL_TIMEOUT_S, concurrency=4
    )


def _config(data, tmp_path, **kw) -> RunConfig:
    base = dict(
        data_root=data.root,
        method="full-text",
        out_dir=tmp_path / "runs",
        run_id="faults",
        use_cache=False,
        concurrency=4,
    )
    return RunConfig(**{**base, **kw})


def _requests_with(srv, text: str) -> list[dict]:
    return [b for b in srv.requests if text in json.dumps(b, ensure_ascii=False)]


# ----- answer stage ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_answer_stage_absorbs_a_fault_that_clears(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=TARGET_TEXT, times=2, path="chat")])
    started = time.monotonic()
    summary = run_benchmark(_config(data, tmp_path), chat_model=_model(srv), progress=False)
    assert summary.failed == 0 and summary.answered_now == len(data.question_ids)
    attempts = _requests_with(srv, TARGET_TEXT)
    assert len(attempts) == 3 and srv.faults.count(fault) == 2
    by_id = {p.question_id: p for p in read_predictions(summary.run_dir)}
    assert by_id[TARGET_ID].answer == default_responder(attempts[-1])  # the third attempt's reply
    if name == "429-retry-after":  # the server's Retry-After (0.3 s) is honoured twice
        assert time.monotonic() - started >= 0.6


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_answer_stage_records_a_lasting_fault_and_retry_failed_redoes_only_it(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=TARGET_TEXT, path="chat")])
    cfg = _config(data, tmp_path)
    summary = run_benchmark(cfg, chat_model=_model(srv), progress=False)
    assert len(_requests_with(srv, TARGET_TEXT)) == MAX_RETRIES + 1
    assert summary.failed == 1 and list(summary.failed_questions) == [TARGET_ID]
    assert ERROR_CLASS[name] in summary.failed_questions[TARGET_ID]
    preds = {p.question_id: p for p in read_predictions(cfg.run_dir)}
    assert len(preds) == len(data.question_ids)  # never dropped
    assert preds[TARGET_ID].answer is None and ERROR_CLASS[name] in preds[TARGET_ID].error
    manifest = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert manifest["counts"]["failed"] == 1 and list(manifest["failed_questions"]) == [TARGET_ID]

    srv.set_script(None)
    srv.reset_stats()
    again = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=_model(srv), progress=False)
    assert again.answered_now == 1 and again.skipped == len(data.question_ids) - 1 and srv.calls == 1
    assert again.failed == 0 and again.failed_questions == {}
    assert read_predictions(cfg.run_dir)[0].question_id  # file still readable
    fixed = {p.question_id: p for p in read_predictions(cfg.run_dir)}[TARGET_ID]
    assert fixed.answer == default_responder(srv.requests[0]) and not fixed.failed


@pytest.mark.parametrize(
    "fault,error", [(Fault.reset(), "ConnectionFailure"), (Fault.http(401), "BadRequestError: HTTP 401")]
)
def test_a_server_that_refuses_every_call_stops_the_run(srv, tmp_path, fault, error):
    """A server that resets every connection (after each call's retries), or refuses the key (401, not
    retried), stops the run after UNREACHABLE_AFTER questions in a row with exit code 5, instead of
    failing every question after minutes of retries; --retry-failed then finishes the run."""
    from h2hmem.run import UNREACHABLE_AFTER, ModelUnreachableError

    data = make_dataset(tmp_path / "data", dialogues=2, sessions=2, questions_per_session=5, multi_party=False)
    srv.set_script([Rule(fault, path="chat")])
    cfg = _config(data, tmp_path)
    with pytest.raises(ModelUnreachableError, match=f"could not be reached {UNREACHABLE_AFTER} times in a row") as e:
        run_benchmark(cfg, chat_model=_model(srv), progress=False)
    assert error in str(e.value) and "rerun with --retry-failed" in str(e.value)
    preds = read_predictions(cfg.run_dir)
    assert len(preds) == UNREACHABLE_AFTER - 1 and all(error in p.error for p in preds)  # the 8th: not recorded
    tries = MAX_RETRIES + 1 if error == "ConnectionFailure" else 1
    in_flight = 4 - 1  # concurrency 4: at most 3 more questions were being asked when it stopped
    assert len(srv.requests) <= (UNREACHABLE_AFTER + in_flight) * tries < len(data.question_ids) * tries
    manifest = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "incomplete" and manifest["counts"]["failed"] == UNREACHABLE_AFTER - 1

    srv.set_script(None)  # the server is back: one rerun with --retry-failed finishes the run
    again = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=_model(srv), progress=False)
    assert again.failed == 0 and again.answered_now == len(data.question_ids)


def test_cli_exit_code_5_when_the_model_server_cannot_be_reached(srv, data, tmp_path):
    srv.set_script([Rule(Fault.http(403), path="chat")])
    data = make_dataset(tmp_path / "data10", dialogues=2, sessions=2, questions_per_session=3, multi_party=False)
    args = ["run", "--data", data.root, "--method", "full-text", "--model", "openai:mock", "--base-url"]
    res = cli(*args, srv.base_url, "--no-cache", "--out", tmp_path / "runs", "--quiet", "--concurrency", "1")
    out = " ".join(res.output.split())
    assert res.code == 5 and "Traceback" not in out, out
    assert (
        "the model server could not be reached 8 times in a row (questions or memory builds; the last: BadRequestError: HTTP 403"
        in out
    )


def test_failed_answer_is_scored_zero_and_flagged(srv, data, tmp_path):
    srv.set_script([Rule(Fault.http(500), when=TARGET_TEXT, path="chat")])
    cfg = _config(data, tmp_path)
    run_benchmark(cfg, chat_model=_model(srv), progress=False)
    summary = evaluate_run(cfg.run_dir, ["lexical"], data_root=data.root, n_boot=50)
    lex = [json.loads(l) for l in (cfg.run_dir / "scores" / "lexical.jsonl").read_text().splitlines()]
    target = next(r for r in lex if r["question_id"] == TARGET_ID)
    assert target["failed"] is True and target["f1"] == 0 and target["exact_match"] == 0
    assert summary["run"]["failed"] == 1 and len(lex) == len(data.question_ids)  # in the denominator


def test_content_filter_is_not_retried_and_fails_the_item(srv, data, tmp_path):
    srv.set_script([Rule(Fault.finish("content_filter"), when=TARGET_TEXT, path="chat")])
    summary = run_benchmark(_config(data, tmp_path), chat_model=_model(srv), progress=False)
    assert len(_requests_with(srv, TARGET_TEXT)) == 1
    assert list(summary.failed_questions) == [TARGET_ID]
    assert "ContentFilterError" in summary.failed_questions[TARGET_ID]


def test_finish_length_keeps_the_reply(srv, data, tmp_path):
    srv.set_script([Rule(Fault.finish("length"), when=TARGET_TEXT, path="chat")])
    summary = run_benchmark(_config(data, tmp_path), chat_model=_model(srv), progress=False)
    attempts = _requests_with(srv, TARGET_TEXT)
    assert len(attempts) == 1 and summary.failed == 0
    target = {p.question_id: p for p in read_predictions(summary.run_dir)}[TARGET_ID]
    assert target.answer == default_responder(attempts[0])


def test_cli_run_lists_failures_and_retry_failed_redoes_only_them(srv, data, tmp_path):
    """Through ``h2hmem run``: one question hit by a content filter (not retried), another by two
    503s with ``Retry-After: 0`` (retried); then ``--retry-failed`` asks the server exactly once."""
    other = "In session 1 of dialogue 2, what did speaker say about item 0?"
    srv.set_script(
        [
            Rule(Fault.finish("content_filter"), when=TARGET_TEXT, path="chat"),
            Rule(Fault.http(503, retry_after=0), when=other, times=2, path="chat"),
        ]
    )
    args = [
        "run",
        "--data",
        data.root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        srv.base_url,
        "--no-cache",
        "--out",
        tmp_path / "runs",
        "--run-id",
        "cli",
        "--quiet",
        "--max-retries",
        "2",
        "--timeout",
        "5",
    ]
    res = cli(*args)
    assert res.code == 1 and "Traceback" not in res.output, res.output  # failures recorded: exit 1
    assert "1 failed" in res.output and f"{TARGET_ID}: ContentFilterError" in res.output
    assert "--retry-failed" in res.output
    srv.set_script(None)
    srv.reset_stats()
    res = cli(*args, "--retry-failed")
    assert res.code == 0 and "1 answered now" in res.output and "0 failed" in res.output, res.output
    assert srv.calls == 1 and TARGET_TEXT in json.dumps(srv.requests[0])
    manifest = json.loads((tmp_path / "runs" / "cli" / "manifest.json").read_text())
    assert manifest["resumes"] == 1 and manifest["invocations"][-1]["retry_failed"] is True
    assert manifest["failed_questions"] == {}


# ----- memory build stage (A-Mem note writer) --------------------------------------------------

ANALYSIS_PREFIXES = ("Analyse one conversation turn", "Generate a structured analysis")
"""How the note-writer prompts of both presets begin."""

BUILD_TURN = "Bo says fact 1-2-1"
"""Text of one turn of dialogue 1: its note-writer requests are the ones hit."""


def _amem_config(data, tmp_path, **kw):
    return _config(data, tmp_path, method="a-mem", **kw)


def _embedder(srv):
    return load_embedder("openai:mock", base_url=srv.base_url)


def _is_analysis(body: dict) -> bool:
    """A note-writer request analysing one turn (not an evolution or answer request); h2hmem's prompt
    (preset harmonized) or the official one (preset paper, the default)."""
    return str(body["messages"][-1]["content"]).startswith(ANALYSIS_PREFIXES)


def _analysis_of(turn: str):
    """Predicate: the note-writer request analysing the turn whose text starts with ``turn``."""
    return lambda body: _is_analysis(body) and turn in str(body["messages"][-1]["content"])


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_memory_build_absorbs_a_fault_that_clears(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=_analysis_of(BUILD_TURN), times=2, path="chat")])
    summary = run_benchmark(
        _amem_config(data, tmp_path), chat_model=_model(srv), embedder=_embedder(srv), progress=False
    )
    assert srv.faults.count(fault) == 2
    assert summary.failed == 0 and summary.answered_now == len(data.question_ids)


@pytest.mark.parametrize("name", PERSISTENT_SUBSET)
def test_memory_build_failure_fails_that_dialogue_and_retry_resumes_it(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=_analysis_of(BUILD_TURN), path="chat")])
    cfg = _amem_config(data, tmp_path)
    summary = run_benchmark(cfg, chat_model=_model(srv), embedder=_embedder(srv), progress=False)
    d1 = sorted(q for q in data.question_ids if q.startswith("dyadic/dialogue1/"))
    assert sorted(summary.failed_questions) == d1  # dialogue 2 is unaffected
    assert all(
        e.startswith("memory build failed") and ERROR_CLASS[name] in e for e in summary.failed_questions.values()
    )
    srv.set_script(None)
    srv.reset_stats()
    again = run_benchmark(
        cfg.model_copy(update={"retry_failed": True}), chat_model=_model(srv), embedder=_embedder(srv), progress=False
    )
    assert again.answered_now == len(d1) and again.failed == 0
    assert len(read_predictions(cfg.run_dir)) == len(data.question_ids)
    # the 5 notes written before the failure (session1's 4 turns, session2's turn 0) were kept:
    # only session2's turns 1–3 of dialogue 1 are analysed again
    analysed = [b["messages"][-1]["content"] for b in srv.requests if b.get("messages") and _is_analysis(b)]
    assert len(analysed) == 3 and all("fact 1-2-" in a for a in analysed)


# ----- caption stage ---------------------------------------------------------------------------


def _image_colour(body: dict) -> tuple[int, int, int] | None:
    for msg in body.get("messages", []):
        for part in msg.get("content") if isinstance(msg.get("content"), list) else []:
            if part.get("type") == "image_url":
                raw = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                return Image.open(io.BytesIO(raw)).convert("RGB").getpixel((0, 0))
    return None


def _is_image(colour: tuple[int, int, int]):
    def match(body: dict) -> bool:
        got = _image_colour(body)
        return got is not None and all(abs(a - b) <= 6 for a, b in zip(got, colour))

    return match


TARGET_IMAGE = "dyadic/dialogue1/session2/1.png"
TARGET_COLOUR = (80, 80, 60)  # relkit: (40·k mod 256, 80, 60·d mod 256) for session k=2, dialogue d=1


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_caption_stage_absorbs_a_fault_that_clears(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=_is_image(TARGET_COLOUR), times=2, path="chat")])
    summary = caption_dataset(data.root, _model(srv), out_dir=tmp_path / "caps", progress=False)
    assert srv.faults.count(fault) == 2
    assert summary.failed == 0 and summary.captioned == summary.images == 4


@pytest.mark.parametrize("name", PERSISTENT_SUBSET)
def test_caption_failure_is_listed_and_rerun_redoes_only_it(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=_is_image(TARGET_COLOUR), path="chat")])
    summary = caption_dataset(data.root, _model(srv), out_dir=tmp_path / "caps", progress=False)
    assert summary.captioned == 3 and summary.failed == 1
    assert [f.image for f in summary.failures] == [TARGET_IMAGE] and ERROR_CLASS[name] in summary.failures[0].reason
    listed = json.loads((tmp_path / "caps" / "caption_failures.json").read_text())
    assert TARGET_IMAGE in json.dumps(listed)

    srv.set_script(None)
    srv.reset_stats()
    again = caption_dataset(data.root, _model(srv), out_dir=tmp_path / "caps", progress=False)
    assert again.captioned == 1 and again.cached == 3 and again.failed == 0 and srv.calls == 1


# ----- judge stage -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TRANSIENT))
def test_judge_stage_absorbs_a_fault_that_clears(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=TARGET_TEXT, times=2, path="chat")])
    run = judged_run(data, tmp_path)
    summary = evaluate_run(run, ["judge"], data_root=data.root, judge_model=_model(srv), n_boot=50)
    judge = summary["metrics"]["judge"]
    assert srv.faults.count(fault) == 2
    assert judge["coverage"] == {
        "judged": len(data.question_ids),
        "total": len(data.question_ids),
        "errors": 0,
        "failed_answers": 1,
        "reasons": {},
    }
    overall = judge["aggregate"]
    assert _mean_of(overall) == pytest.approx(expected_judge_mean(data))


def _mean_of(agg: dict) -> float:
    """The micro average of ``score`` over all questions (schema of ``metrics.aggregate``)."""
    return agg["splits"]["all"]["overall"]["metrics"]["score"]["mean"]


@pytest.mark.parametrize("name", PERSISTENT_SUBSET)
def test_judge_failure_is_counted_in_coverage_and_rerun_judges_only_it(srv, data, tmp_path, name):
    fault = TRANSIENT[name]
    srv.set_script([Rule(fault, when=TARGET_TEXT, path="chat")])
    run = judged_run(data, tmp_path)
    summary = evaluate_run(run, ["judge"], data_root=data.root, judge_model=_model(srv), n_boot=50)
    cov = summary["metrics"]["judge"]["coverage"]
    reasons = cov.pop("reasons")
    assert cov == {
        "judged": len(data.question_ids) - 1,
        "total": len(data.question_ids),
        "errors": 1,
        "failed_answers": 1,
    }
    assert sum(reasons.values()) == 1
    recs = {
        json.loads(l)["question_id"]: json.loads(l) for l in (run / "scores" / "judge.jsonl").read_text().splitlines()
    }
    assert len(recs) == len(data.question_ids)
    assert recs[TARGET_ID]["score"] is None and JUDGE_ERROR_TEXT[name] in recs[TARGET_ID]["error"]
    assert recs["dyadic/dialogue2/session1/q0"]["score"] == 0 and recs["dyadic/dialogue2/session1/q0"]["failed"]

    srv.set_script(None)
    srv.reset_stats()
    summary = evaluate_run(run, ["judge"], data_root=data.root, judge_model=_model(srv), n_boot=50)
    assert srv.calls == 1 and TARGET_TEXT in json.dumps(srv.requests[0])
    assert summary["metrics"]["judge"]["coverage"]["errors"] == 0
    assert _mean_of(summary["metrics"]["judge"]["aggregate"]) == pytest.approx(expected_judge_mean(data))


# ----- the caption and evaluate commands ---------------------------------------------------------


def test_cli_caption_lists_the_failed_image_and_rerun_redoes_only_it(srv, data, tmp_path):
    """``h2hmem caption``: a content filter on one image (not retried), two 503s with
    ``Retry-After: 0`` on another (retried); exit 1 naming the failed image; the rerun asks once."""
    other = (40 * 1 % 256, 80, 60 * 2 % 256)  # dialogue 2, session 1
    srv.set_script(
        [
            Rule(Fault.finish("content_filter"), when=_is_image(TARGET_COLOUR), path="chat"),
            Rule(Fault.http(503, retry_after=0), when=_is_image(other), times=2, path="chat"),
        ]
    )
    args = [
        "caption",
        data.root,
        "--model",
        "openai:mock",
        "--base-url",
        srv.base_url,
        "--captions-dir",
        tmp_path / "caps",
        "--quiet",
    ]
    env = {"H2HMEM_CACHE_DIR": str(tmp_path / "cache")}  # the request cache stays in tmp_path
    res = cli(*args, env=env)
    assert "Traceback" not in res.output, res.output
    assert res.code == 1 and TARGET_IMAGE in res.output and "ContentFilterError" in res.output, res.output
    failures = json.loads((tmp_path / "caps" / "caption_failures.json").read_text())
    assert TARGET_IMAGE in json.dumps(failures)
    srv.set_script(None)
    srv.reset_stats()
    res = cli(*args, env=env)
    assert res.code == 0 and "Traceback" not in res.output, res.output
    assert srv.calls == 1 and _is_image(TARGET_COLOUR)(srv.requests[0])


def test_cli_evaluate_judge_reports_coverage_and_rerun_judges_only_the_gap(srv, data, tmp_path):
    """``h2hmem evaluate --metrics judge``: a content filter on the batch and the single re-ask of
    one question leaves it unjudged (coverage 11/12), never silently dropped or snapped; the next
    evaluate judges only it."""
    run = judged_run(data, tmp_path)
    srv.set_script([Rule(Fault.finish("content_filter"), when=TARGET_TEXT, path="chat")])
    args = [
        "evaluate",
        run,
        "--metrics",
        "judge",
        "--judge-model",
        "openai:mock",
        "--judge-base-url",
        srv.base_url,
        "--data",
        data.root,
        "--no-cache",
        "--bootstrap",
        "0",
        "--quiet",
    ]
    res = cli(*args)
    # exit 1 (as `run` with failed questions), one closing line counting why
    assert res.code == 1 and "Traceback" not in res.output, res.output
    n = len(data.question_ids)
    assert f"judge: 1 of {n} questions unjudged (" in " ".join(res.output.split())
    summary = json.loads((run / "scores" / "summary.json").read_text())
    cov = summary["metrics"]["judge"]["coverage"]
    assert sum(cov.pop("reasons").values()) == 1
    assert cov == {"judged": n - 1, "total": n, "errors": 1, "failed_answers": 1}
    srv.set_script(None)
    srv.reset_stats()
    res = cli(*args)
    assert res.code == 0 and srv.calls == 1, res.output
    summary = json.loads((run / "scores" / "summary.json").read_text())
    assert summary["metrics"]["judge"]["coverage"]["errors"] == 0
    assert _mean_of(summary["metrics"]["judge"]["aggregate"]) == pytest.approx(expected_judge_mean(data))


# ----- replies that are not valid Unicode ----------------------------------------------------------


def test_reply_with_a_lone_surrogate_is_recorded_not_fatal(srv, data, tmp_path):
    """JSON may carry ``"\\udce9"`` (a lone surrogate: not Unicode). Without a cache such a reply used
    to stop the whole run when the prediction was written; now the model layer replaces it with U+FFFD
    (the run store flags ``invalid_unicode`` only for text that reaches it still invalid, e.g. from a plugin)."""
    srv.responder = lambda body: "caf\udce9 answer" if TARGET_TEXT in json.dumps(body) else default_responder(body)
    try:
        summary = run_benchmark(_config(data, tmp_path), chat_model=_model(srv), progress=False)
    finally:
        srv.responder = judge_aware
    assert summary.failed == 0 and summary.answered_now == len(data.question_ids)
    line = next(
        l for l in (summary.run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines() if TARGET_ID in l
    )
    rec = json.loads(line)
    assert rec["answer"] == "caf\ufffd answer"
    assert {p.question_id for p in read_predictions(summary.run_dir)} == set(data.question_ids)


def test_reply_with_a_lone_surrogate_is_kept_with_a_cache(srv, data, tmp_path):
    srv.responder = lambda body: "caf\udce9 answer" if TARGET_TEXT in json.dumps(body) else default_responder(body)
    try:
        summary = run_benchmark(
            _config(data, tmp_path), chat_model=_model(srv, cache=tmp_path / "c.sqlite"), progress=False
        )
    finally:
        srv.responder = judge_aware
    assert summary.failed == 0, summary.failed_questions


def test_an_unreachable_server_is_recognised_through_a_methods_own_error():
    from h2hmem.llm import BadRequestError, ConnectionFailure, ServerError
    from h2hmem.run._runner import _unreachable

    def wrapped(inner: BaseException) -> RuntimeError:
        try:
            try:
                raise inner
            except Exception as e:
                raise RuntimeError("note writer failed") from e
        except RuntimeError as outer:
            return outer

    assert _unreachable(ConnectionFailure("refused")) and _unreachable(wrapped(ConnectionFailure("refused")))
    assert _unreachable(wrapped(BadRequestError("bad key", status=401)))
    assert not _unreachable(wrapped(BadRequestError("bad parameter", status=400)))
    assert not _unreachable(ServerError("overloaded", status=503)) and not _unreachable(RuntimeError("x"))
