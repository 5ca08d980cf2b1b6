"""Small failures a new user meets (issue 27, items 9 and 10): a plugin that cannot be built
leaves no run folder behind; a typo in a sweep's ``[run]`` table is one clean line; ``runs list``
fits 80 columns; ``run --dry-run`` says what local work it does before doing it; the CLI names
``--price`` where it used to print the Python API's ``prices={...}``."""

from __future__ import annotations

import logging

import pytest
from relkit import cli, make_dataset

PLUGIN = '''
from h2hmem.memory import MemoryMethod


class Broken(MemoryMethod):
    """A memory plugin whose constructor fails (a missing GPU, a bad path...)."""

    name = "broken"

    def __init__(self, ctx, options=None, **params):
        raise RuntimeError("no GPU here")

    async def observe(self, session):
        pass

    async def answer(self, question):
        raise AssertionError("never called")
'''


def test_a_plugin_whose_constructor_raises_leaves_no_run_folder(tmp_path, monkeypatch):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "broken_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    out = tmp_path / "runs"
    args = ("run", "--data", synth.root, "--method", "broken_plugin:Broken", "--model", "openai:mock")
    res = cli(*args, "--base-url", "http://127.0.0.1:9/v1", "--out", out)
    assert res.code == 2 and "cannot build method 'broken_plugin:Broken'" in res.output and "no GPU here" in res.output
    assert "Traceback" not in res.output
    assert not out.exists() or list(out.iterdir()) == []  # before: runs/<id>/ holding only .lock
    res = cli(*args, "--out", out)  # another early stop: no API key for api.openai.com
    assert res.code == 2 and "no API key" in res.output
    assert not out.exists() or list(out.iterdir()) == []


def test_a_plugin_failure_keeps_an_existing_run_folder(tmp_path, monkeypatch):
    """A folder that existed before (an earlier run's) is never removed."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "broken_plugin2.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    run_dir = tmp_path / "runs" / "mine"
    run_dir.mkdir(parents=True)
    args = ("run", "--data", synth.root, "--method", "broken_plugin2:Broken", "--model", "openai:mock")
    res = cli(*args, "--out", tmp_path / "runs", "--run-id", "mine")
    assert res.code == 2 and run_dir.is_dir()


SWEEP = """
name = "typo"
data = "{data}"
out = "out"
{top}
[run]
limit = 2
{run}

[[methods]]
name = "full-text"

[[models]]
spec = "openai:mock"

[[models]]
spec = "openai:mock-b"
"""


@pytest.mark.parametrize("where", ["top", "run"])
def test_a_typo_in_a_sweep_is_one_clean_line_at_top_level_and_in_run(tmp_path, where):
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        SWEEP.format(
            data=synth.root, top="retires = 2" if where == "top" else "", run="limt = 3" if where == "run" else ""
        )
    )
    res = cli("sweep", "status", spec)
    assert res.code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output  # before: pydantic's text ("1 validation error for RunConfig …")
    assert "pydantic" not in res.output and "validation error for" not in res.output
    if where == "run":
        assert lines[0].startswith(f"error: {spec}: [run] limt: unknown setting (a typo?)")
    else:
        assert "retires" in lines[0]


def test_runs_list_fits_80_columns_with_each_run_id_on_one_line(tmp_path):
    from h2hmem.run import RunConfig, run_benchmark
    from h2hmem.testing import MockOpenAIServer

    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    ids = []
    with MockOpenAIServer() as srv:
        for method in ("full-text", "full-mm"):
            cfg = RunConfig(
                data_root=synth.root,
                method=method,
                model="openai:gpt-4.1-nano",
                base_url=[srv.base_url],
                out_dir=tmp_path / "runs",
                use_cache=False,
                limit=2,
            )
            run_benchmark(cfg, progress=False)
            ids.append(cfg.resolved_run_id)
    assert min(len(i) for i in ids) > 30  # long ids: the ones that used to wrap over five lines
    res = cli("runs", "list", "--out", tmp_path / "runs", env={"COLUMNS": "80"})
    assert res.code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80, res.output
    for run_id in ids:
        assert run_id in lines, res.output  # whole, alone on its line
    assert "full-text · openai:gpt-4.1-nano" in res.output and "2/2 answered" in res.output
    wide = cli("runs", "list", "--out", tmp_path / "runs", env={"COLUMNS": "250"})
    assert all(any(run_id in line and "complete" in line for line in wide.output.splitlines()) for run_id in ids)


def test_dry_run_says_before_it_starts_that_it_builds_memories_and_embeds_locally(tmp_path):
    from h2hmem.cli._run import dry_run_notice
    from h2hmem.run import RunConfig

    cfg = RunConfig(data_root=tmp_path, method="naive-rag", model="openai:gpt-4.1-nano", out_dir=tmp_path / "r")
    notice = dry_run_notice(cfg)
    assert notice.startswith("dry run: the memories are built on this machine")
    assert "local embedder minilm" in notice and "about 1 GB of memory" in notice and "no model is called" in notice
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    res = cli(
        "run", "--data", synth.root, "--method", "full-text", "--model", "openai:gpt-4.1-nano",
        "--out", tmp_path / "runs", "--dry-run", env={"COLUMNS": "400"},
    )  # fmt: skip
    assert res.code == 0, res.output
    assert res.output.index("dry run: the memories are built") < res.output.index("nothing was sent")


def test_an_unpriced_model_names_the_price_flag(caplog):
    from h2hmem.llm import cost_usd

    with caplog.at_level(logging.WARNING):
        assert cost_usd("my-unpriced-model-xyz", 1000, 10) == 0.0
    (msg,) = [r.getMessage() for r in caplog.records if "my-unpriced-model-xyz" in r.getMessage()]
    assert "--price my-unpriced-model-xyz=IN/OUT" in msg
    assert msg.index("--price") < msg.index("prices={")  # the flag first, the Python API after it
