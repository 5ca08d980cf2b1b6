"""A small sweep over the shared sample against a recording mock endpoint."""

from __future__ import annotations

import json
from pathlib import Path

from h2hmem.run import RunConfig

METHODS = ("full-text", "full-mm", "naive-rag")
MODELS = ("mock-a", "mock-b")

PRESETS = ("paper", "harmonized") if "preset" in RunConfig.model_fields else ("paper",)
"""Both presets once runs have a preset setting (issue 13); until then the default alone."""


def write_spec(
    path: Path,
    sample_root: Path,
    base_url: str,
    *,
    out: str = "sweep-out",
    limit: int = 6,
    concurrency: int = 3,
    executor: str = "local",
    presets=PRESETS,
    extra_run: str = "",
) -> Path:
    """A TOML sweep: 3 methods × 2 mock models (one server, shared budget ``concurrency``) × presets."""
    methods = "\n".join(f'[[methods]]\nname = "{m}"\n' for m in METHODS)
    models = "\n".join(
        f'[[models]]\nlabel = "{m}"\nspec = "openai:{m}"\nbase_url = ["{base_url}"]\nconcurrency = {concurrency}\n'
        for m in MODELS
    )
    path.write_text(
        f"""
name = "test-grid"
data = "{sample_root}"
out = "{out}"
splits = ["multi-party"]
presets = {json.dumps(list(presets))}
protocols = ["full"]
metrics = ["lexical", "evidence"]
retries = 1

[run]
limit = {limit}
use_cache = false
{extra_run}

{methods}
{models}
[executor]
kind = "{executor}"
max_parallel_runs = 4
run_concurrency = 2
""",
        encoding="utf-8",
    )
    return path


def answers(run_dir: Path) -> dict[str, str]:
    """question id → answer of a run directory; asserts one line per question."""
    lines = [
        json.loads(x) for x in (run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()
    ]
    ids = [r["question_id"] for r in lines]
    assert len(ids) == len(set(ids)), f"{run_dir}: a question was recorded twice"
    return {r["question_id"]: r["answer"] for r in lines}
