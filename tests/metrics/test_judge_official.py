"""The judge under ``paper`` sends the official judge's request and reads its reply the same way.

``fixtures/official_judge_batch.json`` was recorded by running the official judge's own code
(varib1/H2HMEM ``evaluate_metrics/LLM-as-judge/LLM_as_judge.py`` @ b6070899) on one session's
results file against a recording mock endpoint: the request body it sent, the scripted reply
(off-level, string and boolean scores, a missing id, an invalid duplicate, prose and a code
fence around the array) and the scores it parsed from it. h2hmem must send the same body except
the two header lines that named the method and the answer model (never sent: ``unknown``, as the
official script wrote for result files without metadata), parse the same scores, and re-ask
(not drop) the question the reply left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from h2hmem.llm import load_chat_model
from h2hmem.metrics import (
    JudgeOptions,
    evaluate_run,
    judge_predictions,
    official_rubric,
    parse_official_reply,
    snap_score,
)
from h2hmem.metrics._judge import _score as strict_level
from h2hmem.records import Prediction
from h2hmem.testing import MockOpenAIServer

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "official_judge_batch.json").read_text(encoding="utf-8"))
SESSION = "dyadic/dialogue5/session1"
OFFICIAL = {r["question_id"]: r for r in FIXTURE["official_scores"]}
SINGLE = '[{"question_id": "q4", "score": 0.2, "reasoning": "asked alone"}]'


def _preds() -> list[Prediction]:
    meta = FIXTURE["results_file"]["metadata"]
    return [
        Prediction(
            question_id=f"{SESSION}/{r['question_id']}",
            split="dyadic",
            dialogue="dialogue5",
            session="session1",
            task_type="UPR",
            main_category="Memory Recall",
            difficulty=r["difficulty"],
            question=r["question_text"],
            gold=r["original_answer"],
            answer=r["system_answer"],
            method=meta["memory_type"],
        )
        for r in FIXTURE["results_file"]["results"]
    ]


def _expected_body() -> dict:
    """The recorded official body with the method and answer model withheld."""
    meta = FIXTURE["results_file"]["metadata"]
    body = json.loads(json.dumps(FIXTURE["request"]))
    text = body["messages"][0]["content"]
    for line in (f"Memory System: {meta['memory_type']}", f"VLM Model: {meta['vlm_model'].split('/')[-1]}"):
        assert text.count(f"\n{line}\n") == 1
        text = text.replace(f"\n{line}\n", f"\n{line.split(':')[0]}: unknown\n")
    body["messages"][0]["content"] = text
    return body


def _responder(body: dict) -> str:
    return FIXTURE["reply"] if body["messages"][0]["content"].count("--- Question ") > 1 else SINGLE


async def test_paper_batch_equals_the_official_request_and_parse():
    with MockOpenAIServer(responder=_responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        records = await judge_predictions(_preds(), model)  # default: paper
        requests = list(srv.requests)
    assert requests[0] == _expected_body()  # model, one user message, every character, temperature 0, nothing else
    assert set(requests[0]) == {"model", "messages", "temperature"} and requests[0]["temperature"] == 0
    assert all("FullText" not in json.dumps(r) and "gpt-4.1-nano" not in json.dumps(r) for r in requests)
    by_id = {r.question_id.rsplit("/", 1)[-1]: r for r in records}
    for qid, off in OFFICIAL.items():
        if off["llm_success"]:
            assert by_id[qid].score == off["llm_score"] and by_id[qid].reasoning == off["llm_reasoning"], qid
            assert not by_id[qid].reasked and by_id[qid].calls == 1
    # the official script dropped q4 (missing from the reply); we ask it alone, in the official form
    assert not OFFICIAL["q4"]["llm_success"]
    assert len(requests) == 2 and by_id["q4"].reasked and by_id["q4"].score == 0.25  # 0.2 snapped
    single = requests[1]["messages"][0]["content"]
    assert single.startswith(official_rubric()) and "--- Question 1 ---\nQuestion ID: q4\n" in single
    assert "--- Question 2 ---" not in single and len(requests[1]["messages"]) == 1
    assert all(r.preset == "paper" and r.options == JudgeOptions().options() for r in records)


def test_parse_matches_the_official_parser():
    ids = list(OFFICIAL)
    parsed = parse_official_reply(FIXTURE["reply"], ids)
    for qid, off in OFFICIAL.items():
        if off["llm_success"]:
            assert parsed[qid] == (off["llm_score"], off["llm_reasoning"])
        else:
            assert parsed[qid] == "no judgment for q4 in the reply"
    strict = parse_official_reply(FIXTURE["reply"], ids, snap=False, strict_score=strict_level)
    assert strict["q0"] == (1.0, "matches") and "not one of 0, 0.25" in strict["q1"] and "not a number" in strict["q5"]
    assert parse_official_reply("no array here", ["q0"]) == {"q0": "the reply is not valid JSON"}
    assert parse_official_reply('{"question_id": "q0", "score": 1}', ["q0"]) == {"q0": "the reply is not a JSON array"}
    assert parse_official_reply('[{"question_id": 7, "score": 1}, "junk", {"score": 1}]', ["7"]) == {"7": (1.0, "")}


@pytest.mark.parametrize(
    "value,level",
    [
        (0.125, 0.0),
        (0.126, 0.25),
        (0.6, 0.5),
        (0.625, 0.5),
        ("0.8", 0.75),
        (True, 1.0),
        (2, 1.0),
        (-3, 0.0),
        (float("nan"), 0.0),
        (float("inf"), 0.0),
    ],
)
def test_snapping_is_the_official_nearest_level(value, level):
    assert snap_score(value) == level


@pytest.mark.parametrize("value", [None, "n/a", [1], {"x": 1}])
def test_non_numbers_do_not_snap(value):
    with pytest.raises(ValueError, match="not a number"):
        snap_score(value)


def test_official_layout_is_pinned_line_by_line():
    text = FIXTURE["request"]["messages"][0]["content"]
    head, _, rest = text.partition("\nDialogue: dialogue5\n")
    assert head == official_rubric() + "\n" and official_rubric().endswith("Here are the questions to evaluate:\n")
    assert rest.startswith(
        "Session: session1\nMemory System: FullTextMemorySystem\nVLM Model: gpt-4.1-nano\n\n"
        "--- Question 1 ---\nQuestion ID: q0\nQuestion: "
    )
    assert text.endswith("\n\nPlease output the results in JSON array format as specified above.")
    # answers are stripped, question texts are not (official)
    assert "Assistant Answer: Production process\n" in text


# ----- evaluate_run: preset and options recorded; judgments reused only under equal options ---------

_BLOCK = re.compile(r"Question ID: (.*)\nQuestion: .*\nGround Truth: (.*)\nAssistant Answer: (.*)\n")


def paper_responder(body: dict) -> str:
    """1 when the answer equals the gold answer, else 0, as the official JSON array."""
    text = body["messages"][0]["content"]
    return json.dumps(
        [{"question_id": i, "score": 1 if a == g else 0, "reasoning": "r"} for i, g, a in _BLOCK.findall(text)]
    )


def test_evaluate_records_preset_and_options(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    preds = _preds()
    (d / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in preds))
    (d / "manifest.json").write_text(json.dumps({"method": "full-text", "model": "openai:x"}))
    with MockOpenAIServer(responder=paper_responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        summary = evaluate_run(d, ["judge"], judge_model=model, n_boot=0)
        assert srv.calls == 1
        judge = summary["metrics"]["judge"]
        assert summary["preset"] == "paper" and judge["preset"] == "paper"
        assert judge["options"] == {
            "judge_format": "user_array",
            "score_levels": "snap",
            "batching": "session",
            "session_header": "official",
        }
        assert judge["coverage"]["judged"] == len(preds)
        again = evaluate_run(d, ["judge"], judge_model=model, n_boot=0)["metrics"]["judge"]
        assert srv.calls == 1 and again["aggregate"] == judge["aggregate"]  # same options: reused
        # another option value is another judgment: re-judged, and recorded as such
        srv.responder = lambda body: json.dumps(
            {"judgments": [{"question_id": f"q{i}", "score": 1, "reasoning": "r"} for i in range(1, len(preds) + 1)]}
        )
        other = evaluate_run(
            d, ["judge"], judge_model=model, n_boot=0, preset="harmonized", judge_options={"score_levels": "snap"}
        )
        assert srv.calls == 2 and srv.requests[-1]["messages"][0]["role"] == "system"
        assert other["metrics"]["judge"]["options"] == {
            "judge_format": "system_object",
            "score_levels": "snap",
            "batching": "session",
            "session_header": "folder",
        }
    with pytest.raises(ValueError, match="unknown judge option"):
        evaluate_run(d, ["judge"], judge_model=model, judge_options={"levels": "snap"})


def test_cli_preset_and_option_flags(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from h2hmem.cli import app

    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "run"
    d.mkdir()
    (d / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in _preds()))
    runner = CliRunner()
    with MockOpenAIServer(responder=paper_responder) as srv:
        base = [
            "evaluate",
            str(d),
            "--metrics",
            "judge",
            "--judge-base-url",
            srv.base_url,
            "--quiet",
            "--bootstrap",
            "0",
        ]
        res = runner.invoke(app, base + ["--score-levels", "strict"])
        assert res.exit_code == 0, res.output
        assert srv.requests[0]["messages"][0]["role"] == "user" and len(srv.requests[0]["messages"]) == 1
        assert "judge preset paper" in res.output
        summary = json.loads((d / "scores" / "summary.json").read_text())
        assert summary["metrics"]["judge"]["options"] == {
            "judge_format": "user_array",
            "score_levels": "strict",
            "batching": "session",
            "session_header": "official",
        }
        bad = runner.invoke(app, base + ["--preset", "published"])
        assert bad.exit_code == 2 and "--preset must be one of paper, harmonized" in bad.output
        bad = runner.invoke(app, base + ["--judge-format", "xml"])
        assert bad.exit_code == 2 and "--judge-format" in bad.output


@pytest.mark.parametrize(
    "method, options, session_line",
    [
        ("a-mem", None, "Session: unknown"),
        ("ngm", None, "Session: unknown"),
        ("full-text", None, "Session: session1"),
        ("a-mem", {"session_header": "folder"}, "Session: session1"),
    ],
)
async def test_paper_header_says_session_unknown_for_amem_and_ngm(method, options, session_line):
    """The official judge read the ``Session:`` line from ``metadata.session_dir_name``, which the
    official A-Mem and NGM result files lack: their published scores were judged under
    ``Session: unknown``. ``paper`` reproduces it for those two methods only; the rest of the body is
    the recorded official one."""
    preds = [p.model_copy(update={"method": method}) for p in _preds()]
    with MockOpenAIServer(responder=_responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        opts = JudgeOptions.model_validate({"preset": "paper", **(options or {})})
        records = await judge_predictions(preds, model, options=opts)
        first = srv.requests[0]
    expected = _expected_body()
    text = expected["messages"][0]["content"]
    assert text.count("\nSession: session1\n") == 1
    expected["messages"][0]["content"] = text.replace("\nSession: session1\n", f"\n{session_line}\n")
    assert first == expected
    assert all(r.options["session_header"] == (options or {}).get("session_header", "official") for r in records)


def test_session_header_option_per_preset():
    assert JudgeOptions().session_header == "official"
    assert JudgeOptions(preset="harmonized").session_header == "folder"
