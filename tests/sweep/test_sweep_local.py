"""A sweep of 3 methods × 2 mock models × both presets on the shared sample: runs to completion with the
local backend, is killed halfway and resumed without a repeated or lost answer, never exceeds the shared
endpoint's concurrency, and writes the grid report (checked in Chromium; screenshot saved)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sweep_helpers import PRESETS, answers, write_spec

from h2hmem.sweep import expand_grid, load_spec, run_sweep, sweep_status
from h2hmem.testing import MockOpenAIServer

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts" / "screenshots"


@pytest.fixture()
def mock():
    server = MockOpenAIServer(latency_s=0.02).start()
    yield server
    server.stop()


def _cli(*args):
    return [sys.executable, "-c", "from h2hmem.cli import main; main()", *args]


def test_sweep_killed_halfway_resumes_without_repeats(sample_root, tmp_path, mock, monkeypatch):
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    spec_path = write_spec(tmp_path / "grid.toml", sample_root, mock.base_url, limit=6, concurrency=4)
    spec, _ = load_spec(spec_path)
    cells = expand_grid(spec)
    env = {**os.environ, "H2HMEM_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(_cli("sweep", str(spec_path)), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 240
    recorded = 0
    while time.time() < deadline and proc.poll() is None:  # kill once a few runs have answers, before the end
        recorded = sum(s.recorded for s in sweep_status(cells))
        if recorded >= 10:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be killed: " + proc.stdout.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mid = sweep_status(cells)
    n_runs = 3 * 2 * len(PRESETS)
    assert 0 < sum(s.recorded for s in mid) < n_runs * 6 and any(s.state != "done" for s in mid)

    result = run_sweep(spec_path)
    assert result.ok, result.errors
    assert [s.state for s in result.status] == ["done"] * n_runs and all(s.evaluated for s in result.status)
    for c in cells:  # exactly one answer per question, none lost
        assert len(answers(c.config.run_dir)) == 6
    # the two models shared one server with concurrency 4: never more in flight, whatever the runs
    assert 1 <= mock.max_in_flight <= 4

    # running it again does nothing: every run is done and evaluated
    calls = mock.calls
    again = run_sweep(spec_path)
    assert again.ok and mock.calls == calls

    report = json.loads((spec.out / "report" / "sweep.json").read_text())
    assert len(report["tables"]) == 2 * len(PRESETS)  # one per model × preset
    t = next(t for t in report["tables"] if t["model"] == "mock-a" and t["preset"] == "paper")
    measured = [r for r in t["rows"] if r["kind"] == "measured"]
    assert [r["method"] for r in measured] == ["full-text", "full-mm", "naive-rag"]
    assert {r["method"] for r in t["rows"] if r["kind"] == "published"} == {
        "Full (Text) [published]",
        "Full (MM) [published]",
        "Naive RAG [published]",
    }
    # the grid cell is the run's own aggregate
    ft = next(c for c in cells if c.key == ("full-text", "mock-a", "paper", "full", "multi-party"))
    summary = json.loads((ft.config.run_dir / "scores" / "summary.json").read_text())
    want = summary["metrics"]["lexical"]["aggregate"]["splits"]["multi-party"]["overall"]["metrics"]["f1"]["mean"]
    assert measured[0]["overall"]["mean"] == pytest.approx(want)
    md = (spec.out / "report" / "sweep.md").read_text()
    assert "| full-text | mock-a | paper | full | multi-party | done | 6/6 | 0 | yes |" in md

    _browser_check(spec.out / "report" / "sweep.html", n_runs)


def _browser_check(html: Path, n_runs: int) -> None:
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("no Chromium at /usr/bin/chromium (Debian package chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.as_uri())
            assert page.locator("table#status tbody tr").count() == n_runs
            assert page.locator("table.grid").count() == 2 * len(PRESETS)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
            page.screenshot(path=str(ARTIFACTS / "sweep-report.png"), full_page=True)
            assert not errors
        finally:
            browser.close()


def test_dry_run_counts_the_real_prompts_and_sends_nothing(sample_root, tmp_path, mock, monkeypatch):
    from h2hmem.sweep import estimate_sweep

    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    spec_path = write_spec(tmp_path / "grid.toml", sample_root, mock.base_url, limit=2)
    estimates = estimate_sweep(spec_path)
    assert mock.calls == 0 and len(estimates) == 3 * 2 * len(PRESETS)
    assert all(e.total.calls == 2 and e.total.prompt_tokens > 0 for _, e in estimates)
    assert not (tmp_path / "sweep-out" / "runs").exists() or not any((tmp_path / "sweep-out" / "runs").iterdir())
