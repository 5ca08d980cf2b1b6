"""The viewer serves only the run's own files and answers every bad parameter with its HTML error
page (issue: a symlinked report.html served /etc/passwd; ``?page=0`` answered a JSON 422)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer
from h2hmem.view import create_viewer_app

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from relkit import make_dataset

REPORT = "<html><head></head><body><h1>the run's report</h1></body></html>"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("refusals")
    synth = make_dataset(tmp / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    with MockOpenAIServer() as srv:
        cfg = RunConfig(
            data_root=synth.root,
            method="full-text",
            model="openai:gpt-4o-mini",
            base_url=[srv.base_url],
            out_dir=tmp / "runs",
            run_id="r",
            use_cache=False,
        )
        run_benchmark(cfg, progress=False)
    return cfg.run_dir


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.html"
    secret.write_text("<html><head></head><body>root:x:0:0:SECRET</body></html>")
    return secret


def test_a_regular_report_is_served(run_dir):
    (run_dir / "report.html").write_text(REPORT)
    try:
        r = TestClient(create_viewer_app([run_dir])).get("/runs/r/report")
        assert r.status_code == 200 and "the run's report" in r.text
    finally:
        (run_dir / "report.html").unlink()


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_symlinked_report_is_refused(run_dir, tmp_path, target):
    """A link to a file outside the run folder (the issue: /etc/passwd), and even one to a file
    inside it, is not the run's report: 403 with the HTML error page, the target never read."""
    if target == "outside":
        dest = _secret(tmp_path)
    else:
        dest = run_dir / "state" / "secret.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("<html><head></head><body>SECRET</body></html>")
    (run_dir / "report.html").symlink_to(dest)
    try:
        r = TestClient(create_viewer_app([run_dir])).get("/runs/r/report")
        assert r.status_code == 403 and "SECRET" not in r.text
        assert r.headers["content-type"].startswith("text/html") and "outside the run folder" in r.text
    finally:
        (run_dir / "report.html").unlink()


def test_a_report_in_a_symlinked_folder_outside_the_run_is_refused(tmp_path, run_dir):
    """``runs/x/report.html`` reached through a linked sub-path: resolved, it lies elsewhere."""
    link_run = tmp_path / "linked"
    link_run.mkdir()
    for name in ("predictions.jsonl", "manifest.json"):
        (link_run / name).write_bytes((run_dir / name).read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.html").write_text("<html><head></head><body>SECRET</body></html>")
    (link_run / "report.html").symlink_to(elsewhere / "x.html")
    r = TestClient(create_viewer_app([link_run])).get("/runs/linked/report")
    assert r.status_code == 403 and "SECRET" not in r.text


@pytest.mark.parametrize("page", ["0", "-1", "abc"])
def test_a_bad_page_number_is_the_html_error_page(run_dir, page):
    r = TestClient(create_viewer_app([run_dir])).get(f"/runs/r?page={page}")
    assert r.status_code == 422
    assert r.headers["content-type"].startswith("text/html")
    assert "Bad parameter (page:" in r.text and '"detail"' not in r.text
