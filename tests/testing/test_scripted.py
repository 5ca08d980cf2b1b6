"""ScriptedChatModel: rules (first match wins), tables, scripted errors and delays, usage by a
documented rule, recorded requests with typed prompt views, and the same script over HTTP."""

from __future__ import annotations

import pytest

from h2hmem.llm import (
    ChatModel,
    GenerationConfig,
    ImagePart,
    Message,
    RateLimitError,
    ServerError,
    TextPart,
    Usage,
    count_tokens,
    load_chat_model,
)
from h2hmem.metrics import judge_messages, official_judge_messages
from h2hmem.records import Prediction
from h2hmem.testing import MockOpenAIServer, Reply, ScriptedChatModel, ScriptExhausted, When

WHERE = Prediction(
    question_id="s/d/session1/q0", split="s", dialogue="d", session="session1", task_type="UPR",
    main_category="Memory Recall", difficulty="easy", question="Where?", gold="gold Where?", answer="Here", method="m",
)  # fmt: skip
WHEN = WHERE.model_copy(
    update={"question_id": "s/d/session1/q1", "question": "When?", "gold": "gold When?", "answer": "Now"}
)


def user(text: str) -> list[Message]:
    return [Message(role="system", content="Be brief."), Message(role="user", content=text)]


async def test_rules_first_match_wins_then_default():
    model = ScriptedChatModel(
        rules=[
            When("Paris", question="Where is the Louvre?"),
            When(RateLimitError("busy"), stage="judge", times=1),
            (lambda r: "umbrella" in r.user_text, "Take one."),
            lambda r: "echo: " + r.user_text if r.user_text.startswith("say") else None,
        ],
        default="I don't know.",
    )
    assert isinstance(model, ChatModel)
    assert (await model.chat(user("Question: Where is the Louvre?\nAnswer:"))).text == "Paris"
    # the question rule comes first, so it answers this judge request; the rate limit stays unspent…
    assert (await model.chat(user("Question: Where is the Louvre?"), stage="judge")).text == "Paris"
    with pytest.raises(RateLimitError, match="busy"):  # …and takes the next judge request
        await model.chat(user("umbrella?"), stage="judge")
    assert (await model.chat(user("umbrella?"), stage="judge")).text == "Take one."  # times=1 spent
    assert (await model.chat(user("say hi"))).text == "echo: say hi"
    assert (await model.chat(user("anything"))).text == "I don't know."
    assert model.calls == 6 and [r.stage for r in model.requests_for("judge")] == ["judge"] * 3
    failed = model.requests[2]
    assert failed.reply is None and isinstance(failed.error, RateLimitError)


async def test_table_in_order_then_exhausted():
    model = ScriptedChatModel(table=["one", ServerError, Reply("three", finish_reason="length")])
    assert (await model.chat(user("a"))).text == "one"
    with pytest.raises(ServerError, match="scripted ServerError for request #1"):
        await model.chat(user("b"))
    third = await model.chat(user("c"))
    assert third.text == "three" and third.finish_reason == "length"
    with pytest.raises(ScriptExhausted, match=r"request #3 \(stage='answer', question=None, user text 'd'\)"):
        await model.chat(user("d"))


async def test_mapping_table_by_question_serves_lists_in_order_last_repeats():
    model = ScriptedChatModel(table={"Q1?": ["first", "second"], "Q2?": "always"}, default="other")
    texts = [(await model.chat(user(f"Question: {q}"))).text for q in ("Q1?", "Q2?", "Q1?", "Q1?", "Q3?", "Q2?")]
    assert texts == ["first", "always", "second", "second", "other", "always"]
    assert model.questions() == ["Q1?", "Q2?", "Q1?", "Q1?", "Q3?", "Q2?"]
    by_len = ScriptedChatModel(table={1: "short"}, key=lambda r: len(r.user_text.split()), default="long")
    assert [(await by_len.chat(user(t))).text for t in ("hi", "hi there")] == ["short", "long"]


async def test_usage_is_counted_by_rule_and_summed_per_stage():
    words = ScriptedChatModel(default="Paris, France", tokenizer=lambda t: len(t.split()), cost_per_call=0.5)
    img = ImagePart(name="s1/1.png")
    msgs = [
        Message(role="system", content="Be brief."),
        Message(role="user", content=[TextPart(text="Question: Where is it?"), img]),
    ]
    r = await words.chat(msgs, stage="answer")
    # prompt: "Be brief." 2 words + "Question: Where is it?" 4 words + 85 for the image; reply 2 words
    assert r.usage == Usage(prompt_tokens=91, completion_tokens=2, calls=1, cost_usd=0.5)
    await words.chat(user("x y z"), stage="judge")  # 2 + 3 words
    assert words.usage_by_stage() == {
        "answer": Usage(prompt_tokens=91, completion_tokens=2, calls=1, cost_usd=0.5),
        "judge": Usage(prompt_tokens=5, completion_tokens=2, calls=1, cost_usd=0.5),
    }
    assert words.total_usage().calls == 2 and words.count_tokens("a b c") == 3
    assert words.requests[0].images == [img] and words.requests[0].image_names == ["s1/1.png"]

    tiktoken = ScriptedChatModel(default="Paris")
    r = await tiktoken.chat(user("Question: Where is it?"))
    assert r.usage.prompt_tokens == count_tokens("Be brief.") + count_tokens("Question: Where is it?")
    assert r.usage.completion_tokens == count_tokens("Paris") == 1

    fixed = ScriptedChatModel(default="x", usage=Usage(prompt_tokens=40, completion_tokens=4, calls=1))
    assert (await fixed.chat(user("long " * 50))).usage.prompt_tokens == 40
    own = ScriptedChatModel(default=Reply("x", usage=Usage(calls=1, cost_usd=1.0)))
    assert (await own.chat(user("y"))).usage == Usage(calls=1, cost_usd=1.0)


async def test_delays_are_slept_and_reported_exactly():
    model = ScriptedChatModel(default=Reply("late", delay_s=0.05), latency_s=0.01)
    r = await model.chat(user("q"))
    assert r.latency_s == pytest.approx(0.06) and r.usage.latency_s == pytest.approx(0.06)
    assert model.last.time > 0


async def test_recorded_requests_expose_config_and_tagged_fields():
    model = ScriptedChatModel(default="{}")
    await model.chat(user("Question: A?\nGold answer: B"), GenerationConfig(temperature=0.0), stage="label")
    req = model.last
    assert req.system == "Be brief." and req.config.temperature == 0.0 and req.stage == "label"
    assert req.question == "A?" and req.field("Gold answer") == "B" and req.field("Missing") is None
    await model.chat(user("no config"))
    assert model.last.config == GenerationConfig()

    batch = [("q1", WHERE), ("q2", WHEN)]
    await model.chat(judge_messages(batch), stage="judge")
    assert model.last.fields("Question") == ["Where?", "When?"]
    assert model.last.items() == [
        {"id": "q1", "Question": "Where?", "Reference answer": "gold Where?", "Assistant's answer": "Here"},
        {"id": "q2", "Question": "When?", "Reference answer": "gold When?", "Assistant's answer": "Now"},
    ]
    await model.chat(official_judge_messages(batch), stage="judge")
    official = [i for i in model.last.items() if "Question ID" in i]
    assert [(i["Question ID"], i["Question"], i["Assistant Answer"]) for i in official] == [
        ("q1", "Where?", "Here"),
        ("q2", "When?", "Now"),
    ]


async def test_the_same_script_answers_over_http():
    model = ScriptedChatModel(rules=[When("Paris", question="Where is the Louvre?")], default="no idea")
    with MockOpenAIServer(responder=model.responder) as srv:
        client = load_chat_model("openai:mock", base_url=srv.base_url, cache=None)
        a = await client.chat(user("Question: Where is the Louvre?"), GenerationConfig(temperature=0.0, json_mode=True))
        b = await client.chat(user("Question: Where is Big Ben?"), stage="judge")
        await client.aclose()
    assert (a.text, b.text) == ("Paris", "no idea")
    assert [r.stage for r in model.requests] == ["http", "http"] and model.requests[0].system == "Be brief."
    assert model.requests[0].config.temperature == 0.0 and model.requests[0].config.json_mode
    assert model.questions() == ["Where is the Louvre?", "Where is Big Ben?"]
