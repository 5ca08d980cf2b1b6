"""The run directory is guarded: a damaged one is refused with an error naming the file (and line),
never a traceback, and nothing in it is overwritten; a second process on the same run is refused."""

from __future__ import annotations

import subprocess
import time

import pytest
from relkit import H2HMEM, cli, jsonl_ids, make_dataset

from h2hmem.testing import MockOpenAIServer


@pytest.fixture(scope="module")
def srv():
    with MockOpenAIServer() as s:
        yield s


def _args(data, tmp_path, srv):
    return [
        "run",
        "--data",
        data.root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        srv.base_url,
        "--no-cache",
        "--out",
        tmp_path / "runs",
        "--run-id",
        "r",
        "--quiet",
    ]


@pytest.mark.parametrize(
    "damage,expect",
    [
        (lambda run: (run / "manifest.json").write_text('{"run_id": "r", '), "manifest.json: not a valid manifest"),
        (lambda run: (run / "manifest.json").write_bytes(b"\xff\xfe"), "manifest.json: not a valid manifest"),
        (
            lambda run: (run / "predictions.jsonl").write_bytes(
                (run / "predictions.jsonl").read_bytes().replace(b'"question_id"', b'"questionid"', 1)
            ),
            "predictions.jsonl: line 1 is not a prediction record",
        ),
        (
            lambda run: (run / "predictions.jsonl").write_bytes(
                b"\n".join(
                    l if i != 2 else l[:30] for i, l in enumerate((run / "predictions.jsonl").read_bytes().split(b"\n"))
                )
            ),
            "predictions.jsonl: line 3 is not a prediction record",
        ),
    ],
    ids=["manifest-cut", "manifest-not-utf8", "record-missing-field", "torn-middle-line"],
)
def test_damaged_run_directory_is_a_named_error(tmp_path, srv, damage, expect):
    data = make_dataset(tmp_path / "data", dialogues=1, sessions=2, questions_per_session=2, multi_party=False)
    args = _args(data, tmp_path, srv)
    assert cli(*args).code == 0
    run = tmp_path / "runs" / "r"
    damage(run)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    res = cli(*args)
    assert res.code == 2 and "Traceback" not in res.output, res.output
    assert expect in " ".join(res.output.split()), res.output
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_a_second_process_on_the_same_run_is_refused(tmp_path):
    """Two ``h2hmem run`` on one run directory would interleave and duplicate records: the second
    is refused while the first holds the lock, and works (resuming) once the first has ended."""
    data = make_dataset(tmp_path / "data", dialogues=1, sessions=2, questions_per_session=3, multi_party=False)
    with MockOpenAIServer(latency_s=0.3) as slow:
        args = [str(a) for a in _args(data, tmp_path, slow)]
        first = subprocess.Popen([str(H2HMEM), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lock = tmp_path / "runs" / "r" / ".lock"
        deadline = time.monotonic() + 30
        while not (lock.exists() and lock.read_text().startswith("pid")) and time.monotonic() < deadline:
            time.sleep(0.02)
        second = cli(*args)
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, out + err
    assert second.code == 2 and "Traceback" not in second.output, second.output
    assert f"being written by another h2hmem run (pid {first.pid})" in " ".join(second.output.split())
    preds = tmp_path / "runs" / "r" / "predictions.jsonl"
    assert sorted(jsonl_ids(preds)) == sorted(data.question_ids)  # one record each, none from the refused run


@pytest.mark.parametrize(
    "bad,expect",
    [
        (lambda t: ["--out", t / "afile"], "Not a directory"),
        (lambda t: ["--out", t / "afile" / "sub"], "Not a directory"),
        (lambda t: ["--model", "bogus"], "invalid model spec 'bogus'"),
        (lambda t: ["--base-url", "notaurl"], "invalid base URL 'notaurl'"),
        (lambda t: ["--method", "full-txet"], "unknown method 'full-txet'"),
        (lambda t: ["--concurrency", "0"], "concurrency must be at least 1"),
        (lambda t: ["--split", "triadic"], "split"),
    ],
    ids=[
        "out-is-a-file",
        "out-under-a-file",
        "bad-model-spec",
        "bad-base-url",
        "unknown-method",
        "zero-concurrency",
        "unknown-split",
    ],
)
def test_bad_run_options_are_named_errors(tmp_path, bad, expect):
    data = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    (tmp_path / "afile").write_text("not a folder")
    args = {
        "--data": data.root,
        "--method": "full-text",
        "--model": "openai:mock",
        "--base-url": "http://127.0.0.1:9/v1",
        "--out": tmp_path / "runs",
        "--split": "all",
        "--concurrency": "2",
    }
    override = bad(tmp_path)
    args[override[0]] = override[1]
    res = cli("run", *[x for kv in args.items() for x in kv], "--no-cache", "--quiet")
    assert res.code == 2 and "Traceback" not in res.output, res.output
    assert expect in " ".join(res.output.split()), res.output
