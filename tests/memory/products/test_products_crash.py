"""SIGKILL while a product (mem0, LangMem, cognee, Graphiti) builds its store, then a rerun: the half-built
store is rebuilt from scratch (no memory twice), every question is answered once, and no request the
killed run was answered is sent to the model again."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import predictions, run, run_config

CHILD = """
import sys
from mm_fakes import HashEmbedder
from h2hmem.run import RunConfig, run_benchmark
run_benchmark(RunConfig.model_validate_json(sys.argv[1]), embedder=HashEmbedder(), progress=False)
"""


def _mem0_memories(store_dir: Path, user_id: str) -> list[str]:
    from h2hmem.memory.products import Endpoint
    from h2hmem.memory.products.mem0._store import Mem0Store

    store = Mem0Store(
        Endpoint("http://127.0.0.1:9/v1", "k", "mock", "embed", 64),
        store_dir,
        user_id=user_id,
        infer=True,
        batch_turns=4,
        threshold=0.1,
    )
    try:
        return sorted(m["memory"] for m in store.memory.get_all(filters={"user_id": user_id}, top_k=10_000)["results"])
    finally:
        store.close()


def _cognee_chunks(store_dir: Path, user_id: str) -> list[str]:
    """The chunk texts of a cognee store (its LanceDB collection of chunks)."""
    import lancedb

    db = lancedb.connect(str(store_dir / "system" / "databases" / "cognee.lancedb"))
    return sorted(row["payload"]["text"] for row in db.open_table("DocumentChunk_text").to_arrow().to_pylist())


def _langmem_memories(store_dir: Path, user_id: str) -> list[str]:
    """The memory values of a LangMem store (LangGraph's SqliteStore table ``store``; read as plain
    SQLite, no vector extension needed)."""
    import sqlite3

    conn = sqlite3.connect(store_dir / "langmem.sqlite")
    try:
        return sorted(row[0] for row in conn.execute("SELECT value FROM store"))
    finally:
        conn.close()


def _graphiti_graph(store_dir: Path, user_id: str) -> list[str]:
    """What a Graphiti store holds: its episodes (name and body), entities (name) and facts (each with
    the name of the episode it came from), read from its Kuzu database."""
    import kuzu

    db = kuzu.Database(str(store_dir / "graph.kuzu"), read_only=True)
    conn = kuzu.Connection(db)
    try:
        conn.execute("LOAD EXTENSION fts;")  # the adapter's full-text indexes need it

        def rows(query: str) -> list[list[Any]]:
            result = conn.execute(query)
            assert not isinstance(result, list)
            return [list(row) for row in result.get_all()]

        episodes = {uuid: name for uuid, name in rows("MATCH (e:Episodic) RETURN e.uuid, e.name")}
        return sorted(
            [f"episode {name}: {body}" for name, body in rows("MATCH (e:Episodic) RETURN e.name, e.content")]
            + [f"entity {name}" for (name,) in rows("MATCH (n:Entity) RETURN n.name")]
            + [
                f"fact {fact} ({', '.join(episodes[u] for u in eps)})"
                for fact, eps in rows("MATCH (r:RelatesToNode_) RETURN r.fact, r.episodes")
            ]
        )
    finally:
        conn.close()
        db.close()


PRODUCTS = {
    # method: (a request of its build, what its store holds, how many memories a clean build makes)
    "mem0": ("## New Messages", _mem0_memories, 81),
    "langmem": (
        "You can call these functions:",
        _langmem_memories,
        21,
    ),  # the gateway's emulated tool call: one memory per batch
    "cognee": ("KnowledgeGraph", _cognee_chunks, 21),
    # 21 episodes, the 5 speakers, 80 facts (a fact per turn line but the 81st: alone in its episode, its
    # speaker has no one to say it to)
    "graphiti": ('"name": "ExtractedEntities"', _graphiti_graph, 21 + 5 + 80),
}
MODULES = {"graphiti": "graphiti_core"}
KILL_AFTER = 8
"""Build requests sent before the kill: more than the run's concurrency, so a rerun that did not reuse
what was paid would be seen sending it again."""


@pytest.mark.parametrize("method", list(PRODUCTS))
def test_sigkill_during_build_then_rerun(sample_root, tmp_path, product_mock, method):
    # not imported here: the adapter sets its telemetry switch first
    if importlib.util.find_spec(MODULES.get(method, method)) is None:
        pytest.skip(f"{method} is not installed")
    build_request, memories, count = PRODUCTS[method]
    product_mock.latency_s = 0.05  # slow enough to be caught mid-build
    cfg = run_config(sample_root, tmp_path, product_mock, method, batch_turns=4)
    marker = cfg.run_dir / "state" / "multi-party" / "dialogue3" / method / "build.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, cfg.model_dump_json()], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            sent = sum(build_request in json.dumps(r) for r in list(product_mock.requests))
            if marker.exists() and sent >= KILL_AFTER:
                break
            assert child.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    settle = time.monotonic() + 5
    while product_mock.in_flight and time.monotonic() < settle:  # the mock has handled all it was sent
        time.sleep(0.05)
    killed = [json.dumps(r, sort_keys=True) for r in product_mock.requests]
    # the kill landed inside the build: after KILL_AFTER of its 21 batches were sent, before the last one
    assert KILL_AFTER <= sum(build_request in r for r in killed) < 21
    state = json.loads(marker.read_text())
    assert state["clean"] is False and state["sessions"] == ["session3"]  # killed mid-session
    assert not (cfg.run_dir / "predictions.jsonl").exists() or predictions(cfg.run_dir) == []

    product_mock.latency_s = 0.0
    summary = run(cfg)
    rerun = [json.dumps(r, sort_keys=True) for r in product_mock.requests[len(killed) :]]
    preds = predictions(cfg.run_dir)
    assert summary.failed == 0 and len(preds) == 38 == len({p["question_id"] for p in preds})
    manifest = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert manifest["method_stats"]["sessions_fed"] == 1 and manifest["method_stats"]["product_build_calls"] == 21
    assert json.loads(marker.read_text())["clean"] is True

    # the rebuilt store holds what a clean build holds: no memory from the killed build survived twice
    clean = run(cfg.model_copy(update={"run_id": "clean", "cache_path": tmp_path / "other-cache.sqlite"}))
    assert clean.failed == 0
    # what the killed run was answered came from the request cache: the rerun sent again only the
    # requests the kill cut off before their reply was stored (at most the run's concurrency), and
    # together the two runs paid for exactly what one clean run pays for
    paid_again = set(rerun) & set(killed)
    assert len(paid_again) <= cfg.execution.concurrency < KILL_AFTER
    clean_calls = len(product_mock.requests) - len(killed) - len(rerun)
    assert len(rerun) == clean_calls - len(set(killed) - paid_again)
    store = marker.parent / "store"
    clean_store = clean.run_dir / "state" / "multi-party" / "dialogue3" / method / "store"
    rebuilt, fresh = memories(store, "multi-party/dialogue3"), memories(clean_store, "multi-party/dialogue3")
    assert rebuilt == fresh and len(fresh) == count
