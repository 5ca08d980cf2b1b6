"""mem0, LangMem and cognee end to end on a real sample dialogue through the mock endpoint: every question
answered, evidence mapped to the dialogue's turns, the product's own calls sent with the
conversation's dates, a reused store costing no product call, a product failure recorded on the
questions it affects, and no connection leaving the machine."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
from conftest import COGNEE_SCHEMA, DIALOGUE, TOOL_PROMPT, predictions, run, run_config

from h2hmem.data import load_dataset
from h2hmem.records import read_transcripts

if importlib.util.find_spec("mem0") is None:  # not imported here: the adapter sets its telemetry switch first
    pytest.skip("mem0ai is not installed", allow_module_level=True)
pytest.importorskip("langmem")

BATCH = 4
PARAMS = {"mem0": {"batch_turns": BATCH}, "langmem": {"batch_turns": BATCH}, "cognee": {"batch_turns": BATCH}}
CALLS_PER_BATCH = {"mem0": 1, "langmem": 1, "cognee": 2}
"""The product's model calls per batch of turns (cognee: a graph extraction and a summary per chunk)."""
DISTRIBUTION = {"mem0": "mem0ai", "langmem": "langmem", "cognee": "cognee"}
PRODUCTS = [
    "mem0",
    "langmem",
    pytest.param("cognee", marks=pytest.mark.skipif(importlib.util.find_spec("cognee") is None, reason="no cognee")),
]


def dialogue(sample_root):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    return next(d for d in ds.dialogues if d.id == DIALOGUE)


def extraction_requests(server, method):
    """The product's own model calls the mock received (mem0: its JSON extraction prompt;
    LangMem: its tool-calling extraction; cognee: its graph extraction, one per chunk)."""
    chats = [r for r in server.requests if "messages" in r]
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
    first = sent[0]["messages"][-1]["content"]
    assert f"[{session.date.isoformat()}] {session.turns[0].speaker}: " in first
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
    assert len([t for t in via if t.get("stage") == "memory_build"]) == 21 * CALLS_PER_BATCH[method]
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


@pytest.mark.parametrize(("method", "module"), [("mem0", "mem0"), ("cognee", "cognee")])
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
