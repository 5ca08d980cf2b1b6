"""Graphiti on an embedded Kuzu graph, offline through the mock endpoint (which answers graphiti's
JSON-schema requests with schema-valid instances): one dated episode per batch of turns, named by
its turns; a fact found by the question maps back to the turns of its episode; a sealed graph is
reused without any model call."""

from __future__ import annotations

import asyncio
import math

import pytest
from conftest import DIALOGUE

from h2hmem.data import Question, TaskType, load_dataset
from h2hmem.memory import MemoryContext, question_view, resolve_method
from h2hmem.memory.products import Endpoint
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel

pytest.importorskip("graphiti_core")
pytest.importorskip("kuzu")
testing = pytest.importorskip("h2hmem.testing")
if not hasattr(testing, "structured_reply"):
    pytest.skip("the mock server does not answer JSON-schema requests yet", allow_module_level=True)

BATCH = 8


def test_graphiti_builds_dated_episodes_and_maps_facts_to_turns(sample_root, tmp_path, loopback_only):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    d = next(x for x in ds.dialogues if x.id == DIALOGUE)
    (session,) = d.present_sessions
    with MockOpenAIServer(embedding_dim=64) as srv:
        endpoint = Endpoint(srv.base_url, "key", "mock", "embed", 64)

        def memory():
            ctx = MemoryContext(
                dialogue_id=d.id,
                chat=ScriptedChatModel(default="ok"),
                state_dir=tmp_path / "state",
                preset="harmonized",
                product_endpoint=endpoint,
            )
            return resolve_method("graphiti")(ctx, batch_turns=BATCH, top_k=3)

        # the mock's facts read "mock fact": a question naming it finds them
        q = Question(
            id=f"{d.id}/{session.name}/q0",
            split="multi-party",
            dialogue="dialogue3",
            session=session.name,
            index=0,
            text="Which mock fact is known?",
            gold="-",
            task_type=TaskType.UPR,
            main_category=TaskType.UPR.main_category,
        )

        async def build_and_search(m):
            for s in d.sessions:
                await m.observe(s)
            try:
                return await m.retrieve_evidence(question_view(q)), m.describe()
            finally:
                await m.aclose()

        evidence, described = asyncio.run(build_and_search(memory()))
        assert described["stats"]["product_build_calls"] == math.ceil(81 / BATCH) == 11
        assert described["product"]["distribution"] == "graphiti-core"
        sent = [r for r in srv.requests if "messages" in r]
        bodies = [m["content"] for r in sent for m in r["messages"] if isinstance(m.get("content"), str)]
        assert any(f"[{session.date.isoformat()}] {session.turns[0].speaker}: " in b for b in bodies)
        assert evidence, "the fact was not found"
        # the first fact's evidence is the turns of one episode: a run of BATCH consecutive turns
        turns = [e.turn for e in evidence if e.session == session.name]
        first = turns[: min(BATCH, len(turns))]
        assert first == list(range(first[0], first[0] + len(first))) and first[0] % BATCH == 0

        calls = srv.calls
        again, described = asyncio.run(build_and_search(memory()))
        assert described["store_reused"] is True and again == evidence
        assert srv.calls - calls <= 1  # the query's embedding only: nothing rebuilt
    assert loopback_only == []
