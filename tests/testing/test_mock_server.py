from __future__ import annotations

import asyncio
import time

import aiohttp
import httpx
import numpy as np
import pytest

from h2hmem.llm import count_tokens
from h2hmem.testing import Fault, MockOpenAIServer, Rule, default_responder, hashed_embedding


def chat_body(text: str, **extra):
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def test_default_reply_usage_and_default_responder():
    with MockOpenAIServer() as srv:
        r = httpx.post(f"{srv.base_url}/chat/completions", json=chat_body("hello world"))
    assert r.status_code == 200
    data = r.json()
    # default answer: "mock-" + first 16 hex digits of sha256("hello world")
    assert data["choices"][0]["message"]["content"] == "mock-b94d27b9934d3e08"
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"]["prompt_tokens"] == 2  # cl100k "hello world"
    assert data["usage"]["completion_tokens"] == count_tokens("mock-b94d27b9934d3e08")
    assert srv.calls == 1 and srv.requests[0]["messages"][0]["content"] == "hello world"


def test_default_responder_json_mode():
    out = default_responder(chat_body("x", response_format={"type": "json_object"}))
    assert out.startswith('{"answer": "mock-')


def test_max_tokens_cuts_answer_with_length():
    with MockOpenAIServer(responder=lambda body: "one two three four five") as srv:
        data = httpx.post(f"{srv.base_url}/chat/completions", json=chat_body("q", max_tokens=2)).json()
    assert data["choices"][0]["message"]["content"] == "one two"
    assert data["choices"][0]["finish_reason"] == "length"
    assert data["usage"]["completion_tokens"] == 2


def test_script_positional_and_predicate_rules():
    script = [None, Rule(Fault.http(503), when="poison"), Fault.http(500), Rule(Fault.http(502), times=2)]
    with MockOpenAIServer(script=script) as srv:
        with httpx.Client() as c:

            def post(text):
                return c.post(f"{srv.base_url}/chat/completions", json=chat_body(text)).status_code

            # request 1 takes the positional None; request 2 mentions "poison" → 503 (forever)
            assert [post("a"), post("poison"), post("b"), post("c"), post("d"), post("e"), post("poison")] == [
                200,
                503,
                500,
                502,
                502,
                200,
                503,
            ]
    assert srv.calls == 7
    assert [f.status if f else None for f in srv.faults] == [None, 503, 500, 502, 502, None, 503]


def test_http_fault_headers_and_error_body():
    with MockOpenAIServer(script=[Fault.http(429, retry_after=2), Fault.http(429, retry_after_ms=250)]) as srv:
        with httpx.Client() as c:
            r1 = c.post(f"{srv.base_url}/chat/completions", json=chat_body("x"))
            r2 = c.post(f"{srv.base_url}/chat/completions", json=chat_body("x"))
    assert r1.status_code == 429 and r1.headers["retry-after"] == "2"
    assert r1.json()["error"]["type"] == "rate_limit_exceeded"
    assert r2.headers["retry-after-ms"] == "250" and "retry-after" not in r2.headers


def test_socket_faults():
    script = [Fault.reset(), Fault.truncated_body(), Fault.malformed_json(), Fault.timeout(5)]
    with MockOpenAIServer(script=script) as srv:
        url = f"{srv.base_url}/chat/completions"
        with pytest.raises(httpx.TransportError):
            httpx.post(url, json=chat_body("x"))
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(url, json=chat_body("x"))
        r = httpx.post(url, json=chat_body("x"))
        assert r.status_code == 200
        with pytest.raises(ValueError):
            r.json()
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url, json=chat_body("x"), timeout=0.3)
        assert httpx.post(url, json=chat_body("x")).status_code == 200


def test_choice_faults():
    script = [Fault.empty_choices(), Fault.missing_choices(), Fault.finish("length"), Fault.finish("content_filter")]
    with MockOpenAIServer(script=script) as srv:
        with httpx.Client() as c:
            replies = [c.post(f"{srv.base_url}/chat/completions", json=chat_body("x")).json() for _ in range(4)]
    assert replies[0]["choices"] == []
    assert "choices" not in replies[1]
    assert replies[2]["choices"][0]["finish_reason"] == "length"
    assert replies[3]["choices"][0]["finish_reason"] == "content_filter"
    assert replies[3]["choices"][0]["message"]["content"] is None


def test_embeddings_are_hashed_unit_vectors():
    with MockOpenAIServer(embedding_dim=32) as srv:
        data = httpx.post(f"{srv.base_url}/embeddings", json={"model": "e", "input": ["red cat", "cat red"]}).json()
    a, b = (np.array(d["embedding"]) for d in data["data"])
    assert a.shape == (32,) and abs(np.linalg.norm(a) - 1) < 1e-9
    np.testing.assert_allclose(a, b)  # bag of words: order does not matter
    assert hashed_embedding("", 8) == [1.0] + [0.0] * 7


def test_responder_failure_is_http_500():
    def boom(body):
        raise RuntimeError("nope")

    with MockOpenAIServer(responder=boom) as srv:
        r = httpx.post(f"{srv.base_url}/chat/completions", json=chat_body("x"))
    assert r.status_code == 500 and "nope" in r.json()["error"]["message"]


async def test_64_concurrent_connections_overlap():
    async def post(c, i):
        async with c.post(f"{srv.base_url}/chat/completions", json=chat_body(str(i))) as r:
            await r.read()
            return r.status

    with MockOpenAIServer(latency_s=0.2) as srv:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as c:
            start = time.perf_counter()
            statuses = await asyncio.gather(*(post(c, i) for i in range(128)))
            elapsed = time.perf_counter() - start
    assert statuses == [200] * 128
    assert srv.max_in_flight == 64
    # 128 calls at concurrency 64 with 0.2 s latency: two waves ≈ 0.4 s
    assert elapsed < 1.5


def test_latency_and_tokens_per_s():
    answer = " ".join(["word"] * 20)  # 20 cl100k tokens ("word" + 19 × " word")
    assert count_tokens(answer) == 20
    with MockOpenAIServer(latency_s=0.2, tokens_per_s=100, responder=lambda b: answer) as srv:
        with httpx.Client() as c:
            c.get(f"{srv.base_url}/models")  # connect first
            start = time.perf_counter()
            c.post(f"{srv.base_url}/chat/completions", json=chat_body("x"))
            elapsed = time.perf_counter() - start
    assert 0.4 <= elapsed < 0.9  # 0.2 s latency + 20 tokens / 100 tokens/s


def test_unknown_route_and_bad_json_are_not_counted():
    with MockOpenAIServer() as srv:
        with httpx.Client() as c:
            assert c.post(f"{srv.base_url}/completions", json={}).status_code == 404
            assert c.post(f"{srv.base_url}/chat/completions", content=b"{nope").status_code == 400
            assert c.get(f"{srv.base_url}/models").json()["data"][0]["id"] == "mock"
    assert srv.calls == 0


def test_keep_requests_false_counts_calls_without_keeping_bodies():
    import httpx

    from h2hmem.testing import MockOpenAIServer

    with MockOpenAIServer(keep_requests=False) as srv:
        for _ in range(3):
            r = httpx.post(
                f"{srv.base_url}/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            )
            assert r.status_code == 200
        assert srv.calls == 3 and srv.requests == []
