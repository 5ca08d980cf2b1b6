"""Fixtures of the product-adapter tests: the sample dialogue, a mock endpoint that answers the
products' own prompts, and a guard that fails any connection to a non-loopback address."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from h2hmem.run import RunConfig, Selection
from h2hmem.testing import MockOpenAIServer
from h2hmem.testing._mock_server import default_responder, last_user_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mm_fakes import HashEmbedder

DIALOGUE = "multi-party/dialogue3"
"""One session of 81 turns among several people, 38 questions."""

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def assert_model_written(memories: list[str], extracted: set[str], turns: list[str]) -> None:
    """What a real extraction must show, for the real-model mem0 tests: ``memories`` (what mem0 stored) is
    not empty and every one is a fact the model wrote (``extracted``, from its JSON replies: not a
    fallback); not every one is a turn stored as it is (as ``infer=false`` would: a 1.5B model may restate
    a short turn verbatim as a fact, which is still its extraction); and each shares a word of five letters
    or more with what was said in ``turns``."""
    assert memories, "mem0 stored nothing from the real model's replies"
    assert set(memories) <= extracted
    lines = {t.strip() for t in turns}
    assert not all(m.strip() in lines for m in memories), memories
    spoken = _content_words(" ".join(turns))
    assert all(_content_words(m) & spoken for m in memories), [m for m in memories if not _content_words(m) & spoken]


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4}


class NonLoopbackConnection(AssertionError):
    """A product tried to reach a host other than this machine."""


@pytest.fixture
def loopback_only(monkeypatch):
    """Every socket connection or name lookup to a non-loopback host raises (loudly, in the thread
    that tried), and is listed in the returned list even when the product swallows the error."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in LOOPBACK:
            attempts.append(address)
            raise NonLoopbackConnection(f"connection to {address} (only loopback is allowed)")
        return real_connect(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and str(host) not in LOOPBACK:
            attempts.append(host)
            raise NonLoopbackConnection(f"name lookup of {host!r} (only loopback is allowed)")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


_MEM0_NEW = re.compile(r"## New Messages\n(.*?)\n\n## Observation Date\n(\S+)", re.S)


def mem0_reply(body: dict[str, Any]) -> str | None:
    """mem0's extraction call: one memory per new message (its text without the role prefix)."""
    m = _MEM0_NEW.search(last_user_text(body))
    if m is None:
        return None
    lines = [line.removeprefix("user: ").strip() for line in m.group(1).splitlines() if line.strip()]
    return json.dumps({"memory": [{"text": f"{line} (observed {m.group(2)})"} for line in lines]})


TOOL_PROMPT = "You can call these functions:"
"""How the model gateway asks a text model for a tool call (it emulates function calling)."""
_TURN_LINE = re.compile(r"\s*\[[^\]]+\] [^:]+: ")


def langmem_gateway_reply(body: dict[str, Any]) -> str | None:
    """LangMem's extraction through the gateway: one ``Memory`` call holding the batch's first turn line."""
    system = " ".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")
    if TOOL_PROMPT not in system or "- Memory:" not in system:
        return None
    lines = [ln.strip() for ln in last_user_text(body).splitlines() if _TURN_LINE.match(ln)]
    return json.dumps({"name": "Memory", "arguments": {"content": lines[0] if lines else "nothing"}})


COGNEE_SCHEMA = "You MUST respond with valid JSON conforming to this schema:"
"""How cognee's structured calls (``litellm_native``'s JSON-object path) end their system prompt."""
_SPEAKER = re.compile(r"^\s*\[[^\]]+\] ([^:]+): ", re.M)


def cognee_reply(body: dict[str, Any]) -> str | None:
    """cognee's cognify calls, valid for its pydantic models: ``KnowledgeGraph`` (every speaker of the
    chunk a Person node, each speaker linked to the next one by ``talks_with``) and
    ``SummarizedContent`` (a leading sentence, then the chunk's turn lines as bullets)."""
    system = " ".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")
    if COGNEE_SCHEMA not in system:
        return None
    text = last_user_text(body)
    if '"title": "KnowledgeGraph"' in system:
        people = list(dict.fromkeys(_SPEAKER.findall(text)))
        nodes = [{"id": p, "name": p, "type": "Person", "description": f"{p}, a participant"} for p in people]
        edges = [
            {
                "source_node_id": a,
                "target_node_id": b,
                "relationship_name": "talks_with",
                "description": f"{a} talks with {b}",
            }
            for a, b in zip(people, people[1:])
        ]
        return json.dumps({"nodes": nodes, "edges": edges})
    if '"title": "SummarizedContent"' in system:
        lines = [ln.strip() for ln in text.splitlines() if _TURN_LINE.match(ln)]
        return json.dumps({"summary": "A conversation.\n" + "\n".join(f"- {ln}" for ln in lines), "description": ""})
    return None


GRAPHITI_FIXED: dict[str, Any] = {
    "EdgeDuplicate": {"duplicate_facts": [], "contradicted_facts": []},  # every turn line is a fact of its own
    "EdgeTimestamps": {"valid_at": None, "invalid_at": None},  # a turn line's fact has no date of its own
    "SummarizedEntities": {"summaries": []},  # no entity summary to update
}
"""Graphiti's structured calls whose reply does not depend on the prompt."""


def schema_name(body: dict[str, Any]) -> str | None:
    """The name of the JSON schema a request's ``response_format`` asks for (Graphiti names each of its
    calls by its pydantic model: ``ExtractedEntities``, ``EdgeDuplicate``…); None for any other request."""
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") if fmt.get("type") == "json_schema" else None


_GRAPHITI_MESSAGE = re.compile(r"<CURRENT[ _]MESSAGE>\n(.*?)\n</CURRENT[ _]MESSAGE>", re.S)
_GRAPHITI_TIME = re.compile(r"<REFERENCE_TIME>\n(\S+)")


def graphiti_reply(body: dict[str, Any]) -> str | None:
    """Graphiti's calls (JSON-schema ``response_format``), valid for its pydantic models:
    ``ExtractedEntities`` (the speakers of the episode, in order), ``ExtractedEdges`` (each turn line a
    fact from its speaker to the episode's next other speaker, ``SAYS_TO``, valid from the episode's
    reference time) and :data:`GRAPHITI_FIXED`; its other structured calls get the mock's schema
    instance."""
    if (body.get("response_format") or {}).get("type") != "json_schema":
        return None
    name = schema_name(body)
    if name in GRAPHITI_FIXED:
        return json.dumps(GRAPHITI_FIXED[name])
    m = _GRAPHITI_MESSAGE.search(last_user_text(body))
    if name not in ("ExtractedEntities", "ExtractedEdges") or m is None:
        return default_responder(body)
    turns = [(t.group(1), ln.strip()) for ln in m.group(1).splitlines() if (t := _SPEAKER.match(ln))]
    people = list(dict.fromkeys(p for p, _ in turns))
    if name == "ExtractedEntities":
        return json.dumps({"extracted_entities": [{"name": p, "entity_type_id": 0} for p in people]})
    when = _GRAPHITI_TIME.search(last_user_text(body))  # the fact holds from the episode's time on
    edges = []
    for speaker, line in turns:
        others = people[people.index(speaker) + 1 :] + people[: people.index(speaker)]
        if others:
            edges.append(
                {
                    "source_entity_name": speaker,
                    "target_entity_name": others[0],
                    "relation_type": "SAYS_TO",
                    "fact": line,
                    "valid_at": when.group(1) if when else None,
                }
            )
    return json.dumps({"edges": edges})


class ProductMock(MockOpenAIServer):
    """The mock endpoint, answering mem0's JSON extraction prompt, LangMem's (unforced) tool
    calls (each new turn becomes one ``Memory`` call whose content is the turn's line), cognee's
    cognify calls (:func:`cognee_reply`) and Graphiti's structured calls (:func:`graphiti_reply`)."""

    def __init__(self, **kw: Any):
        super().__init__(responder=self._respond, embedding_dim=64, **kw)

    @staticmethod
    def _respond(body: dict[str, Any]) -> str:
        reply = mem0_reply(body) or langmem_gateway_reply(body) or cognee_reply(body) or graphiti_reply(body)
        if reply is not None:
            return reply
        return "mock-answer"

    async def _chat(self, body: dict[str, Any], fault: Any) -> dict[str, Any]:
        payload: dict[str, Any] = await super()._chat(body, fault)
        names = [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]
        if "Memory" in names and payload.get("choices"):
            convo = last_user_text(body).split("Human Message", 1)[-1]
            lines = [ln.strip() for ln in convo.splitlines() if _TURN_LINE.match(ln)]
            calls = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "Memory", "arguments": json.dumps({"content": line})},
                }
                for i, line in enumerate(lines)
            ]
            payload["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": calls}
            payload["choices"][0]["finish_reason"] = "tool_calls"
        return payload


@pytest.fixture
def product_mock():
    with ProductMock() as srv:
        yield srv


def run_config(sample_root, tmp_path, server, method: str, run_id: str = "a", **params: Any) -> RunConfig:
    """A run of ``method`` over :data:`DIALOGUE` with the mock as answer and build model (served to
    the product through the model gateway), every request cached in ``tmp_path/cache.sqlite``."""
    return RunConfig(
        data_root=sample_root,
        split="multi-party",
        method=method,
        method_params=params,
        preset="harmonized",
        model="openai:mock",
        prices={"mock": (0.0, 0.0)},
        base_url=[server.base_url],
        out_dir=tmp_path / "runs",
        run_id=run_id,
        cache_path=tmp_path / "cache.sqlite",
        selection=Selection(dialogues=(DIALOGUE,)),
        concurrency=4,
    )


def run(cfg: RunConfig):
    """``run_benchmark`` with the hashing embedder (64-d) as the run's embedder, served to the product
    by the model gateway."""
    from h2hmem.run import run_benchmark

    return run_benchmark(cfg, embedder=HashEmbedder(), progress=False)


def predictions(run_dir) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines() if line.strip()]
