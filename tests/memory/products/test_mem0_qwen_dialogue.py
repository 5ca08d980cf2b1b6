"""mem0 with its LLM extraction on, over a whole sample dialogue, with a real model, through a run:
``h2hmem run --method mem0 -p infer=true -p batch_turns=6 --model local:qwen2.5-coder-1.5b
--retrieval-only`` on multi-party/dialogue3 (the sample's shortest dialogue: one present session of
81 turns, five speakers; 14 extraction calls), mem0 served by h2hmem's model gateway, MiniLM for
mem0's embeddings.

What it shows, beyond ``test_mem0_qwen.py`` (one session, the memory alone): the runner feeds the
whole dialogue to mem0 through the gateway; every question of the dialogue gets evidence mapped to
turns of the dialogue; every memory mem0 stored (its own history file) is a fact Qwen wrote in a
JSON reply, about what was said, and no memory is a turn copied as it is; every extraction prompt
carried the session's date; every call is in the transcripts, tagged with the dialogue and session;
and a second run in a new directory rebuilds the same store from the request cache without a paid call.

It takes 1–1.5 h on 2 CPU cores (the calls' timings are in docs/products.md), so it runs only when
asked for (``H2HMEM_REAL_PRODUCT_TESTS=1 H2HMEM_REAL_PRODUCT_DIALOGUE=1``). ``H2HMEM_QWEN_CACHE=PATH``
keeps the request cache at PATH, so a stopped attempt resumes with the calls it already paid for;
``python -m bench.products --rows "mem0 infer=true batch_turns=6 qwen [dialogue]"`` sends the same
14 requests, so its cache (``requests-qwen.sqlite`` under its ``--out``) serves this test too.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import assert_model_written

from h2hmem.data import load_dataset
from h2hmem.records import read_predictions, read_transcripts
from h2hmem.run import RunConfig, Selection, run_benchmark

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("H2HMEM_REAL_PRODUCT_TESTS") != "1" or os.environ.get("H2HMEM_REAL_PRODUCT_DIALOGUE") != "1",
        reason="whole-dialogue real-model test (1–1.5 h on 2 CPU cores): set H2HMEM_REAL_PRODUCT_TESTS=1 "
        "and H2HMEM_REAL_PRODUCT_DIALOGUE=1",
    ),
    pytest.mark.timeout(4 * 3600),
]
if importlib.util.find_spec("mem0") is None:  # not imported here: the adapter sets its telemetry switch first
    pytest.skip("mem0ai is not installed", allow_module_level=True)
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (extra local-qwen)", allow_module_level=True)

DIALOGUE = "multi-party/dialogue3"
BATCH = 6
QWEN = "local:qwen2.5-coder-1.5b"


def _run(sample_root: Path, out: Path, cache: Path):
    config = RunConfig(
        data_root=sample_root,
        method="mem0",
        method_params={"infer": True, "batch_turns": BATCH},
        out_dir=out,
        run_id="mem0-qwen",
        retrieval_only=True,
        preset="harmonized",
        models={"model": QWEN, "embedder": "minilm"},
        execution={"cache_path": cache, "concurrency": 1},
        selection=Selection(dialogues=(DIALOGUE,)),
    )
    return run_benchmark(config, progress=False)


def test_mem0_builds_a_whole_dialogue_with_qwen_through_a_run(sample_root, tmp_path, loopback_only):
    ds = load_dataset(sample_root, "multi-party", strict=False)
    d = next(x for x in ds.dialogues if x.id == DIALOGUE)
    (session,) = d.present_sessions
    assert len(session.turns) == 81 and session.date is not None
    n_calls = -(-len(session.turns) // BATCH)
    assert n_calls == 14
    cache = Path(os.environ.get("H2HMEM_QWEN_CACHE") or tmp_path / "requests.sqlite")

    first = _run(sample_root, tmp_path / "runs", cache)
    assert first.failed == 0
    run_dir = Path(first.run_dir)

    # the whole dialogue went to mem0: 14 add() calls, each one extraction call through the gateway,
    # tagged with the dialogue and session, none failed, each carrying the session's date (never today's)
    calls = [r for r in read_transcripts(run_dir) if r["stage"] == "memory_build"]
    assert len(calls) == n_calls and not any(c.get("error") for c in calls)
    assert {(c["dialogue"], c["session"]) for c in calls} == {(DIALOGUE, session.name)}
    date, today = session.date.isoformat(), dt.date.today().isoformat()
    for c in calls:
        prompt = c["messages"][-1]["content"]
        assert f"## Observation Date\n{date}" in prompt and (today not in prompt or today == date)
    stats = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["method_stats_by_dialogue"][DIALOGUE]
    assert stats["product_build_calls"] == n_calls and stats["turns_fed"] == 81

    # every memory mem0 stored is a fact Qwen wrote (its extraction, not a fallback), about what was said,
    # and they are not the turns stored as they are (as infer=false would)
    # (a 1.5B model may run past mem0's 2,000-token reply budget: that reply is cut, mem0 logs it and adds
    # nothing from that batch; seen once in 14 calls, docs/products.md)
    replies, cut = [], []
    for c in calls:
        try:
            replies.append(json.loads(c["reply"]))
        except json.JSONDecodeError:
            cut.append(c)
    assert all(c["finish_reason"] == "length" for c in cut) and len(cut) <= 2, [c["finish_reason"] for c in cut]
    extracted = {m["text"] for r in replies for m in r.get("memory", []) if m.get("text")}
    history = next((run_dir / "state").rglob("history.db"))
    with sqlite3.connect(history) as db:
        added = [row[0] for row in db.execute("SELECT new_memory FROM history WHERE event = 'ADD'")]
    assert_model_written(added, extracted, [t.text for t in session.turns])

    # every question of the dialogue has evidence: turns of its observed session
    preds = read_predictions(run_dir)
    questions = [q for q in ds.questions if f"{q.split}/{q.dialogue}" == DIALOGUE]
    assert len(preds) == len(questions) > 0
    for p in preds:
        assert p.error is None and p.evidence
        assert all(e.session == session.name and 0 <= e.turn < 81 for e in p.evidence)

    # a second run in a new directory rebuilds the store from the request cache: no paid call
    second = _run(sample_root, tmp_path / "runs2", cache)
    assert second.failed == 0
    again = [r for r in read_transcripts(second.run_dir) if r["stage"] == "memory_build"]
    assert len(again) == n_calls and all(c["cached"] for c in again)
    assert loopback_only == []
