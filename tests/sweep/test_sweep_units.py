"""Sweep spec parsing, grid expansion and the endpoint-budget scheduler (no model calls)."""

import asyncio
import json
from pathlib import Path

import pytest
from sweep_helpers import write_spec

from h2hmem.run import RunConfig
from h2hmem.sweep import (
    EndpointBudget,
    SweepSpecError,
    endpoint_capacities,
    expand_grid,
    load_spec,
    run_jobs,
    sweep_json_schema,
)

REPO = Path(__file__).resolve().parents[2]
needs_presets = pytest.mark.skipif("preset" not in RunConfig.model_fields, reason="RunConfig has no preset yet")


def test_spec_paths_are_relative_to_the_file(tmp_path):
    p = write_spec(tmp_path / "s.toml", Path("data"), "http://127.0.0.1:1/v1", presets=["paper"])
    spec, base = load_spec(p)
    assert base == tmp_path.resolve()
    assert spec.data == (tmp_path / "data").resolve() and spec.out == (tmp_path / "sweep-out").resolve()
    assert [m.name for m in spec.methods] == ["full-text", "full-mm", "naive-rag"] and spec.run["limit"] == 6


@pytest.mark.parametrize(
    "body, expected",
    [
        ('data = "d"\nmethods = []\nmodels = []\nbogus = 1\n', "bogus: Extra inputs are not permitted"),
        (
            'data = "d"\npresets = ["nope"]\n[[methods]]\nname = "full-text"\n[[models]]\nspec = "openai:x"\n',
            "presets: Value error, unknown preset(s) ['nope']",
        ),
        (
            'data = "d"\n[run]\nmethod = "x"\n[[methods]]\nname = "full-text"\n[[models]]\nspec = "openai:x"\n',
            "run: Value error, ['method'] are set by the grid",
        ),
        (
            'data = "d"\n[[methods]]\nname = "a"\n[[methods]]\nname = "a"\n[[models]]\nspec = "openai:x"\n',
            "methods: ['a'] appear twice",
        ),
        ("data = \n", "cannot parse"),
    ],
)
def test_spec_errors_name_file_and_field(tmp_path, body, expected):
    p = tmp_path / "bad.toml"
    p.write_text(body)
    with pytest.raises(SweepSpecError) as e:
        load_spec(p)
    assert str(p) in str(e.value) and expected in str(e.value)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(SweepSpecError, match="no such sweep file"):
        load_spec(tmp_path / "none.toml")
    (tmp_path / "s.ini").write_text("x")
    with pytest.raises(SweepSpecError, match="unknown sweep file type '.ini'"):
        load_spec(tmp_path / "s.ini")


def test_yaml_and_json_specs_are_the_same_spec(tmp_path):
    raw = {"data": "d", "methods": [{"name": "full-text"}], "models": [{"spec": "openai:m", "concurrency": 4}]}
    (tmp_path / "s.json").write_text(json.dumps(raw))
    (tmp_path / "s.yaml").write_text(
        "data: d\nmethods:\n  - name: full-text\nmodels:\n  - spec: openai:m\n    concurrency: 4\n"
    )
    assert load_spec(tmp_path / "s.json")[0] == load_spec(tmp_path / "s.yaml")[0]


def test_published_schema_is_current():
    published = json.loads((REPO / "docs" / "schemas" / "sweep.schema.json").read_text())
    assert published == sweep_json_schema(), "regenerate: h2hmem sweep schema > docs/schemas/sweep.schema.json"


@needs_presets
def test_grid_expansion_and_budgets(tmp_path):
    spec, _ = load_spec(write_spec(tmp_path / "s.toml", tmp_path, "http://127.0.0.1:9/v1/", concurrency=3))
    cells = expand_grid(spec)
    assert len(cells) == 3 * 2 * 2
    assert len({c.run_id for c in cells}) == 12
    assert {c.config.preset for c in cells} == {"paper", "harmonized"}
    # both models are served by one server: one endpoint, whose budget is the smaller concurrency (3)
    assert endpoint_capacities(spec) == {"http://127.0.0.1:9/v1": 3}
    # run_concurrency 2 <= capacity 3
    assert {c.config.execution.concurrency for c in cells} == {2} and {tuple(c.need.items()) for c in cells} == {
        (("http://127.0.0.1:9/v1", 2),)
    }
    assert all(c.config.run_dir.parent == spec.out / "runs" for c in cells)


def test_scheduler_never_exceeds_an_endpoint_budget():
    # capacity 5 on "a": jobs needing 2 run two at a time (2+2 <= 5 < 6); "b" jobs (capacity 1) one at a
    # time beside them; a job needing more than "a" has (9) is clipped to 5 and so runs alone
    live = {"a": 0, "b": 0}
    peak = {"a": 0, "b": 0}
    jobs = [(i, "a", 2) for i in range(5)] + [(5 + i, "b", 1) for i in range(3)] + [(8, "a", 9)]

    async def start(job):
        i, ep, n = job
        n = min(n, 5)
        live[ep] += n
        peak[ep] = max(peak[ep], live[ep])
        await asyncio.sleep(0.01)
        live[ep] -= n
        if i == 6:
            raise RuntimeError("boom")
        return i

    outcomes = asyncio.run(
        run_jobs(jobs, lambda j: {j[1]: j[2]}, EndpointBudget({"a": 5, "b": 1}), start, max_parallel=8)
    )
    assert peak == {"a": 5, "b": 1}
    assert [str(o.error) if o.error else o.result for o in outcomes] == [0, 1, 2, 3, 4, 5, "boom", 7, 8]


def test_scheduler_pairs_needs_of_two():
    live, peak = [0], [0]

    async def start(_):
        live[0] += 2
        peak[0] = max(peak[0], live[0])
        await asyncio.sleep(0.01)
        live[0] -= 2

    asyncio.run(run_jobs(list(range(6)), lambda j: {"e": 2}, EndpointBudget({"e": 5}), start, max_parallel=8))
    assert peak[0] == 4  # two jobs of 2 fit in 5, a third does not
