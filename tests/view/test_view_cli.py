"""``h2hmem view`` as a command: a real child process serving a run on 127.0.0.1, and its errors."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.testing import free_port

H2HMEM = Path(sys.executable).parent / "h2hmem"


def test_view_refuses_a_folder_without_predictions(tmp_path):
    res = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert res.exit_code == 2 and "no predictions.jsonl" in res.output


@pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")
def test_view_serves_the_runs_on_localhost(sample_runs):
    port = free_port()
    proc = subprocess.Popen(
        [str(H2HMEM), "view", *map(str, sample_runs.runs), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "the viewer did not answer within 60 s"
                time.sleep(0.2)
        assert r.status_code == 200 and all(d.name in r.text for d in sample_runs.runs)
        q = httpx.get(f"http://127.0.0.1:{port}/runs/{sample_runs.runs[0].name}/q/dyadic/dialogue5/session1/q0")
        assert q.status_code == 200 and "Retrieved evidence" in q.text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert f"viewer on http://127.0.0.1:{port}/" in out
