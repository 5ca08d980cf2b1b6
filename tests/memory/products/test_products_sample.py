"""mem0, LangMem, cognee and Graphiti end to end on a real sample dialogue through the mock endpoint: every
question answered, evidence mapped to the dialogue's turns, the product's own calls sent with the
conversation's dates, a reused store costing no product call, a product failure recorded on the
questions it affects, and no connection leaving the machine."""

from __future__ import annotations

import importlib.util
import json
import math
from collections import Counter

import pytest
from conftest import COGNEE_SCHEMA, DIALOGUE, TOOL_PROMPT, predictions, run, run_config, schema_name

from h2hmem.data import load_dataset
from h2hmem.records import read_transcripts

if importlib.util.find_spec("mem0") is None:  # not imported here: the adapter sets its telemetry switch first
    pytest.skip("mem0ai is not installed", allow_module_level=True)
pytest.importorskip("langmem")

BATCH = 4
GRAPHITI_CALLS = {"ExtractedEntities": 21, "ExtractedEdges": 21, "EdgeDuplicate": 75, "SummarizedEntities": 13}
"""Graphiti's calls building the dialogue's graph (21 episodes of 4 turns, the last of one), by the JSON
schema each asks for, as the product mock answers them (:func:`conftest.graphiti_reply`):

- ``ExtractedEntities``, ``ExtractedEdges``: one each per episode (21 + 21); the mock makes each turn line
  a fact from its speaker to the episode's next other speaker: 80 facts (turn 80 is alone in its episode).
- ``EdgeDuplicate``: one per fact whose hybrid search finds an earlier fact. The 4 facts of the first
  episode have nothing before them; of the other 76, turn 7's ("Old Meng: @Yuzu Indeed, the statue has a
  powerful presence…") shares no word Kuzu's full-text index keeps (digits and stopwords are not indexed)
  with the first episode's 4 facts, and none is within graphiti's cosine threshold (0.6; the hashing
  embedder gives 0.17–0.36): 75.
- ``SummarizedEntities``: one per episode in which a speaker's summary with the episode's new facts
  appended (the mock updates no summary) would pass graphiti's 2 × 1,000 characters: none up to episode 6;
  in each of episodes 7 (``t28-31``) to 19 a speaker is past it (13); the last has no fact and Grapefruit's
  1,954 characters fit.
No ``NodeResolutions`` call (an extracted speaker matches its entity by exact name) and no
``EdgeTimestamps`` call (the mock's facts carry their ``valid_at``)."""
PARAMS = {m: {"batch_turns": BATCH} for m in ("mem0", "langmem", "cognee", "graphiti")}
BUILD_CALLS = {"mem0": 21, "langmem": 21, "cognee": 2 * 21, "graphiti": sum(GRAPHITI_CALLS.values())}
"""The product's model calls building the dialogue's store (81 turns in 21 batches of 4): mem0 and LangMem
one extraction per batch; cognee a graph extraction and a summary per chunk; Graphiti
:data:`GRAPHITI_CALLS` (130)."""
DISTRIBUTION = {"mem0": "mem0ai", "langmem": "langmem", "cognee": "cognee", "graphiti": "graphiti-core"}
PRODUCTS = [
    "mem0",
    "langmem",
    pytest.param("cognee", marks=pytest.mark.skipif(importlib.util.find_spec("cognee") is None, reason="no cognee")),
    pytest.param(
        "graphiti",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("graphiti_core") is None or importlib.util.find_spec("kuzu") is None,
            reason="no graphiti-core or kuzu",
        ),
    ),
]


def dialogue(sample_root):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    return next(d for d in ds.dialogues if d.id == DIALOGUE)


def extraction_requests(server, method):
    """The product's own model calls the mock received (mem0: its JSON extraction prompt;
    LangMem: its tool-calling extraction; cognee: its graph extraction, one per chunk; Graphiti: its
    entity extraction, one per episode)."""
    chats = [r for r in server.requests if "messages" in r]
    if method == "graphiti":
        return [r for r in chats if schema_name(r) == "ExtractedEntities"]
    if method == "mem0":
        return [r for r in chats if "## New Messages" in r["messages"][-1]["content"]]
    if method == "cognee":
        return [
            r
            for r in chats
            if COGNEE_SCHEMA in r["messages"][0]["content"] and '"KnowledgeGraph"' in r["messages"][0]["content"]
        ]
    return [r for r in chats if r.get("tools") or TOOL_PROMPT in json.dumps(r["messages"][0])]


@pytest.mark.parametrize("method", PRODUCTS)
def test_every_question_answered_with_turn_evidence(sample_root, tmp_path, product_mock, loopback_only, method):
    d = dialogue(sample_root)
    (session,) = d.present_sessions
    cfg = run_config(sample_root, tmp_path, product_mock, method, **PARAMS[method])
    summary = run(cfg)
    preds = predictions(summary.run_dir)
    assert summary.failed == 0 and len(preds) == len(d.questions) == 38
    assert all(p["answer"] == "mock-answer" for p in preds)

    # the product's calls: one extraction per batch of 4 turns, carrying the session's own date
    sent = extraction_requests(product_mock, method)
    assert len(sent) == math.ceil(len(session.turns) / BATCH) == 21
    # the session's first turn, dated, in its batch's request: the first request, except for cognee, which
    # extracts its chunks concurrently (the mock receives them in no fixed order)
    opening = f"[{session.date.isoformat()}] {session.turns[0].speaker}: {session.turns[0].text.strip()[:20]}"
    texts = [r["messages"][-1]["content"] for r in sent]
    assert opening in texts[0] if method != "cognee" else any(opening in t for t in texts)
    if method == "graphiti":
        calls = Counter(schema_name(r) for r in product_mock.requests if "messages" in r)
        assert calls == {**GRAPHITI_CALLS, None: 38}  # and the 38 answers
    if method == "mem0":  # mem0's prompt dates are the session's, never today's
        assert all(f"## Observation Date\n{session.date.isoformat()}" in r["messages"][-1]["content"] for r in sent)
        assert all(f"## Current Date\n{session.date.isoformat()}" in r["messages"][-1]["content"] for r in sent)
    manifest = json.loads((summary.run_dir / "manifest.json").read_text())
    assert manifest["method_stats"]["product_build_calls"] == 21
    described = manifest["method_description"]
    assert described["product"]["distribution"] == DISTRIBUTION[method]
    assert described["product"]["version"] and described["configuration"]["batch_turns"] == BATCH

    # evidence: turns of the dialogue, each memory traced to its batch of 4
    turns = {(session.name, t.index) for t in session.turns}
    with_evidence = [p for p in preds if p["evidence"]]
    assert len(with_evidence) >= 30
    for p in with_evidence:
        keys = [(e["session"], e["turn"]) for e in p["evidence"]]
        assert set(keys) <= turns and len(keys) == len(set(keys))
        assert len(keys) <= 5 * BATCH
    # the answer prompt shows the retrieved memories (a turn's line, as the mock extracted it)
    answers = [r for r in product_mock.requests if "messages" in r and "Memory:" in r["messages"][-1]["content"]]
    shown = sum(f"({session.name}, {session.date.isoformat()})" in r["messages"][-1]["content"] for r in answers)
    assert len(answers) == 38 and shown == len(with_evidence)
    # the product's calls went through the gateway: in the run's transcripts, tagged, counted
    via = [t for t in read_transcripts(summary.run_dir) if t.get("via") == "gateway"]
    built = [t for t in via if t.get("stage") == "memory_build"]
    assert len(built) == BUILD_CALLS[method]
    assert {(t.get("dialogue"), t.get("session")) for t in built} == {(d.id, session.name)}
    # a second run in a new directory over the same cache: no request reaches the model
    before = product_mock.calls
    second = run(cfg.model_copy(update={"run_id": "b"}))
    assert second.failed == 0 and predictions(second.run_dir) and product_mock.calls == before
    assert loopback_only == []


@pytest.mark.parametrize("method", PRODUCTS)
def test_retrieval_only_ranks_turns_without_answer_calls(sample_root, tmp_path, product_mock, method):
    cfg = run_config(sample_root, tmp_path, product_mock, method, **PARAMS[method])
    summary = run(cfg.model_copy(update={"retrieval_only": True}))
    preds = predictions(summary.run_dir)
    assert len(preds) == 38 and all(p["answer"] is None and p["error"] is None for p in preds)
    assert sum(bool(p["evidence"]) for p in preds) >= 30
    answers = [r for r in product_mock.requests if "messages" in r and "Memory:" in r["messages"][-1]["content"]]
    assert answers == []


@pytest.mark.parametrize("method", PRODUCTS)
def test_built_store_is_reused_without_product_calls(sample_root, tmp_path, product_mock, method):
    """A rerun over the same run directory reuses the dialogue's sealed store: no extraction call."""
    from h2hmem.memory import MemoryContext, question_view, resolve_method
    from h2hmem.memory.products import Endpoint
    from h2hmem.testing import ScriptedChatModel

    d = dialogue(sample_root)
    endpoint = Endpoint(product_mock.base_url, "key", "mock", "embed", 64)

    def memory():
        ctx = MemoryContext(
            dialogue_id=d.id,
            chat=ScriptedChatModel(default="ok"),
            state_dir=tmp_path / "state",
            preset="harmonized",
            product_endpoint=endpoint,
        )
        return resolve_method(method)(ctx, **PARAMS[method])

    async def build_and_ask(m):
        for s in d.sessions:
            await m.observe(s)
        try:
            return await m.retrieve_evidence(question_view(d.questions[0]))
        finally:
            await m.aclose()

    import asyncio

    first = memory()
    ev1 = asyncio.run(build_and_ask(first))
    built = len(extraction_requests(product_mock, method))
    assert built == 21 and first.describe()["store_reused"] is False
    again = memory()
    ev2 = asyncio.run(build_and_ask(again))
    assert len(extraction_requests(product_mock, method)) == built  # nothing extracted again
    assert again.describe()["store_reused"] is True and again.stats["sessions_reused"] == 1
    assert ev1 == ev2 and ev1


def test_product_failure_is_recorded_then_retried(sample_root, tmp_path, product_mock):
    """mem0's extraction call fails (HTTP 400): every question of the dialogue records mem0's error,
    the run ends normally, and --retry-failed rebuilds the store and answers them."""
    from h2hmem.testing import Fault, Rule

    product_mock.set_script([Rule(Fault.http(400, message="bad request"), when="## New Messages")])
    cfg = run_config(sample_root, tmp_path, product_mock, "mem0", **PARAMS["mem0"])
    summary = run(cfg)
    assert summary.failed == 38
    errors = {p["error"] for p in predictions(summary.run_dir)}
    assert len(errors) == 1
    (error,) = errors
    assert error.startswith("memory build failed: ") and "mem0ai 2.2.1 failed taking in session3: LLMError" in error
    product_mock.set_script(None)
    again = run(cfg.model_copy(update={"retry_failed": True}))
    assert again.failed == 0 and again.answered_now == 38


@pytest.mark.parametrize(("method", "module"), [("mem0", "mem0"), ("cognee", "cognee"), ("graphiti", "graphiti_core")])
def test_missing_extra_is_one_line_naming_it(monkeypatch, tmp_path, method, module):
    import importlib.util

    from h2hmem.memory import MemoryContext, resolve_method
    from h2hmem.memory.products import ProductMissingError
    from h2hmem.testing import ScriptedChatModel

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(ProductMissingError) as err:
        resolve_method(method)(MemoryContext(dialogue_id="dyadic/dialogue5", chat=ScriptedChatModel(default="x")))
    assert "\n" not in str(err.value) and f"pip install 'h2hmem[{method}]'" in str(err.value)


def test_another_product_version_never_resumes_the_run(sample_root, tmp_path, product_mock, monkeypatch):
    from h2hmem.memory.products import _adapter
    from h2hmem.run import RunConflictError

    cfg = run_config(sample_root, tmp_path, product_mock, "mem0", infer=False)
    first = run(cfg)
    manifest = json.loads((first.run_dir / "manifest.json").read_text())
    assert manifest["identity"]["method_identity"] == {"product": "mem0ai", "version": "2.2.1"}
    monkeypatch.setattr(_adapter, "product_version", lambda dist: "2.3.0")
    with pytest.raises(RunConflictError, match="method_identity"):
        run(cfg)
