"""Fault handling of the central wrapper against the mock server."""

from __future__ import annotations

import time

import pytest

from h2hmem.llm import (
    BadResponseError,
    ConnectionFailure,
    ContentFilterError,
    Message,
    ModelTimeoutError,
    OutputTruncatedError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    load_chat_model,
)
from h2hmem.testing import Fault, MockOpenAIServer, Rule

FAST = RetryPolicy(max_retries=3, initial_backoff_s=0.01, max_backoff_s=0.02)

Q = [Message(role="user", content="What is the name of Alice's cat?")]


async def ask(srv, **kw):
    model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, retry=kw.pop("retry", FAST), **kw)
    try:
        return await model.chat(Q), model
    finally:
        await model.aclose()


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_three_times_then_success(status):
    with MockOpenAIServer(script=[Fault.http(status)] * 3) as srv:
        result, _ = await ask(srv)
    assert srv.calls == 4
    assert result.text.startswith("mock-") and not result.cached


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_exhausted_raises_server_error_naming_request(status):
    with MockOpenAIServer(script=[Rule(Fault.http(status))]) as srv:
        url = srv.base_url
        with pytest.raises(ServerError) as info:
            await ask(srv)
    assert srv.calls == FAST.max_retries + 1
    err = info.value
    assert err.status == status
    assert err.request.model == "gpt-4o-mini" and err.request.base_url == url
    msg = str(err)
    assert f"HTTP {status}" in msg and url in msg and "Alice's cat" in msg and "stage=answer" in msg


async def test_429_retry_after_is_honoured():
    with MockOpenAIServer(script=[Fault.http(429, retry_after=1)]) as srv:
        start = time.perf_counter()
        result, _ = await ask(srv)
        elapsed = time.perf_counter() - start
    assert srv.calls == 2 and result.text.startswith("mock-")
    # the fast policy alone would wait ≤ 0.02 s: the 1 s is the server's Retry-After
    assert 1.0 <= elapsed < 1.8


async def test_429_retry_after_ms_is_honoured():
    with MockOpenAIServer(script=[Fault.http(429, retry_after_ms=400)]) as srv:
        start = time.perf_counter()
        await ask(srv)
        elapsed = time.perf_counter() - start
    assert 0.4 <= elapsed < 1.0


async def test_429_without_retry_after_uses_backoff():
    policy = RetryPolicy(max_retries=3, initial_backoff_s=0.1, max_backoff_s=1.0)
    with MockOpenAIServer(script=[Fault.http(429)] * 2) as srv:
        start = time.perf_counter()
        result, _ = await ask(srv, retry=policy)
        elapsed = time.perf_counter() - start
    assert srv.calls == 3 and result.text.startswith("mock-")
    # waits: 0.1 + U(0,0.1), then 0.2 + U(0,0.1) → between 0.3 and 0.5 s
    assert 0.3 <= elapsed < 1.0


async def test_429_exhausted_raises_rate_limit_error():
    with MockOpenAIServer(script=[Rule(Fault.http(429, retry_after=0))]) as srv:
        with pytest.raises(RateLimitError) as info:
            await ask(srv)
    assert info.value.retry_after == 0.0 and srv.calls == 4


@pytest.mark.parametrize("fault", [Fault.reset(), Fault.truncated_body()])
async def test_connection_failures_recovered(fault):
    with MockOpenAIServer(script=[fault, fault]) as srv:
        result, _ = await ask(srv)
    assert srv.calls == 3 and result.text.startswith("mock-")


async def test_connection_reset_exhausted():
    with MockOpenAIServer(script=[Rule(Fault.reset())]) as srv:
        with pytest.raises(ConnectionFailure, match="Alice's cat"):
            await ask(srv)


async def test_read_timeout_recovered_and_exhausted():
    with MockOpenAIServer(script=[Fault.timeout(5)]) as srv:
        start = time.perf_counter()
        result, _ = await ask(srv, timeout_s=0.3)
        assert time.perf_counter() - start < 2 and srv.calls == 2 and result.text.startswith("mock-")
    with MockOpenAIServer(script=[Rule(Fault.timeout(5))]) as srv:
        with pytest.raises(ModelTimeoutError, match="0.3 s"):
            await ask(srv, timeout_s=0.3, retry=RetryPolicy(max_retries=1, initial_backoff_s=0.01))
    assert srv.calls == 2


@pytest.mark.parametrize(
    "fault,reason",
    [
        (Fault.malformed_json(), "not valid JSON"),
        (Fault.empty_choices(), "empty 'choices'"),
        (Fault.missing_choices(), "no 'choices'"),
    ],
)
async def test_bad_replies_recovered_or_raised(fault, reason):
    with MockOpenAIServer(script=[fault]) as srv:
        result, _ = await ask(srv)
    assert srv.calls == 2 and result.text.startswith("mock-")
    with MockOpenAIServer(script=[Rule(fault)]) as srv:
        with pytest.raises(BadResponseError, match=reason):
            await ask(srv)
    assert srv.calls == 4


async def test_content_filter_is_not_retried(tmp_path):
    with MockOpenAIServer(script=[Fault.finish("content_filter")]) as srv:
        with pytest.raises(ContentFilterError):
            await ask(srv, cache=tmp_path / "c.sqlite")
        assert srv.calls == 1
        # the error was not cached: the same request now reaches the server and succeeds
        result, _ = await ask(srv, cache=tmp_path / "c.sqlite")
        assert srv.calls == 2 and not result.cached


async def test_length_returned_or_raised():
    with MockOpenAIServer(script=[Fault.finish("length")]) as srv:
        result, _ = await ask(srv)
    assert result.finish_reason == "length" and result.text.startswith("mock-")
    with MockOpenAIServer(script=[Fault.finish("length")]) as srv:
        with pytest.raises(OutputTruncatedError):
            await ask(srv, on_truncation="raise")


async def test_bad_request_is_not_retried():
    with MockOpenAIServer(script=[Rule(Fault.http(400, message="unknown parameter"))]) as srv:
        from h2hmem.llm import BadRequestError

        with pytest.raises(BadRequestError, match="unknown parameter"):
            await ask(srv)
    assert srv.calls == 1


async def test_a_connect_timeout_is_a_connection_failure_not_a_slow_reply():
    """A host that is switched off or drops packets never completes the TCP handshake: aiohttp raises
    ConnectionTimeoutError (also a TimeoutError). It is a ConnectionFailure — the server cannot be
    reached, which the runner's unreachable-server stop counts — not a ModelTimeoutError."""
    import aiohttp

    from h2hmem.llm import ConnectionFailure, ModelTimeoutError
    from h2hmem.llm._errors import RequestInfo
    from h2hmem.llm._http import post_json

    class Pool:
        def __init__(self, exc):
            self.exc = exc

        async def session(self):
            exc = self.exc

            class Session:
                def post(self, *a, **kw):
                    raise exc

            return Session()

    info = RequestInfo("m", "http://10.255.255.1/v1", "test")
    with pytest.raises(ConnectionFailure, match="no connection within 30 s"):
        await post_json(Pool(aiohttp.ConnectionTimeoutError()), "u", {}, timeout_s=60, info=info)
    with pytest.raises(ModelTimeoutError, match="no reply within 60 s"):  # connected, no reply in time
        await post_json(Pool(aiohttp.ServerTimeoutError()), "u", {}, timeout_s=60, info=info)
