"""Central wrapper: round-robin, concurrency limit, usage and cost, cache behaviour, images."""

from __future__ import annotations

import asyncio
import base64
import io

import pytest
from PIL import Image

from h2hmem.llm import (
    ChatModel,
    GenerationConfig,
    ImagePart,
    Message,
    RequestCache,
    RetryPolicy,
    TextPart,
    count_tokens,
    load_chat_model,
)
from h2hmem.testing import Fault, MockOpenAIServer

FAST = RetryPolicy(max_retries=3, initial_backoff_s=0.01, max_backoff_s=0.02)


def user(text: str) -> list[Message]:
    return [Message(role="user", content=text)]


async def test_round_robin_over_two_servers():
    with MockOpenAIServer() as a, MockOpenAIServer() as b:
        model = load_chat_model("openai:m", base_url=[a.base_url, b.base_url], retry=FAST)
        for i in range(6):
            await model.chat(user(f"q{i}"))
        await model.aclose()
    assert (a.calls, b.calls) == (3, 3)


async def test_retry_goes_to_the_next_server():
    with MockOpenAIServer(script=[Fault.http(503)]) as a, MockOpenAIServer() as b:
        model = load_chat_model("openai:m", base_url=[a.base_url, b.base_url], retry=FAST)
        result = await model.chat(user("q"))
        await model.aclose()
    assert (a.calls, b.calls) == (1, 1) and result.text.startswith("mock-")


@pytest.mark.parametrize("limit", [1, 5])
async def test_concurrency_limit_respected(limit):
    with MockOpenAIServer(latency_s=0.05) as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, concurrency=limit, retry=FAST)
        await asyncio.gather(*(model.chat(user(f"q{i}")) for i in range(20)))
        await model.aclose()
    assert srv.calls == 20 and srv.max_in_flight == limit


async def test_usage_and_cost_per_stage():
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, retry=FAST)
        r1 = await model.chat(user("hello world"), stage="answer")
        r2 = await model.chat(user("hello world again"), stage="judge")
        await model.chat(user("hello world"), stage="judge")
        await model.aclose()
    # prompt tokens are cl100k tokens of the user text; the answer "mock-<16 hex>" has its own count
    assert r1.usage.prompt_tokens == 2 and r2.usage.prompt_tokens == 3
    assert r1.usage.completion_tokens == count_tokens(r1.text)
    # gpt-4o-mini: $0.15 / 1M input, $0.60 / 1M output
    assert r1.usage.cost_usd == pytest.approx((2 * 0.15 + r1.usage.completion_tokens * 0.60) / 1e6)
    stages = model.usage_by_stage()
    assert stages["answer"].calls == 1 and stages["judge"].calls == 2
    assert stages["judge"].prompt_tokens == 3 + 2
    total = model.total_usage()
    assert total.calls == 3 and total.prompt_tokens == 7
    assert total.cost_usd == pytest.approx(sum(u.cost_usd for u in stages.values()))


async def test_price_override_and_unknown_model():
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:my-model", base_url=srv.base_url, prices={"my-model": (1.0, 2.0)})
        r = await model.chat(user("hello world"))
        other = load_chat_model("openai:unknown-x", base_url=srv.base_url)
        r2 = await other.chat(user("hello world"))
        await model.aclose()
        await other.aclose()
    assert r.usage.cost_usd == pytest.approx((2 * 1.0 + r.usage.completion_tokens * 2.0) / 1e6)
    assert r2.usage.cost_usd == 0.0


async def test_cache_hit_refresh_and_key(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=cache)
        first = await model.chat(user("hello"))
        second = await model.chat(user("hello"))
        assert srv.calls == 1
        assert second.cached and second.text == first.text and second.finish_reason == "stop"
        assert second.usage.calls == 0 and second.usage.cached_calls == 1 and second.usage.prompt_tokens == 0
        # generation parameters are part of the key; concurrency/retry settings are not
        await model.chat(user("hello"), GenerationConfig(temperature=0.0))
        assert srv.calls == 2
        other_knobs = load_chat_model("openai:m", base_url=srv.base_url, cache=cache, concurrency=3, max_retries=1)
        assert (await other_knobs.chat(user("hello"))).cached
        # refresh ignores hits but writes
        refresh = load_chat_model("openai:m", base_url=srv.base_url, cache=cache, refresh=True)
        r = await refresh.chat(user("hello"))
        assert not r.cached and srv.calls == 3
        # another base URL is another key (local servers differ)
        with MockOpenAIServer() as srv2:
            m2 = load_chat_model("openai:m", base_url=srv2.base_url, cache=cache)
            assert not (await m2.chat(user("hello"))).cached
            await m2.aclose()
        for m in (model, other_knobs, refresh):
            await m.aclose()
    assert model.usage_by_stage()["answer"].cached_calls == 1
    assert len(cache) == 3


async def test_round_robin_cache_key_uses_sorted_urls(tmp_path):
    with MockOpenAIServer() as a, MockOpenAIServer() as b:
        m1 = load_chat_model("openai:m", base_url=[a.base_url, b.base_url], cache=tmp_path / "c.sqlite")
        m2 = load_chat_model("openai:m", base_url=[b.base_url, a.base_url], cache=tmp_path / "c.sqlite")
        await m1.chat(user("x"))
        assert (await m2.chat(user("x"))).cached
        await m1.aclose()
        await m2.aclose()


def _png(path, size, color=(200, 30, 30)):
    Image.new("RGB", size, color).save(path)
    return path


def _decode_data_url(url: str) -> Image.Image:
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


async def test_image_part_sent_as_resized_jpeg_data_url(tmp_path):
    big = _png(tmp_path / "big.png", (2000, 1000))
    msg = Message(
        role="user",
        content=[TextPart(text="What is shown?"), ImagePart(name="session1/1.png", path=big, caption="a red square")],
    )
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:gpt-4o", base_url=srv.base_url)
        result = await model.chat([msg])
        await model.aclose()
    parts = srv.requests[0]["messages"][0]["content"]
    assert parts[0] == {"type": "text", "text": "What is shown?"}
    assert set(parts[1]) == {"type", "image_url"} and set(parts[1]["image_url"]) == {"url"}
    img = _decode_data_url(parts[1]["image_url"]["url"])
    assert img.format == "JPEG" and img.size == (1024, 512)
    assert result.images_substituted == 0
    # usage: the mock counts 85 tokens per image part plus the text tokens
    assert result.usage.prompt_tokens == count_tokens("What is shown?") + 85


async def test_missing_image_and_text_only_mode(tmp_path):
    small = _png(tmp_path / "s.png", (10, 10))
    content = [
        TextPart(text="Look:"),
        ImagePart(name="s1/2.png", path=tmp_path / "gone.png", caption="a dog"),
        ImagePart(name="s1/3.png", path=None),
        ImagePart(name="s1/1.png", path=small, caption="red"),
    ]
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url)
        r = await model.chat([Message(role="user", content=content)])
        text_only = load_chat_model("openai:m", base_url=srv.base_url, text_only=True)
        r2 = await text_only.chat([Message(role="user", content=content)])
        await model.aclose()
        await text_only.aclose()
    sent = srv.requests[0]["messages"][0]["content"]
    assert [p["type"] for p in sent] == ["text", "text", "text", "image_url"]
    assert sent[1]["text"] == "[Image s1/2.png: a dog]" and sent[2]["text"] == "[Image s1/3.png]"
    assert r.images_substituted == 2
    # text-only: every part is text, so the content is sent as one string
    assert (
        srv.requests[1]["messages"][0]["content"]
        == "Look:\n[Image s1/2.png: a dog]\n[Image s1/3.png]\n[Image s1/1.png: red]"
    )
    assert r2.images_substituted == 3 and not text_only.supports_images


async def test_image_cache_key_uses_content_not_path(tmp_path):
    a = _png(tmp_path / "a.png", (20, 20))
    b = _png(tmp_path / "b.png", (20, 20))  # same pixels, other path
    c = _png(tmp_path / "c.png", (20, 20), color=(0, 0, 255))

    def ask(p):
        return [Message(role="user", content=[ImagePart(name="x", path=p)])]

    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=tmp_path / "c.sqlite")
        await model.chat(ask(a))
        assert (await model.chat(ask(b))).cached
        assert not (await model.chat(ask(c))).cached
        await model.aclose()


async def test_json_mode_and_seed_in_body():
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url)
        r = await model.chat(user("x"), GenerationConfig(json_mode=True, seed=7, temperature=0.3, max_tokens=50))
        await model.aclose()
    body = srv.requests[0]
    assert body["response_format"] == {"type": "json_object"}
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, 0.3, 50)
    assert r.text.startswith('{"answer": "mock-')


def test_spec_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="unknown model backend"):
        load_chat_model("hf:foo")
    with pytest.raises(ValueError, match="invalid model spec"):
        load_chat_model("gpt-4o")
    with pytest.raises(ValueError, match="no API key"):
        load_chat_model("openai:gpt-4o")
    with pytest.raises(ValueError, match="invalid base URL"):
        load_chat_model("openai:m", base_url="localhost:8000")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = load_chat_model("openai:gpt-4o-mini")
    assert isinstance(model, ChatModel) and model.spec == "openai:gpt-4o-mini" and model.supports_images
    assert model.backend.base_urls == ["http://127.0.0.1:9/v1"]
    assert model.context_tokens == 128_000 and model.count_tokens("hello world") == 2
    assert load_chat_model("openai:Qwen/Qwen2.5-VL-7B-Instruct").context_tokens == 32_768
    assert load_chat_model("openai:gpt-4o", context_tokens=4096).context_tokens == 4096


def test_sessions_closed_when_their_loop_ends(capfd):
    """No aclose(): each asyncio.run closes its own HTTP session on exit, without warnings."""
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url)
        texts = [asyncio.run(model.chat(user("same"))).text for _ in range(2)]
    assert texts[0] == texts[1]
    assert model.backend._pool._sessions == {}
    import gc

    gc.collect()
    assert "Unclosed" not in capfd.readouterr().err


def test_dropped_model_closes_its_session_quietly(capfd):
    import gc

    async def main(url):
        for _ in range(2):
            model = load_chat_model("openai:m", base_url=url)
            await model.chat(user("x"))
            del model
            gc.collect()
            await asyncio.sleep(0.05)  # the loop runs the generator that closes the dropped session

    with MockOpenAIServer() as srv:
        asyncio.run(main(srv.base_url))
    gc.collect()
    assert "Unclosed" not in capfd.readouterr().err


async def test_attempt_reaches_the_model_and_replays_from_the_cache(tmp_path):
    """A request asked again because its reply was unusable (``GenerationConfig.attempt``) is a new
    cache key, so it reaches the model; the wire body is the same; the first try keeps its old key."""
    cache = RequestCache(tmp_path / "c.sqlite")
    replies = iter(["unusable", "usable"])
    with MockOpenAIServer(responder=lambda body: next(replies)) as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=cache)
        cfg = GenerationConfig(temperature=0.3)
        first = await model.chat(user("hello"), cfg)
        again = await model.chat(user("hello"), cfg.model_copy(update={"attempt": 1}))
        assert (first.text, again.text) == ("unusable", "usable") and srv.calls == 2
        assert srv.requests[0] == srv.requests[1]  # "attempt" is never sent
        assert model.cache_key(user("hello"), cfg) == model.cache_key(
            user("hello"), cfg.model_copy(update={"attempt": 0})
        )
        # a rerun replays both tries from the cache
        assert (await model.chat(user("hello"), cfg.model_copy(update={"attempt": 1}))).cached
        assert srv.calls == 2
        await model.aclose()


async def test_as_parts_sends_a_list_even_without_an_image(tmp_path):
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=RequestCache(tmp_path / "c.sqlite"))
        await model.chat([Message(role="user", content="hi")])
        await model.chat([Message(role="user", content=[TextPart(text="hi")], as_parts=True)])
        await model.chat([Message(role="user", content="hi", as_parts=True)])
        assert srv.calls == 3  # the wire form is part of the key
        assert srv.requests[0]["messages"][0]["content"] == "hi"
        assert srv.requests[1]["messages"][0]["content"] == [{"type": "text", "text": "hi"}]
        assert srv.requests[2]["messages"][0]["content"] == [{"type": "text", "text": "hi"}]
        await model.aclose()
