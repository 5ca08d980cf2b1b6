"""The judge over real HTTP (MockOpenAIServer + load_chat_model): batching, strict parsing, re-asks."""

from __future__ import annotations

import pytest

from h2hmem.llm import RequestCache, load_chat_model
from h2hmem.metrics import NOT_COMPARABLE, JudgeOptions, judge_predictions, parse_judgments
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel

from .judge_helpers import ScriptedJudge, pred

S1 = "dyadic/dialogue1/session1"
S2 = "dyadic/dialogue1/session2"
S3 = "multi-party/dialogue2/session4"
HARMONIZED = JudgeOptions(preset="harmonized")  # these tests pin the harmonized format (ScriptedJudge)


async def _run(judge: ScriptedJudge, preds, *, mode="session", cache=None):
    with MockOpenAIServer(responder=judge) as srv:
        model = load_chat_model("openai:judge", base_url=srv.base_url, cache=cache)
        records = await judge_predictions(preds, model, mode=mode, options=HARMONIZED)
        return records, srv.calls


async def test_omitted_out_of_range_and_broken_batches_end_fully_covered():
    preds = [
        pred(f"{S1}/q0", "A0"),
        pred(f"{S1}/q1", "A1"),
        pred(f"{S1}/q2", "A2"),  # batch omits A1
        pred(f"{S2}/q0", "B0"),
        pred(f"{S2}/q1", "B1"),
        pred(f"{S2}/q2", "B2"),  # 0.6 and 2 are off-level
        pred(f"{S3}/q0", "C0"),
        pred(f"{S3}/q1", "C1"),  # broken JSON
    ]
    judge = ScriptedJudge(
        batch={"A0": 0.75, "A1": "omit", "A2": 0.25, "B0": 0.6, "B1": 2, "B2": 0.5, "C0": "broken"},
        single={"A1": 0.5, "B0": 0.75, "B1": 0, "C0": 0.25, "C1": 1},
    )
    records, calls = await _run(judge, preds)
    scores = {r.question_id.split("/", 2)[2]: r.score for r in records}
    assert scores == {
        "session1/q0": 0.75,
        "session1/q1": 0.5,
        "session1/q2": 0.25,
        "session2/q0": 0.75,
        "session2/q1": 0.0,
        "session2/q2": 0.5,
        "session4/q0": 0.25,
        "session4/q1": 1.0,
    }
    assert all(r.judged and r.error is None for r in records)  # 100% coverage
    assert [r.reasked for r in records] == [False, True, False, True, True, False, True, True]
    assert calls == 3 + 5  # three session batches + five single re-asks
    assert sorted(judge.kinds) == ["batch"] * 3 + ["single"] * 5
    assert [r.question_id for r in records] == [p.question_id for p in preds]


async def test_invalid_after_single_reask_is_an_error_not_snapped():
    preds = [pred(f"{S1}/q0", "A0"), pred(f"{S1}/q1", "A1")]
    judge = ScriptedJudge(batch={"A0": 0.6, "A1": 1}, single={"A0": 0.6})
    records, calls = await _run(judge, preds)
    assert records[0].score is None and "0.6" in records[0].error and records[0].reasked
    assert records[1].score == 1.0
    assert calls == 2


async def test_duplicated_id_is_reasked():
    preds = [pred(f"{S1}/q0", "A0"), pred(f"{S1}/q1", "A1")]
    records, calls = await _run(ScriptedJudge(batch={"A0": "dup"}, single={"A0": 0.25}), preds)
    assert [r.score for r in records] == [0.25, 1.0] and records[0].reasked and calls == 2


async def test_failed_answers_score_zero_without_a_call_and_method_name_never_sent():
    preds = [pred(f"{S1}/q0", "A0", None, error="RuntimeError: boom"), pred(f"{S1}/q1", "A1"), pred(f"{S1}/q2", "A2")]
    judge = ScriptedJudge(batch={"A1": 0.5, "A2": 0})
    records, calls = await _run(judge, preds)
    assert records[0].score == 0.0 and records[0].failed and records[0].calls == 0
    assert [r.score for r in records[1:]] == [0.5, 0.0]
    assert calls == 1 and judge.kinds == ["batch"]
    assert all("SecretMethodName" not in p for p in judge.prompts)
    assert "A0" not in judge.prompts[0]


async def test_question_mode_one_call_each_with_corrective_reask():
    preds = [pred(f"{S1}/q0", "A0"), pred(f"{S1}/q1", "A1"), pred(f"{S2}/q0", "B0")]
    judge = ScriptedJudge(single={"A1": [2, 0.75], "B0": ["broken", "broken"]})
    records, calls = await _run(judge, preds, mode="question")
    assert records[0].score == 1.0 and not records[0].reasked
    assert records[1].score == 0.75 and records[1].reasked and records[1].calls == 2
    assert records[2].score is None and "JSON" in records[2].error
    assert calls == 5 and judge.kinds.count("followup") == 2
    followup = judge.prompts[judge.kinds.index("followup")]
    assert "could not be used" in followup


async def test_cache_makes_rerun_free(tmp_path):
    preds = [pred(f"{S1}/q0", "A0"), pred(f"{S1}/q1", "A1")]
    cache = RequestCache(tmp_path / "c.sqlite")
    with MockOpenAIServer(responder=ScriptedJudge(batch={"A0": 0.5})) as srv:
        first = await judge_predictions(
            preds, load_chat_model("openai:judge", base_url=srv.base_url, cache=cache), options=HARMONIZED
        )
        again = await judge_predictions(
            preds, load_chat_model("openai:judge", base_url=srv.base_url, cache=cache), options=HARMONIZED
        )
        assert srv.calls == 1
    assert [r.score for r in again] == [0.5, 1.0] and all(r.cached for r in again) and not first[0].cached
    assert first[0].label is None and first[0].judge_model == "openai:judge"


def _local_judge() -> ScriptedChatModel:
    return ScriptedChatModel(
        default='{"judgments": [{"question_id": "q1", "score": 1, "reasoning": "ok"}]}', spec="local:smollm2"
    )


async def test_local_judge_is_labelled_not_comparable():
    model = _local_judge()
    records = await judge_predictions([pred(f"{S1}/q0", "A0")], model, options=HARMONIZED)
    assert records[0].label == NOT_COMPARABLE and records[0].score == 1.0
    (req,) = model.requests
    assert req.stage == "judge" and req.config.temperature == 0 and req.config.json_mode


def test_parse_judgments_forms():
    assert parse_judgments('```json\n[{"question_id": "q1", "score": "0.25", "reasoning": "x"}]\n```', ["q1"]) == {
        "q1": (0.25, "x")
    }
    assert parse_judgments('{"question_id": "q1", "score": 1}', ["q1"]) == {"q1": (1.0, "")}
    bad = parse_judgments(
        '{"judgments": [{"question_id": "q1", "score": true}, {"question_id": "q9", "score": 1}]}', ["q1", "q2"]
    )
    assert "not a number" in bad["q1"] and "no judgment" in bad["q2"]
    assert "not valid JSON" in parse_judgments("Score: 1", ["q1"])["q1"]


async def test_unknown_mode():
    with pytest.raises(ValueError, match="judge mode"):
        await judge_predictions([], _local_judge(), mode="batch")
