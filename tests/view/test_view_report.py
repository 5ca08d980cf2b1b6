"""The HTML report links each worst-scored question to its viewer page: hidden in the static file,
live when the viewer serves the report (``/runs/<run>/report``), and the links resolve."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from h2hmem.report import build_report
from h2hmem.view import create_viewer_app


def test_report_links_worst_questions_to_the_viewer(sample_runs, tmp_path):
    run = sample_runs.runs[0]
    paths = build_report([run], None, worst=5, n_boot=0)  # one run: written into the run folder
    static = paths.html.read_text(encoding="utf-8")
    links = re.findall(r'<a class="viewer-link" href="([^"]+)">open in the viewer</a>', static)
    assert len(links) == 5 and all(link.startswith(f"/runs/{run.name}/q/") for link in links)
    assert ".viewer-link { display: none;" in static  # a static file shows no dead links

    client = TestClient(create_viewer_app(sample_runs.runs))
    served = client.get(f"/runs/{run.name}/report")
    assert served.status_code == 200 and "<style>.viewer-link{display:inline}</style></head>" in served.text
    assert "data:" in served.headers["content-security-policy"]  # the report's embedded figures still load
    for link in links:
        page = client.get(link)
        assert page.status_code == 200 and '<h1 id="question">' in page.text
    # the worst first: the linked questions are the first five of the table sorted worst-first
    table = client.get(f"/runs/{run.name}").text
    first = re.findall(r'<tr data-qid="([^"]+)"', table)[:5]
    assert [link.split("/q/", 1)[1] for link in links] == first
    assert client.get(f"/runs/{sample_runs.runs[1].name}/report").status_code == 404  # no report written there


def test_several_runs_get_a_compare_link(sample_runs, tmp_path):
    paths = build_report(sample_runs.runs, tmp_path / "rep", worst=3, n_boot=0)
    html = paths.html.read_text(encoding="utf-8")
    compare = re.findall(r'<a class="viewer-link" href="(/compare/[^"]+)">', html)
    assert len(compare) == 3
    client = TestClient(create_viewer_app(sample_runs.runs))
    assert all('<section class="col"' in client.get(c).text for c in compare)
