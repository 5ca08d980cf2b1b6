"""The model gateway under the official ``openai`` client: chat, JSON schema, tools, embeddings,
streaming, the request cache (counted upstream calls), usage and tagged transcripts."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import jsonschema
import numpy as np
import openai
import pytest

from h2hmem.embed import load_embedder
from h2hmem.gateway import TAG_HEADER, ModelGateway
from h2hmem.llm import load_chat_model, record_calls, tag_calls
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel, When, hashed_embedding

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 18}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
TAG = {"dialogue": "dyadic/dialogue5", "session": "session3", "stage": "memory_build"}


@pytest.fixture()
def upstream():
    """A scripted model behind the mock server: counts the calls that really leave the gateway."""
    scripted = ScriptedChatModel(rules=[When("Paris", contains="Louvre")])  # the rest: protocol replies
    with MockOpenAIServer(responder=scripted.responder) as srv:
        yield scripted, srv


@pytest.fixture()
async def gateway(upstream, tmp_path):
    _, srv = upstream
    records: list[dict] = []
    chat = load_chat_model("openai:mock", base_url=srv.base_url, cache=tmp_path / "requests.sqlite", max_retries=0)
    embedder = load_embedder("openai:mock-embed", base_url=srv.base_url, cache=tmp_path / "embeddings.sqlite")
    async with chat, ModelGateway(chat, embedder, sink=records.append) as gw:
        gw.records = records  # type: ignore[attr-defined]
        yield gw
    await embedder.aclose()


def _client(gw: ModelGateway, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gw.base_url, api_key="any", max_retries=0, default_headers=headers or None)


async def test_chat_is_cached_counted_and_recorded_with_its_tag(gateway, upstream):
    scripted, srv = upstream
    client = _client(gateway, **{TAG_HEADER: json.dumps(TAG)})
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where is the Louvre?"}]
    first = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0, max_tokens=50)
    assert first.choices[0].message.content == "Paris" and first.choices[0].finish_reason == "stop"
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens == 1  # "Paris": one cl100k token
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=messages, temperature=0, max_tokens=50
    )
    second = raw.parse()
    assert second.choices[0].message.content == "Paris" and raw.headers["x-h2hmem-cached"] == "true"
    assert scripted.calls == 1 and srv.calls == 1  # the second identical call never left the gateway
    assert second.usage.prompt_tokens == 0  # nothing was sent, nothing paid
    paid, hit = gateway.records
    assert (paid["cached"], hit["cached"]) == (False, True) and paid["cache_key"] == hit["cache_key"]
    for r in (paid, hit):
        assert (r["dialogue"], r["session"], r["stage"]) == ("dyadic/dialogue5", "session3", "memory_build")
        assert r["via"] == "gateway" and r["requested_model"] == "gpt-4o-mini" and r["model"] == "openai:mock"
    assert paid["messages"] == messages and paid["params"]["temperature"] == 0 and paid["params"]["max_tokens"] == 50
    s = gateway.stats
    assert (s.chat_requests, s.chat_cached, s.chat_failed) == (2, 1, 0)
    assert s.usage_by_stage["memory_build"].calls == 1 and s.usage_by_stage["memory_build"].cached_calls == 1
    assert gateway.model.usage_by_stage()["memory_build"].prompt_tokens == first.usage.prompt_tokens


async def test_json_schema_reply_is_schema_valid(gateway, upstream):
    scripted, _ = upstream
    fmt = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}}
    reply = await _client(gateway).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Extract the person."}], response_format=fmt
    )
    jsonschema.validate(json.loads(reply.choices[0].message.content), PERSON)
    sent = scripted.last.config
    assert json.loads(sent.json_schema) == {"name": "person", "schema": PERSON, "strict": True} and sent.json_mode
    assert gateway.records[0]["stage"] == "other"  # untagged: the gateway's default stage


async def test_forced_tool_call_is_emulated_through_a_schema(gateway, upstream):
    scripted, _ = upstream
    tools = [
        {"type": "function", "function": {"name": "add_person", "description": "Store a person.", "parameters": PERSON}}
    ]
    reply = await _client(gateway).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Ann is 30."}],
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "add_person"}},
    )
    (call,) = reply.choices[0].message.tool_calls
    assert reply.choices[0].finish_reason == "tool_calls" and call.function.name == "add_person"
    assert json.loads(call.function.arguments) == {"name": "mock name", "age": 18}
    assert json.loads(scripted.last.config.json_schema)["schema"] == PERSON
    assert "Call the function add_person: Store a person." in scripted.last.system


async def test_tool_choice_auto_offers_every_tool_or_text(gateway, upstream):
    scripted, _ = upstream
    tools = [
        {"type": "function", "function": {"name": "add_person", "parameters": PERSON}},
        {"type": "function", "function": {"name": "forget", "parameters": {"type": "object", "properties": {}}}},
    ]
    reply = await _client(gateway).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Ann is 30."}], tools=tools
    )
    # the mock takes the first branch of the union: a call of the first tool
    assert reply.choices[0].message.tool_calls[0].function.name == "add_person"
    union = json.loads(scripted.last.config.json_schema)["schema"]["anyOf"]
    assert [b["properties"].get("name", {}).get("const") for b in union] == ["add_person", "forget", None]


async def test_streaming_is_served_as_sse(gateway):
    stream = await _client(gateway).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Where is the Louvre?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Paris" and chunks[-2].choices[0].finish_reason == "stop" and chunks[-1].usage.completion_tokens == 1


async def test_a_streamed_tool_call_arrives_as_tool_call_deltas(gateway):
    tools = [{"type": "function", "function": {"name": "add_person", "parameters": PERSON}}]
    stream = await _client(gateway).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Ann is 30."}],
        tools=tools,
        tool_choice="required",
        stream=True,
    )
    chunks = [c async for c in stream]
    (delta,) = chunks[0].choices[0].delta.tool_calls
    assert delta.index == 0 and delta.function.name == "add_person"
    assert json.loads(delta.function.arguments) == {"name": "mock name", "age": 18}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_embeddings_are_served_from_the_embedder_and_its_cache(gateway, upstream):
    _, srv = upstream
    client = _client(gateway, **{TAG_HEADER: json.dumps({"stage": "answer"})})
    texts = ["red car in Paris", "a golden retriever"]
    first = await client.embeddings.create(model="text-embedding-3-small", input=texts)  # the client asks for base64
    assert [len(d.embedding) for d in first.data] == [64, 64]
    for d, text in zip(first.data, texts):
        assert np.allclose(d.embedding, hashed_embedding(text, 64), atol=1e-6)
    assert first.usage.prompt_tokens > 0
    again = await client.embeddings.create(model="text-embedding-3-small", input=texts[0], encoding_format="float")
    assert np.allclose(again.data[0].embedding, first.data[0].embedding, atol=1e-6)
    assert srv.endpoints.count("embeddings") == 1  # the repeat came from the embedding cache
    assert gateway.stats.embedded_texts_by_stage == {"answer": 3} and gateway.stats.embedding_requests == 2


async def test_the_in_process_tag_reaches_the_transcript_through_a_sync_client_in_a_thread(gateway):
    def call_like_a_product() -> str:
        client = openai.OpenAI(base_url=gateway.base_url, api_key="any", http_client=gateway.http_client())
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Where is the Louvre?"}]
        )
        return reply.choices[0].message.content

    with tag_calls(dialogue="dyadic/dialogue1", session="session2", stage="memory_build", question_ids=["q/1"]):
        assert await asyncio.to_thread(call_like_a_product) == "Paris"
    (record,) = gateway.records
    assert (record["dialogue"], record["session"], record["stage"]) == ("dyadic/dialogue1", "session2", "memory_build")
    assert record["question_ids"] == ["q/1"]


async def test_image_parts_are_stored_by_content_and_sent_on(tmp_path):
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake pixels").decode()
    scripted = ScriptedChatModel(default="a cat", supports_images=True)
    async with ModelGateway(scripted, image_dir=tmp_path / "images") as gw:
        reply = await _client(gw).chat.completions.create(
            model="m",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}", "detail": "low"}},
                    ],
                }
            ],
        )
    assert reply.choices[0].message.content == "a cat"
    (image,) = scripted.last.images
    assert image.path.parent == tmp_path / "images" and image.path.read_bytes().startswith(b"\x89PNG")
    assert image.detail == "low" and image.encoding == "raw" and image.path.suffix == ".png"


async def test_the_default_image_folder_exists_only_from_the_first_image_until_stop(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the system's temporary directory, here
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake pixels").decode()
    scripted = ScriptedChatModel(default="a cat", supports_images=True)
    async with ModelGateway(scripted) as gw:
        await _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert list(tmp_path.iterdir()) == []  # no image, no folder: a killed process leaves nothing
        image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
        await _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": [image]}])
        (folder,) = tmp_path.iterdir()
        assert folder == gw.image_dir and folder.name.startswith("h2hmem-gateway-images-")
        assert folder.stat().st_mode & 0o777 == 0o700 and [p.suffix for p in folder.iterdir()] == [".png"]
    assert list(tmp_path.iterdir()) == []  # removed on stop


async def test_models_lists_the_served_model_and_embedder(gateway):
    models = await _client(gateway).models.list()
    assert [m.id for m in models.data] == ["openai:mock", "openai:mock-embed"]
    async with httpx.AsyncClient() as http:
        root = await http.get(gateway.base_url.removesuffix("/v1") + "/models")  # also without /v1
    assert root.status_code == 200 and root.json()["data"][0]["id"] == "openai:mock"


async def test_without_a_sink_the_calls_go_to_the_sink_the_gateway_was_started_in():
    records: list[dict] = []
    with MockOpenAIServer(responder=lambda body: "fine") as srv:
        async with load_chat_model("openai:mock", base_url=srv.base_url) as model:
            with record_calls(records.append):
                gw = await ModelGateway(model).start()
            try:
                reply = await _client(gw).chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            finally:
                await gw.stop()
    assert reply.choices[0].message.content == "fine"
    (record,) = records
    assert record["via"] == "gateway" and record["reply"] == "fine" and record["stage"] == "other"


async def test_a_tagged_base_url_tags_calls_from_threads_the_context_does_not_reach(gateway):
    url = gateway.tagged_base_url(dialogue="dyadic/dialogue9", session="session1", stage="memory_build")
    assert url == gateway.tagged_base_url(stage="memory_build", session="session1", dialogue="dyadic/dialogue9")

    def product_thread_pool_call() -> str:  # a plain client: no hook, no context
        client = openai.OpenAI(base_url=url, api_key="any", max_retries=0)
        reply = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Where is the Louvre?"}],
            extra_headers={TAG_HEADER: json.dumps({"session": "session2"})},  # a header refines the URL's tag
        )
        return reply.choices[0].message.content

    assert await asyncio.to_thread(product_thread_pool_call) == "Paris"
    (record,) = gateway.records
    assert (record["dialogue"], record["session"], record["stage"]) == ("dyadic/dialogue9", "session2", "memory_build")
    async with httpx.AsyncClient() as http:
        unknown = await http.get(gateway.base_url.removesuffix("/v1") + "/t/0123456789abcdef/v1/models")
    assert unknown.status_code == 404 and "unknown tag path" in unknown.json()["error"]["message"]
