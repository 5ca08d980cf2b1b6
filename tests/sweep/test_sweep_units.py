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
    from_json, from_yaml = load_spec(tmp_path / "s.json")[0], load_spec(tmp_path / "s.yaml")[0]
    assert from_json.model_dump() == from_yaml.model_dump() and from_json.source != from_yaml.source


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


_METHOD = '[[methods]]\nname = "naive-rag"\n'
_MODEL = '[[models]]\nspec = "openai:x"\n'


@pytest.mark.parametrize(
    "body, expected",
    [
        ('[[methods]]\nname = "nope"\n' + _MODEL, "methods[0].name: unknown method 'nope'"),
        (_METHOD + "params = { top_kk = 3 }\n" + _MODEL, "methods[0].params: method 'naive-rag' has no option top_kk"),
        (
            _METHOD + "params = { top_k = 0 }\n" + _MODEL,
            "methods[0].params: method 'naive-rag' option top_k: expected int",
        ),
        (_METHOD + '[[models]]\nspec = "gpt4"\n', "models[0].spec: invalid model spec 'gpt4'"),
        (_METHOD + _MODEL + 'build_model = "vllm:q"\n', "models[0].build_model: unknown model backend 'vllm'"),
        (
            'metrics = ["judge"]\n' + _METHOD + _MODEL + '[judge]\nmodel = "4o"\n',
            "judge.model: invalid model spec '4o'",
        ),
        (_METHOD + _MODEL + "[run]\nlimt = 3\n", "[run] limt: unknown setting (a typo?)"),
    ],
)
def test_grid_errors_name_file_and_field_before_any_run(tmp_path, body, expected):
    # refused by expand_grid, which `sweep`, `sweep --dry-run` and `sweep status` all call first
    p = tmp_path / "bad.toml"
    p.write_text('data = "."\n' + body)
    spec, _ = load_spec(p)
    with pytest.raises(SweepSpecError) as e:
        expand_grid(spec)
    assert f"{p}: {expected}" in str(e.value), str(e.value)


def test_run_table_takes_the_selection_keys_and_one_url_is_a_list(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(
        'data = "."\nmetrics = ["judge"]\n[[methods]]\nname = "naive-rag"\n[[models]]\nspec = "openai:x"\n'
        'base_url = "http://127.0.0.1:9/v1"\n[judge]\nbase_url = "http://127.0.0.1:8/v1"\n'
        '[run]\nsample = 20\nseed = 3\ntask_types = ["UPR"]\n'
    )
    spec, _ = load_spec(p)
    assert spec.models[0].base_url == ["http://127.0.0.1:9/v1"] and spec.judge.base_url == ["http://127.0.0.1:8/v1"]
    (cell,) = expand_grid(spec)
    sel = cell.config.selection
    assert (sel.sample, sel.seed, sel.task_types) == (20, 3, ("UPR",))


def test_missing_dataset_and_a_second_driver_are_refused(tmp_path):
    from h2hmem.records import exclusive_lock
    from h2hmem.sweep import SweepBusyError, check_data, run_sweep

    p = tmp_path / "s.toml"
    p.write_text('data = "nowhere"\n[[methods]]\nname = "naive-rag"\n[[models]]\nspec = "openai:x"\n')
    spec, _ = load_spec(p)
    with pytest.raises(SweepSpecError, match=f"{p}: data: dataset root .*nowhere does not exist"):
        check_data(spec)
    with pytest.raises(SweepSpecError, match="does not exist"):
        run_sweep(spec)
    assert not (spec.out / "report").exists()
    (tmp_path / "nowhere").mkdir()
    with exclusive_lock(spec.out / ".sweep.lock", "h2hmem sweep") as holder:  # as a running sweep holds it
        assert holder is None
        with pytest.raises(SweepBusyError, match=r"being run by another sweep \(pid \d+, h2hmem sweep\)"):
            run_sweep(spec)
    assert not (spec.out / "report").exists()  # the running sweep's report is not overwritten


def test_status_of_a_run_whose_counts_are_not_written_yet(tmp_path):
    # while a run's first invocation runs (or after it was killed) its manifest has no counts: the
    # status says so ('?') instead of 0 questions, and counts failed answers from the predictions
    from h2hmem.records import Manifest, RunStore
    from h2hmem.sweep import cell_status

    p = tmp_path / "s.toml"
    p.write_text('data = "."\n' + _METHOD + _MODEL)
    spec, _ = load_spec(p)
    (cell,) = expand_grid(spec)
    store = RunStore(cell.config.run_dir)
    store.dir.mkdir(parents=True)
    store.write_manifest(Manifest(run_id=cell.run_id))
    lines = [
        {"question_id": "q1", "answer": "a", "error": None},
        {"question_id": "q2", "answer": None, "error": "ServerError: 500"},
        {"question_id": "q3", "answer": None, "error": "ServerError: 500"},
        {"question_id": "q3", "answer": "redone", "error": None},  # a retry replaces the failure
    ]
    store.predictions_path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"question_id": "q4", "ans')
    s = cell_status(cell)
    assert (s.questions, s.recorded, s.failed, s.state) == (None, 3, 1, "partial")
