"""The same sweep through the Ray executor on a local Ray instance started by the test (CPU only):
the same answers and grid numbers as the local backend."""

import json

import pytest
from sweep_helpers import answers, write_spec

from h2hmem.sweep import expand_grid, load_spec, run_sweep
from h2hmem.testing import MockOpenAIServer

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_executor_gives_the_local_results(sample_root, tmp_path, monkeypatch, local_ray):
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    server = MockOpenAIServer(latency_s=0.01).start()
    try:
        local = write_spec(tmp_path / "local.toml", sample_root, server.base_url, out="local", limit=4)
        remote = write_spec(tmp_path / "ray.toml", sample_root, server.base_url, out="ray", limit=4, executor="ray")
        a = run_sweep(local)
        calls = server.calls
        b = run_sweep(remote)
        assert a.ok and b.ok, (a.errors, b.errors)
        assert server.calls == 2 * calls  # the ray sweep really asked (use_cache = false)
        assert server.max_in_flight <= 3
    finally:
        server.stop()
    for ca, cb in zip(expand_grid(load_spec(local)[0]), expand_grid(load_spec(remote)[0])):
        assert ca.run_id == cb.run_id and answers(ca.config.run_dir) == answers(cb.config.run_dir)
    ta = json.loads((a.out / "report" / "sweep.json").read_text())["tables"]
    tb = json.loads((b.out / "report" / "sweep.json").read_text())["tables"]
    assert [[r["overall"] for r in t["rows"]] for t in ta] == [[r["overall"] for r in t["rows"]] for t in tb]
