"""Plugin API: the example package examples/recency_memory, loaded by 'module:Class' path and by
entry point, run directly and through the runner."""

from __future__ import annotations

import datetime as dt
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import tomllib
from mm_fakes import make_question, make_session, recording_chat

from h2hmem.memory import (
    ENTRY_POINT_GROUP,
    MemoryContext,
    MemorySystem,
    UnknownMethodError,
    _registry,
    available_methods,
    resolve_method,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "recency_memory"


@pytest.fixture()
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    for name in [m for m in sys.modules if m == "recency_memory" or m.startswith("recency_memory.")]:
        del sys.modules[name]


def entry_points_with(*eps: EntryPoint):
    def fake(group: str | None = None, **kw):
        return [ep for ep in eps if group is None or ep.group == group]

    return fake


async def test_module_class_path_runs(plugin_path):
    cls = resolve_method("recency_memory:RecencyMemory")
    chat = recording_chat()
    mem = cls(MemoryContext(preset="harmonized", dialogue_id="dyadic/dialogue1", chat=chat), window=3)
    assert isinstance(mem, MemorySystem)
    await mem.observe(make_session("session1", dt.date(2024, 3, 1), [("Ann", "one", None), ("Bob", "two", None)]))
    await mem.observe(make_session("session2", dt.date(2024, 3, 5), [("Ann", "three", None), ("Bob", "four", None)]))
    ans = await mem.answer(make_question("what was said?"))
    # the last 3 turns, most recent first in the evidence; in time order in the prompt
    assert [(e.session, e.turn) for e in ans.evidence] == [("session2", 1), ("session2", 0), ("session1", 1)]
    prompt = chat.requests[0].messages[-1].content
    assert "(session1, turn 1) [2024-03-01] Bob: two\n(session2, turn 0) [2024-03-05] Ann: three" in prompt
    assert "one" not in prompt.split("Memory:")[1]
    assert ans.details == {"turns_shown": 3, "turns_observed": 4}
    assert mem.describe()["window"] == 3


def test_entry_point_discovery(plugin_path, monkeypatch):
    pyproject = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())
    declared = pyproject["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert declared == {"recency": "recency_memory:RecencyMemory"}
    ep = EntryPoint(name="recency", value=declared["recency"], group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(_registry, "entry_points", entry_points_with(ep))
    assert available_methods()["recency"] == "recency_memory:RecencyMemory"
    assert resolve_method("recency").__name__ == "RecencyMemory"
    with pytest.raises(UnknownMethodError, match="Did you mean recency"):
        resolve_method("recenzy")


def test_entry_point_clash_and_broken_plugin(plugin_path, monkeypatch):
    clash = EntryPoint(name="murag", value="recency_memory:RecencyMemory", group=ENTRY_POINT_GROUP)
    monkeypatch.setattr(_registry, "entry_points", entry_points_with(clash))
    with pytest.raises(ValueError, match="clashes"):
        available_methods()
    monkeypatch.setattr(_registry, "entry_points", entry_points_with())
    with pytest.raises(UnknownMethodError, match="not a MemorySystem"):
        resolve_method("recency_memory:RecencyMemory.__init__")  # not a MemorySystem
    with pytest.raises(UnknownMethodError, match="cannot load"):
        resolve_method("recency_memory:NoSuchClass")


def test_plugin_through_the_runner(plugin_path, sample_root, tmp_path):
    from h2hmem.records import read_predictions
    from h2hmem.run import RunConfig, run_benchmark

    chat = recording_chat("Yes")
    config = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="recency_memory:RecencyMemory",
        method_params={"window": 10},
        out_dir=tmp_path,
        limit=2,
        use_cache=False,
    )
    summary = run_benchmark(config, chat_model=chat, progress=False)
    assert summary.answered_now == 2 and summary.failed == 0
    preds = list(read_predictions(summary.run_dir / "predictions.jsonl"))
    assert [p.answer for p in preds] == ["Yes", "Yes"]
    assert all(len(p.evidence) == 10 for p in preds)
