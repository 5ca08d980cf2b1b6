"""cognee's process-global configuration: two dialogues' stores built and searched interleaved in one
process each answer from their own turns; a summary's evidence is the chunk it summarizes; a dialogue
with no session present retrieves nothing (cognee itself refuses to search an empty store)."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import json
from typing import Any

import pytest
from conftest import COGNEE_SCHEMA, ProductMock
from mm_fakes import make_question, make_session

from h2hmem.memory import MemoryContext, question_view, resolve_method
from h2hmem.memory.products import Endpoint
from h2hmem.testing import ScriptedChatModel

if importlib.util.find_spec("cognee") is None:  # not imported here: the adapter sets its switches first
    pytest.skip("cognee is not installed", allow_module_level=True)


SUMMARY = "Three people talk about their pets."


def paraphrased_summaries(body: dict[str, Any]) -> str:
    """The products' mock, but cognee's chunk summaries quote no turn line."""
    system = str(body["messages"][0]["content"]) if body.get("messages") else ""
    if COGNEE_SCHEMA in system and '"SummarizedContent"' in system:
        return json.dumps({"summary": SUMMARY, "description": ""})
    return ProductMock._respond(body)


def session(pet: str, date: dt.date):
    people = ("Kiki", "Bo", "Lin")
    return make_session(
        "session1", date, [(people[i % 3], f"My {pet} number {i} is called {pet.title()}{i}.", None) for i in range(6)]
    )


def test_interleaved_dialogues_keep_their_own_stores(tmp_path, loopback_only):
    cats, dogs = session("cat", dt.date(2024, 3, 20)), session("dog", dt.date(2023, 7, 1))
    with ProductMock() as srv:
        srv.responder = paraphrased_summaries
        endpoint = Endpoint(srv.base_url, "key", "mock", "embed", 64)

        def memory(dialogue: str, **params):
            ctx = MemoryContext(
                dialogue_id=dialogue,
                chat=ScriptedChatModel(default="ok"),
                state_dir=tmp_path / dialogue,
                preset="harmonized",
                product_endpoint=endpoint,
            )
            return resolve_method("cognee")(ctx, batch_turns=3, top_k=2, **params)

        async def interleaved():
            a, b, empty = memory("x/dialogue1"), memory("x/dialogue2", search="summaries"), memory("x/dialogue3")
            try:
                await a.observe(cats)
                await b.observe(dogs)
                await empty.observe(cats.model_copy(update={"absent": True}))
                hits_a = await a._hits(question_view(make_question("Which cat is called Cat4?")))
                hits_b = await b._hits(question_view(make_question("Which dog is called Dog1?")))
                assert await empty.retrieve_evidence(question_view(make_question("Which cat?"))) == []
                return hits_a, hits_b, a.describe(), b.describe()
            finally:
                for m in (a, b, empty):
                    await m.aclose()

        hits_a, hits_b, described_a, described_b = asyncio.run(interleaved())
        graph = [r for r in srv.requests if "messages" in r and '"KnowledgeGraph"' in r["messages"][0]["content"]]
    # each store holds its own dialogue only: two chunks of three turns each, dated by its session
    assert len(graph) == 4 and all(COGNEE_SCHEMA in r["messages"][0]["content"] for r in graph)
    assert {h.text.count("cat") for h in hits_a} == {3} and all(h.date == "2024-03-20" for h in hits_a)
    assert sorted(h.source for h in hits_a) == [("session1", [0, 1, 2]), ("session1", [3, 4, 5])]
    # a summary, which quotes no turn, maps to the turns of the chunk it summarizes
    assert [h.text for h in hits_b] == [SUMMARY, SUMMARY]
    assert sorted(h.source for h in hits_b) == [("session1", [0, 1, 2]), ("session1", [3, 4, 5])]
    assert all(h.date == "2023-07-01" for h in hits_b)
    assert described_a["configuration"]["search"] == "CHUNKS" and described_b["configuration"]["search"] == "SUMMARIES"
    assert described_a["stats"]["product_build_calls"] == 2 and described_b["stats"]["sessions_fed"] == 1
    assert loopback_only == []
