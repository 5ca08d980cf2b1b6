"""The mock speaks every protocol: judge prompts of both presets, JSON schemas, JSON objects, forced
tool calls — in process (ScriptedChatModel) and over HTTP (MockOpenAIServer, the CLI's mock)."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from h2hmem.llm import GenerationConfig, Message, load_chat_model
from h2hmem.metrics import JudgeOptions, judge_predictions
from h2hmem.records import Prediction
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel, ScriptExhausted, When, mock_judge_score

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 18}},
    "required": ["name", "age"],
}


def _pred(index: int, question: str, gold: str, answer: str) -> Prediction:
    return Prediction(
        question_id=f"dyadic/dialogue1/session2/q{index}",
        split="dyadic",
        dialogue="dialogue1",
        session="session2",
        task_type="UPR",
        main_category="Memory Recall",
        difficulty="easy",
        question=question,
        gold=gold,
        answer=answer,
        method="m",
    )


PREDS = [
    _pred(0, "Where did they meet?", "Paris", "They met in Paris."),  # every gold word in the answer: 1
    _pred(1, "Which dog?", "a golden retriever", "some cat"),  # no common word: 0
    _pred(2, "What car?", "red sports car", "a red car"),  # F1 2/3 -> nearest level 0.75
]
EXPECTED = [1.0, 0.0, 0.75]


def test_mock_judge_score_by_hand():
    assert [mock_judge_score(p.gold, p.answer or "") for p in PREDS] == EXPECTED
    assert mock_judge_score("Paris", "") == 0.0
    # "blue" vs "blue green sky": P 1/3, R 1 -> F1 0.5
    assert mock_judge_score("blue", "green") == 0.0 and mock_judge_score("blue sky", "blue green") == 0.5


@pytest.mark.parametrize("preset", ["paper", "harmonized"])
async def test_scripted_model_judges_both_presets(preset):
    judge = ScriptedChatModel(spec="scripted:judge")
    records = await judge_predictions(PREDS, judge, options=JudgeOptions(preset=preset))
    assert [r.score for r in records] == EXPECTED
    assert all(r.error is None for r in records) and judge.calls == 1  # one session batch, nothing re-asked


@pytest.mark.parametrize("preset", ["paper", "harmonized"])
async def test_the_http_mock_judges_both_presets(preset):
    with MockOpenAIServer() as srv:
        async with load_chat_model("openai:mock", base_url=srv.base_url, max_retries=0) as judge:
            records = await judge_predictions(PREDS, judge, options=JudgeOptions(preset=preset))
    assert [r.score for r in records] == EXPECTED and srv.calls == 1


async def test_a_schema_request_gets_a_valid_instance_unless_the_script_answers_it():
    config = GenerationConfig(json_schema=json.dumps({"name": "person", "schema": PERSON}), json_mode=True)
    model = ScriptedChatModel(rules=[When('{"name": "Ann", "age": 30}', contains="Ann")])
    generated = await model.chat([Message(role="user", content="Who?")], config)
    assert json.loads(generated.text) == {"name": "mock name", "age": 18}
    jsonschema.validate(json.loads(generated.text), PERSON)
    scripted = await model.chat([Message(role="user", content="Ann?")], config)
    assert json.loads(scripted.text) == {"name": "Ann", "age": 30}
    with pytest.raises(ScriptExhausted, match="no rule, table entry or default for request #2"):
        await model.chat([Message(role="user", content="Who?")])  # plain text: no protocol reply
    with_default = ScriptedChatModel(default="plain text")  # a default is scripted: it overrides
    assert (await with_default.chat([Message(role="user", content="Who?")], config)).text == "plain text"


async def test_json_mode_gets_an_object_and_protocols_can_be_switched_off():
    json_mode = GenerationConfig(json_mode=True)
    bare = ScriptedChatModel()
    reply = await bare.chat([Message(role="user", content="hello world")], json_mode)
    assert json.loads(reply.text) == {"answer": "mock-b94d27b9934d3e08"}  # sha256("hello world")[:16]
    off = ScriptedChatModel(protocol_replies=False)
    with pytest.raises(ScriptExhausted):
        await off.chat([Message(role="user", content="x")], json_mode)


def test_the_http_mock_answers_schemas_objects_and_forced_tools():
    tools = [
        {"type": "function", "function": {"name": "add_person", "parameters": PERSON}},
        {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}},
    ]
    messages = [{"role": "user", "content": "Remember Ann, 30."}]
    with MockOpenAIServer() as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
        structured = client.chat.completions.create(model="m", messages=messages, response_format=fmt)
        assert json.loads(structured.choices[0].message.content) == {"name": "mock name", "age": 18}
        obj = client.chat.completions.create(model="m", messages=messages, response_format={"type": "json_object"})
        assert list(json.loads(obj.choices[0].message.content)) == ["answer"]
        named = client.chat.completions.create(
            model="m",
            messages=messages,
            tools=tools,
            tool_choice={"type": "function", "function": {"name": "add_person"}},
        )
        (call,) = named.choices[0].message.tool_calls
        assert named.choices[0].finish_reason == "tool_calls" and call.function.name == "add_person"
        jsonschema.validate(json.loads(call.function.arguments), PERSON)
        required = client.chat.completions.create(model="m", messages=messages, tools=tools, tool_choice="required")
        assert required.choices[0].message.tool_calls[0].function.name == "add_person"  # the first tool
        auto = client.chat.completions.create(model="m", messages=messages, tools=tools)
        assert auto.choices[0].message.tool_calls is None and auto.choices[0].message.content.startswith("mock-")
        with pytest.raises(openai.BadRequestError, match="'nope', which is not among the request's tools"):
            client.chat.completions.create(
                model="m",
                messages=messages,
                tools=tools,
                tool_choice={"type": "function", "function": {"name": "nope"}},
            )


def test_scripted_responder_over_http_sees_the_tool_schema():
    model = ScriptedChatModel()
    tools = [{"type": "function", "function": {"name": "add_person", "parameters": PERSON}}]
    with MockOpenAIServer(responder=model.responder) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="none", max_retries=0)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice="required"
        )
    assert json.loads(model.last.config.json_schema) == {"name": "add_person", "schema": PERSON}
    assert json.loads(reply.choices[0].message.tool_calls[0].function.arguments) == {"name": "mock name", "age": 18}
