"""docs/testing.md: its pytest example runs as written (against the example plugin)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def example_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "recency_memory"))
    yield
    for name in [m for m in sys.modules if m == "recency_memory" or m.startswith("recency_memory.")]:
        del sys.modules[name]


async def test_the_documented_test_passes(example_plugin):
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "docs/testing.md", "exec"), namespace)
    tests = [v for k, v in namespace.items() if k.startswith("test_")]
    assert len(tests) == 1
    await tests[0]()
