"""A corrupt or truncated request cache never stops a run: ``h2hmem run`` (the installed console
script) moves it aside with a warning, starts a fresh cache and answers every question.

The detection lives in ``h2hmem.llm.RequestCache`` (model layer); here it is tested through a whole
run, as a user meets it: a disk that filled up, a copy cut short, a file that is not SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from relkit import H2HMEM, cli_subprocess, make_dataset

from h2hmem.records import read_predictions
from h2hmem.testing import MockOpenAIServer

pytestmark = pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")


@pytest.fixture(scope="module")
def server():
    # long answers so that the cache spans many pages (a truncation then cuts real rows)
    with MockOpenAIServer(responder=lambda body: "answer " + "word " * 400) as srv:
        yield srv


@pytest.fixture(scope="module")
def warm(tmp_path_factory, server):
    """A dataset and a cache filled by one complete run (WAL checkpointed into the main file)."""
    tmp = tmp_path_factory.mktemp("warm")
    data = make_dataset(tmp / "data", dialogues=2, sessions=2, questions_per_session=3, multi_party=False)
    cache = tmp / "cache.sqlite"
    res = _run(data.root, cache, tmp / "runs", "first", server)
    assert res.code == 0, res.output
    with sqlite3.connect(cache) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        n = conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
    assert n == len(data.question_ids)
    return data, cache


def _run(root: Path, cache: Path, out: Path, run_id: str, srv):
    return cli_subprocess(
        "run",
        "--data",
        root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        srv.base_url,
        "--cache-path",
        cache,
        "--out",
        out,
        "--run-id",
        run_id,
        "--quiet",
    )


def _garbage(p: Path) -> None:
    p.write_bytes(b"this is not a database, just some text " * 200)


def _truncated(p: Path) -> None:
    data = p.read_bytes()
    page = int.from_bytes(data[16:18], "big") or 65536
    assert len(data) >= 8 * page, "cache too small to truncate meaningfully"
    p.write_bytes(data[: 3 * page])  # header intact, most pages gone


def _scribbled(p: Path) -> None:
    data = bytearray(p.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for off in range(2 * page, min(len(data), 5 * page), 7):  # trash the b-tree pages after the schema
        data[off] = 0xA5
    p.write_bytes(bytes(data))


def _header_only(p: Path) -> None:
    p.write_bytes(p.read_bytes()[:100])


@pytest.mark.parametrize(
    "damage",
    [_garbage, _truncated, _scribbled, _header_only],
    ids=["not-sqlite", "truncated", "scribbled-pages", "header-only"],
)
def test_corrupt_cache_is_moved_aside_and_the_run_goes_on(tmp_path, warm, server, damage):
    data, good = warm
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(good.read_bytes())
    damage(cache)
    damaged = cache.read_bytes()

    server.reset_stats()
    res = _run(data.root, cache, tmp_path / "runs", "after-damage", server)
    assert res.code == 0 and "Traceback" not in res.output, res.output
    assert "is corrupt" in res.output and "moved it to" in res.output, res.output
    aside = sorted(tmp_path.glob("cache.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # kept for inspection, byte for byte
    preds = read_predictions(tmp_path / "runs" / "after-damage")
    assert sorted(p.question_id for p in preds) == sorted(data.question_ids)
    assert not any(p.failed for p in preds)
    assert server.calls == len(data.question_ids)  # nothing could come from the damaged cache

    if damage is not _truncated:
        return
    # the fresh cache works: a second run is served from it without a model call
    server.reset_stats()
    res = _run(data.root, cache, tmp_path / "runs", "cached", server)
    assert res.code == 0, res.output
    assert server.calls == 0
    manifest = json.loads((tmp_path / "runs" / "cached" / "manifest.json").read_text())
    assert manifest["usage"]["answer"]["cached_calls"] == len(data.question_ids)


def test_zero_byte_cache_is_an_empty_cache(tmp_path, warm, server):
    """SQLite reads a zero-byte file as an empty database: no warning, nothing moved."""
    data, _ = warm
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"")
    res = _run(data.root, cache, tmp_path / "runs", "empty", server)
    assert res.code == 0 and "corrupt" not in res.output, res.output
    assert not list(tmp_path.glob("cache.sqlite.corrupt-*"))
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == len(data.question_ids)


def test_cache_write_failure_mid_run_keeps_the_paid_answer(tmp_path, server, monkeypatch):
    import sqlite3 as sq

    from h2hmem.llm import RequestCache, load_chat_model
    from h2hmem.run import RunConfig, run_benchmark

    data = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=2, multi_party=False)

    def full_disk(self, key, entry):
        raise sq.OperationalError("database or disk is full")

    monkeypatch.setattr(RequestCache, "put", full_disk)
    model = load_chat_model("openai:mock", base_url=server.base_url, cache=tmp_path / "cache.sqlite")
    cfg = RunConfig(data_root=data.root, method="full-text", out_dir=tmp_path / "runs", run_id="full", use_cache=True)
    summary = run_benchmark(cfg, chat_model=model, progress=False)
    assert summary.failed == 0, summary.failed_questions
