"""Bad input gets an OpenAI error JSON with a 4xx naming the field; upstream failures map to 429/502/504;
a spend-guard stop is a 429 the host can re-raise. Nothing answers 500."""

from __future__ import annotations

import json

import httpx
import pytest

from h2hmem.gateway import TAG_HEADER, ModelGateway
from h2hmem.llm import RateLimitError, ServerError
from h2hmem.testing import ScriptedChatModel

USER = [{"role": "user", "content": "hi"}]


class BudgetStop(BaseException):
    """Stands in for the spend guard's BudgetExhausted (a BaseException on purpose)."""


@pytest.fixture()
async def post():
    model = ScriptedChatModel(
        rules=[
            (lambda r: "slow" in r.text, RateLimitError("slow down", retry_after=3)),
            (lambda r: "down" in r.text, ServerError("upstream is down")),
            (lambda r: "budget" in r.text, BudgetStop("budget of $1.0000 cannot cover the next answer call")),
            (lambda r: "unbounded" in r.text, ValueError("--max-cost cannot bound a call without max_tokens")),
        ],
        default="ok",
    )
    async with ModelGateway(model) as gw, httpx.AsyncClient(base_url=gw.base_url) as http:

        async def send(path: str, body: object, **headers: str) -> httpx.Response:
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            return await http.post(path, content=content, headers={"content-type": "application/json", **headers})

        send.gateway = gw  # type: ignore[attr-defined]
        yield send


@pytest.mark.parametrize(
    "body,status,param,message",
    [
        (b"{not json", 400, None, "the request body is not valid JSON"),
        (b"[1, 2]", 400, None, "must be a JSON object"),
        ({"messages": USER}, 400, "model", "invalid request: model: Field required"),
        ({"model": "m", "messages": []}, 400, "messages", "at least 1 item"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, 400, "messages.0.role", "Input should be"),
        ({"model": "m", "messages": USER, "n": 2}, 400, "n", "n=2 is not supported"),
        ({"model": "m", "messages": USER, "stop": ["\n"]}, 400, "stop", "'stop' sequences are not supported"),
        ({"model": "m", "messages": USER, "temperature": 3}, 400, "temperature", "less than or equal to 2"),
        (
            {"model": "m", "messages": USER, "response_format": {"type": "json_schema"}},
            400,
            "response_format",
            "needs a 'json_schema' object",
        ),
        (
            {
                "model": "m",
                "messages": USER,
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "tool_choice": {"type": "function", "function": {"name": "g"}},
            },
            400,
            "tool_choice",
            "names function 'g', which is not in 'tools'",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}],
                    }
                ],
            },
            400,
            "messages.0.content.0.image_url.url",
            "image URLs are not fetched",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}],
                    }
                ],
            },
            400,
            "messages.0.content.0.image_url.url",
            "not valid base64",
        ),
        (
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            400,
            "messages.0",
            "'input_audio' are not supported",
        ),
    ],
)
async def test_bad_chat_requests_are_400_naming_the_field(post, body, status, param, message):
    r = await post("/chat/completions", body)
    err = r.json()["error"]
    assert r.status_code == status and err["type"] == "invalid_request_error", r.text
    assert err["param"] == param and message in err["message"]


async def test_bad_tag_header_and_embedding_requests(post):
    r = await post("/chat/completions", {"model": "m", "messages": USER}, **{TAG_HEADER: '{"stage": "lunch"}'})
    assert r.status_code == 400 and "stage 'lunch' is not one of caption, memory_build" in r.json()["error"]["message"]
    r = await post("/chat/completions", {"model": "m", "messages": USER}, **{TAG_HEADER: "not json"})
    assert r.status_code == 400 and r.json()["error"]["param"] == TAG_HEADER
    r = await post("/embeddings", {"model": "e", "input": "x"})
    assert r.status_code == 400 and "serves no embedder" in r.json()["error"]["message"]
    r = await post("/embeddings", {"model": "e", "input": []})
    assert r.status_code == 400 and r.json()["error"]["param"] == "input"
    assert post.gateway.stats.rejected == 4


async def test_unknown_routes_are_404_in_openai_form(post):
    r = await post("/completions", {"model": "m", "prompt": "x"})
    assert r.status_code == 404 and r.json()["error"]["message"] == "no route POST /v1/completions"


@pytest.mark.parametrize(
    "text,status,code",
    [("slow", 429, "rate_limit_exceeded"), ("down", 502, "upstream_error"), ("budget", 429, "insufficient_quota")],
)
async def test_upstream_failures_map_to_retryable_statuses(post, text, status, code):
    r = await post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": text}]})
    assert r.status_code == status and r.json()["error"]["code"] == code
    gw = post.gateway
    assert gw.stats.chat_failed == 1
    if text == "slow":
        assert r.headers["retry-after"] == "3"
    if text == "budget":
        with pytest.raises(BudgetStop, match="budget of"):
            gw.raise_if_stopped()
    else:
        gw.raise_if_stopped()  # nothing stopped the model


async def test_request_and_budget_refusals_say_what_happened_without_a_class_name(post):
    # a ValueError about the request (the spend guard's "no max_tokens") and the guard's refusal are
    # messages for the caller: no Python class name in front; upstream failures keep theirs
    r = await post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "unbounded"}]})
    assert r.status_code == 400 and r.json()["error"]["message"] == "--max-cost cannot bound a call without max_tokens"
    r = await post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "budget"}]})
    assert r.json()["error"]["message"] == "budget of $1.0000 cannot cover the next answer call"
    r = await post("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "down"}]})
    assert r.json()["error"]["message"].startswith("ServerError: upstream is down")
