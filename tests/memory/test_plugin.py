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
    MemoryMethod,
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
    assert isinstance(mem, MemoryMethod)
    await mem.observe(make_session("session1", dt.date(2024, 3, 1), [("Ann", "one", None), ("Bob", "two", None)]))
    await mem.observe(make_session("session2", dt.date(2024, 3, 5), [("Ann", "three", None), ("Bob", "four", None)]))
    ans = await mem.answer(make_question("what was said?"))
    # the last 3 turns, most recent first in the evidence; in time order in the prompt
    assert [(e.session, e.turn) for e in ans.evidence] == [("session2", 1), ("session2", 0), ("session1", 1)]
    prompt = chat.requests[0].messages[-1].content
    assert "(session1, turn 1) [2024-03-01] Bob: two\n(session2, turn 0) [2024-03-05] Ann: three" in prompt
    assert "one" not in prompt.split("Memory:")[1]
    assert ans.details == {"turns_shown": 3, "turns_observed": 4}
    assert mem.options.window == 3 and mem.options.preset == "harmonized"


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
    with pytest.raises(UnknownMethodError, match="not a memory method"):
        resolve_method("recency_memory:RecencyMemory.__init__")  # not a MemoryMethod subclass
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


# ----- a new method plugin with a typed Options model, end to end --------------------------------

PLUGIN = """
from typing import Literal

from pydantic import Field

from h2hmem.memory import Answer, Evidence, MemoryMethod, MethodOptions, TopK, preset_option


class EchoOptions(MethodOptions):
    top_k: TopK = 5
    window: int = Field(4, ge=1, le=100, description="turns kept")
    style: Literal["short", "long"] = preset_option("short", "long", "how the answer is phrased")


class EchoMemory(MemoryMethod[EchoOptions]):
    name = "echo"
    Options = EchoOptions

    def __init__(self, ctx, options=None, **params):
        super().__init__(ctx, options, **params)
        self.turns = []

    async def observe(self, session):
        self.turns += [(session.name, t.index) for t in session.turns]

    async def retrieve_evidence(self, question):
        return [Evidence(session=s, turn=i) for s, i in self.turns[-self.options.window :]][: self.options.top_k]

    async def answer(self, question):
        r = await self.ctx.chat.chat([], self.ctx.answer_config)
        ev = await self.retrieve_evidence(question)
        return Answer(text=f"{self.options.style}:{r.text}", evidence=ev)
"""


@pytest.fixture()
def echo_plugin(tmp_path, monkeypatch):
    pkg = tmp_path / "plugins"
    pkg.mkdir()
    (pkg / "echo_memory.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(pkg))
    yield "echo_memory:EchoMemory"
    sys.modules.pop("echo_memory", None)


def _cli(*args):
    from typer.testing import CliRunner

    from h2hmem.cli import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    return result.exit_code, " ".join(result.output.split())


def test_plugin_options_are_validated_from_param_before_any_work(echo_plugin, sample_root, tmp_path):
    base = ["run", "--data", str(sample_root), "--split", "multi-party", "--out", str(tmp_path / "runs"), "--quiet"]
    base += ["--method", echo_plugin, "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--no-cache"]
    code, out = _cli(*base, "--param", "window=many")
    assert code == 2
    assert "method 'echo_memory:EchoMemory' option window: expected int >= 1, <= 100, got 'many'" in out
    code, out = _cli(*base, "--param", "window=500")
    assert code == 2 and "option window: expected int >= 1, <= 100, got 500" in out
    code, out = _cli(*base, "--param", "style=medium")
    assert code == 2 and "option style: expected 'short' | 'long', got 'medium'" in out
    code, out = _cli(*base, "--param", "windw=3")
    assert code == 2 and "has no option windw; its options: top_k, window, style" in out
    code, out = _cli(*base, "--top-k", "0")
    assert code == 2 and "--top-k" in out
    assert not list((tmp_path / "runs").rglob("predictions.jsonl"))  # refused before any question


def test_plugin_options_reach_the_method_and_the_manifest_once(echo_plugin, sample_root, tmp_path):
    from h2hmem.records import read_manifest, read_predictions
    from h2hmem.run import RunConfig, run_benchmark

    config = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method=echo_plugin,
        method_params={"window": 2, "top_k": 1},
        preset="harmonized",
        out_dir=tmp_path,
        limit=2,
        use_cache=False,
    )
    summary = run_benchmark(config, chat_model=recording_chat("x"), progress=False)
    preds = list(read_predictions(summary.run_dir / "predictions.jsonl"))
    assert [p.answer for p in preds] == ["long:x", "long:x"]  # style from the preset harmonized
    assert all(len(p.evidence) == 1 for p in preds)  # top_k=1 of window=2
    manifest = read_manifest(summary.run_dir)
    memory = manifest.component("memory")
    assert memory.target == "echo_memory:EchoMemory"
    assert memory.options == {"top_k": 1, "window": 2, "style": "long"}
    text = (summary.run_dir / "manifest.json").read_text()
    # the resolved options are recorded once (the given ones also stand in config.method_params)
    assert text.count('"style"') == 1 and '"method_arguments"' not in text and '"options": {"' not in text
    assert manifest.environment is not None and manifest.environment.python


def test_plugin_options_are_listed_by_methods_show(echo_plugin):
    code, out = _cli("methods", "show", echo_plugin)
    assert code == 0, out
    assert "retrieval-only: yes" in out
    assert "window │ int >= 1, <= 100 │ 4 │ 4 │ turns kept" in out
    assert "style │ 'short' | 'long' │ \"short\" │ \"long\" │ how the answer is phrased" in out
    assert "top_k │ int >= 1 │ 5 │ 5 │ memory units retrieved per question" in out
    code, out = _cli("methods", "show", "echo_memory:Nope")
    assert code == 2 and "cannot load method" in out


def test_old_duck_typed_plugin_is_refused_with_the_way_to_port_it(tmp_path, monkeypatch):
    (tmp_path / "old_memory.py").write_text(
        "class OldMemory:\n    name = 'old'\n    def __init__(self, ctx): ...\n"
        "    async def observe(self, s): ...\n    async def answer(self, q): ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownMethodError, match="subclasses h2hmem.memory.MemoryMethod.*docs/custom-memory.md"):
        resolve_method("old_memory:OldMemory")
    sys.modules.pop("old_memory", None)
