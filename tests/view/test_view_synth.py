"""Viewer pages on a small synthetic run with images: the question's own image, image parts of a
prompt shown by reference, and a run whose dataset has moved (a note, no crash)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer
from h2hmem.view import create_viewer_app

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from relkit import make_dataset

QID = "dyadic/dialogue1/session0/q1"
"""The session0 question whose image is ``session1/1.png``."""


def _run(tmp_path: Path) -> Path:
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=2, questions_per_session=1, multi_party=False)
    with MockOpenAIServer() as srv:
        cfg = RunConfig(
            data_root=synth.root,
            method="full-mm",
            model="openai:gpt-4o-mini",
            base_url=[srv.base_url],
            out_dir=tmp_path / "runs",
            run_id="mm",
            cache_path=tmp_path / "c.sqlite",
        )
        run_benchmark(cfg, progress=False)
    return cfg.run_dir


def test_question_image_and_image_parts_by_reference(tmp_path):
    run_dir = _run(tmp_path)
    client = TestClient(create_viewer_app([run_dir]))
    html = client.get(f"/runs/mm/q/{QID}").text
    assert '<img class="qimage" alt="session1/1.png" src="/runs/mm/image/dyadic/dialogue1/session1/1.png">' in html
    assert client.get("/runs/mm/image/dyadic/dialogue1/session1/1.png").content.startswith(b"\x89PNG")
    # full-mm sends pixels: the prompt shows each image part as name · path · hash, never its bytes
    assert '<div class="image-ref">[image 1.png in session1 · ' in html and "base64" not in html


def test_a_moved_dataset_gives_a_note_not_an_error(tmp_path):
    run_dir = _run(tmp_path)
    shutil.move(str(tmp_path / "data"), str(tmp_path / "elsewhere"))
    client = TestClient(create_viewer_app([run_dir]))
    r = client.get(f"/runs/mm/q/{QID}")
    assert r.status_code == 200 and "not found (start the viewer with --data ROOT)" in r.text
    html = TestClient(create_viewer_app([run_dir], data_root=tmp_path / "elsewhere")).get(f"/runs/mm/q/{QID}").text
    assert "start the viewer with --data" not in html and 'class="qimage"' in html
