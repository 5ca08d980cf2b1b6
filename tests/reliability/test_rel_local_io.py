"""A failure of h2hmem's *own* files (disk full, ``ulimit -f``, an I/O error) stops the command
promptly with exit code 4, never hangs, and never turns into a question recorded as failed.

Reproduced two ways: a real file-size limit (``RLIMIT_FSIZE`` in the child process; Python ignores
``SIGXFSZ``, so a write past the limit fails with ``EFBIG``), and an ``OSError`` /
``sqlite3.OperationalError("disk I/O error")`` injected at each write site. Caches degrade to "no
cache" with one warning (the run's own files decide whether it can go on).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import resource
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from relkit import H2HMEM, REPO, cli, jsonl_ids, make_dataset

from h2hmem import LocalIOError
from h2hmem.embed import CachingEmbedder, EmbeddingCache
from h2hmem.llm import Message, RequestCache, load_chat_model
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel

LONG = "answer " + "word " * 300
"""A long reply (~1.8 kB per prediction line) so that the run's files reach a small limit quickly."""


@pytest.fixture(scope="module")
def server():
    with MockOpenAIServer(responder=lambda body: LONG) as srv:
        yield srv


# ----- the embedding cache's batching task (item 1) ---------------------------------------------


class _Embedder(CachingEmbedder):
    name = "test"
    dim = 4
    cache_model = "test-4"

    def __init__(self, cache, **kw):
        super().__init__(cache, **kw)
        self.computed: list[str] = []

    async def _compute(self, texts):
        self.computed += texts
        return np.ones((len(texts), self.dim), dtype=np.float32) / 2


def _disk_io_error(*args, **kwargs):
    raise sqlite3.OperationalError("disk I/O error")


@pytest.mark.timeout(30)
def test_embedding_cache_write_error_degrades_to_no_cache_with_one_warning(tmp_path, monkeypatch, caplog):
    """Before: the drain task died on the write error ("Task exception was never retrieved") and
    every caller waited forever. Now: vectors are returned, one warning, the cache is dropped."""
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    monkeypatch.setattr(EmbeddingCache, "put_many", _disk_io_error)
    emb = _Embedder(cache)

    async def main():
        loop = asyncio.get_running_loop()
        unretrieved: list[dict] = []
        loop.set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx))
        first = await asyncio.wait_for(asyncio.gather(emb.embed(["a", "b"]), emb.embed(["c"])), 10)
        second = await asyncio.wait_for(emb.embed(["d", "e"]), 10)
        return first, second, unretrieved

    with caplog.at_level(logging.WARNING):
        (a, c), d, unretrieved = asyncio.run(main())
    assert a.shape == (2, 4) and c.shape == (1, 4) and d.shape == (2, 4)
    assert sorted(emb.computed) == ["a", "b", "c", "d", "e"]
    warnings = [r.getMessage() for r in caplog.records if "embedding cache" in r.getMessage()]
    assert len(warnings) == 1 and "cannot be written" in warnings[0] and "disk I/O error" in warnings[0]
    assert emb.cache is None and emb.cache_error is not None and "disk I/O error" in emb.cache_error
    assert emb.describe_cache()["cache"] == str(tmp_path / "emb.sqlite")  # the manifest still names it
    assert unretrieved == []  # no "Task exception was never retrieved"


@pytest.mark.timeout(30)
def test_embedding_cache_read_error_degrades_to_no_cache(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(EmbeddingCache, "get_many", _disk_io_error)
    emb = _Embedder(EmbeddingCache(tmp_path / "emb.sqlite"))
    with caplog.at_level(logging.WARNING):
        out = asyncio.run(emb.embed(["x"]))
    assert out.shape == (1, 4) and emb.cache is None
    assert sum("cannot be read" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.timeout(30)
def test_a_failure_inside_the_drain_reaches_every_waiting_caller(tmp_path, monkeypatch):
    """Any other failure of the batching task (here in storing the vectors in memory) is raised
    by ``embed`` to each caller waiting on it, instead of leaving them waiting."""
    emb = _Embedder(None)

    def broken(self, vectors):
        raise RuntimeError("LRU broken")

    monkeypatch.setattr(_Embedder, "_remember", broken)

    async def main():
        return await asyncio.wait_for(asyncio.gather(emb.embed(["a"]), emb.embed(["b"]), return_exceptions=True), 10)

    results = asyncio.run(main())
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    assert all("LRU broken" in str(r) for r in results)


# ----- the request cache (item 1) ---------------------------------------------------------------


@pytest.mark.timeout(60)
def test_request_cache_write_error_keeps_every_reply_with_one_warning(tmp_path, server, monkeypatch, caplog):
    monkeypatch.setattr(RequestCache, "put", _disk_io_error)
    model = load_chat_model("openai:mock", base_url=server.base_url, cache=tmp_path / "cache.sqlite")

    async def main():
        out = [await model.chat([Message(role="user", content=f"q{i}")]) for i in range(3)]
        await model.aclose()
        return out

    with caplog.at_level(logging.WARNING):
        replies = asyncio.run(main())
    assert [r.text for r in replies] == [LONG] * 3 and not any(r.cached for r in replies)
    warnings = [r.getMessage() for r in caplog.records if "request cache" in r.getMessage()]
    assert len(warnings) == 1 and "disk I/O error" in warnings[0]


# ----- the runner's own files (item 2): an injected OSError at each write site -------------------


def _config(data_root: Path, out: Path, base_url: str, **kw) -> RunConfig:
    return RunConfig(
        data_root=data_root,
        method="full-text",
        model="openai:mock",
        base_url=[base_url],
        out_dir=out,
        run_id="r",
        use_cache=False,
        concurrency=2,
        **kw,
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("site", ["predictions", "transcripts"])
def test_a_write_error_of_the_run_stops_it_records_nothing_as_failed_and_resumes(tmp_path, server, monkeypatch, site):
    """The 4th write to ``site`` fails with EFBIG. Before: each question whose record could not be
    written was recorded as failed (or the run went on paying). Now: LocalIOError naming the file,
    no failed record, no model call after the error beyond those already in flight, and a rerun
    completes every question exactly once."""
    from h2hmem.records import _store, _transcripts

    synth = make_dataset(tmp_path / "data", dialogues=2, sessions=2, questions_per_session=3, multi_party=False)
    n = len(synth.question_ids)
    cls, method = (_store.RunStore, "append") if site == "predictions" else (_transcripts.TranscriptWriter, "write")
    real = getattr(cls, method)
    writes = {"n": 0, "calls_at_error": None}

    def failing(self, record):
        writes["n"] += 1
        if writes["n"] >= 4:
            if writes["calls_at_error"] is None:
                writes["calls_at_error"] = server.calls
            raise OSError(errno.EFBIG, "File too large")
        return real(self, record)

    monkeypatch.setattr(cls, method, failing)
    calls0 = server.calls
    cfg = _config(synth.root, tmp_path / "runs", server.base_url)
    t0 = time.monotonic()
    with pytest.raises(LocalIOError) as info:
        run_benchmark(cfg, progress=False)
    assert time.monotonic() - t0 < 60
    name = "predictions.jsonl" if site == "predictions" else "transcripts.jsonl.gz"
    assert str(info.value).startswith(f"local I/O error: {cfg.run_dir / name}: [Errno 27] File too large")
    assert str(info.value).endswith("free space and rerun to resume")
    # calls in flight when the error happened may finish (concurrency 2); none is started after it
    assert server.calls - calls0 <= writes["calls_at_error"] - calls0 + 2
    recorded = read_predictions(cfg.run_dir / "predictions.jsonl")
    assert recorded and all(not p.failed for p in recorded) and len(recorded) < n
    manifest = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "incomplete" and manifest["counts"]["failed"] == 0

    monkeypatch.setattr(cls, method, real)
    before = server.calls
    summary = run_benchmark(cfg, progress=False)
    assert summary.failed == 0 and summary.skipped == len(recorded) and summary.answered_now == n - len(recorded)
    assert server.calls - before == n - len(recorded)  # the recorded ones are not asked again
    assert sorted(jsonl_ids(cfg.run_dir / "predictions.jsonl")) == sorted(synth.question_ids)


@pytest.mark.timeout(120)
def test_a_manifest_write_error_is_a_local_io_error(tmp_path, server, monkeypatch):
    from h2hmem.records import _store

    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)

    def full(self, manifest):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.manifest_path))

    monkeypatch.setattr(_store.RunStore, "write_manifest", full)
    cfg = _config(synth.root, tmp_path / "runs", server.base_url)
    with pytest.raises(LocalIOError, match=r"manifest\.json: \[Errno 28\] No space left on device"):
        run_benchmark(cfg, progress=False)
    assert not (cfg.run_dir / "predictions.jsonl").exists() or all(
        not p.failed for p in read_predictions(cfg.run_dir / "predictions.jsonl")
    )


@pytest.mark.timeout(60)
def test_cli_maps_a_local_io_error_to_exit_code_4(tmp_path, monkeypatch):
    """`run` and `evaluate` print one line naming the file and exit 4 (README's exit-code table)."""
    import h2hmem.metrics
    import h2hmem.run

    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    target = tmp_path / "runs" / "r" / "predictions.jsonl"

    def raising(*a, **k):
        raise LocalIOError(target, OSError(errno.EFBIG, "File too large"))

    monkeypatch.setattr(h2hmem.run, "run_benchmark", raising)
    res = cli(
        "run", "--data", synth.root, "--method", "full-text", "--model", "openai:mock", "--out", tmp_path / "runs"
    )
    assert res.code == 4, res.output
    assert f"local I/O error: {target}: [Errno 27] File too large; free space and rerun to resume" in res.output
    assert "Traceback" not in res.output

    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "predictions.jsonl").write_text("")

    def scores_full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "scores" / "lexical.jsonl"))

    monkeypatch.setattr(h2hmem.metrics, "evaluate_run", scores_full)
    res = cli("evaluate", run_dir, "--metrics", "lexical")
    assert res.code == 4, res.output
    assert f"local I/O error: {run_dir / 'scores' / 'lexical.jsonl'}: [Errno 28] No space left on device" in res.output
    assert "Traceback" not in res.output


# ----- a real file-size limit, through the installed console script ------------------------------


def _limited(limit_bytes: int):
    def set_limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return set_limit


def _run_cli(args: list[str], env: dict[str, str], limit: int | None, timeout: float = 90) -> tuple[int, str, float]:
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **env}
    t0 = time.monotonic()
    p = subprocess.run(
        [str(H2HMEM), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=REPO,
        preexec_fn=_limited(limit) if limit else None,
    )
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


needs_cli = pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")


@needs_cli
@pytest.mark.timeout(240)
def test_file_size_limit_on_the_embedding_cache_never_hangs_the_run(tmp_path, server):
    """The issue's reproduction: ``ulimit -f`` and naive-rag with a fresh embedding cache. Before:
    the progress bar stayed at 0 forever. Now: the cache is dropped with one warning and the run
    answers every question (the run's own files stay under the limit: no transcripts)."""
    synth = make_dataset(tmp_path / "data", dialogues=2, sessions=2, questions_per_session=2, multi_party=False)
    args = [
        "run", "--data", str(synth.root), "--method", "naive-rag", "--model", "openai:mock",
        "--base-url", server.base_url, "--embedder", "openai:mock-embed", "--out", str(tmp_path / "runs"),
        "--run-id", "rag", "--no-transcripts", "--quiet",
    ]  # fmt: skip
    code, out, seconds = _run_cli(args, {"H2HMEM_CACHE_DIR": str(tmp_path / "cache")}, limit=48 * 1024)
    assert code == 0, out
    assert out.count("embedding cache") == 1 and "cannot be written" in out, out
    assert "Task exception was never retrieved" not in out and "Traceback" not in out
    preds = read_predictions(tmp_path / "runs" / "rag" / "predictions.jsonl")
    assert len(preds) == len(synth.question_ids) and not any(p.failed for p in preds)


@needs_cli
@pytest.mark.timeout(240)
def test_file_size_limit_on_the_run_files_exits_4_and_a_rerun_completes_exactly_once(tmp_path, server):
    """Before: 43 of 50 questions recorded as ``OSError: [Errno 27] File too large``, exit 2. Now:
    exit 4 within seconds naming the file, nothing recorded as failed; without the limit the same
    command answers each remaining question once."""
    synth = make_dataset(tmp_path / "data", dialogues=2, sessions=3, questions_per_session=3, multi_party=False)
    n = len(synth.question_ids)
    args = [
        "run", "--data", str(synth.root), "--method", "full-text", "--model", "openai:mock",
        "--base-url", server.base_url, "--out", str(tmp_path / "runs"), "--run-id", "ft", "--no-cache",
        "--concurrency", "2", "--quiet",
    ]  # fmt: skip
    calls0 = server.calls
    code, out, seconds = _run_cli(args, {}, limit=12 * 1024)
    assert code == 4, out
    run_dir = tmp_path / "runs" / "ft"
    assert "local I/O error: " in out and "[Errno 27] File too large; free space and rerun to resume" in out
    assert "Traceback" not in out
    recorded = read_predictions(run_dir / "predictions.jsonl")  # a torn last line is ignored
    assert 0 < len(recorded) < n and not any(p.failed for p in recorded)
    assert server.calls - calls0 <= len(recorded) + 2 + 1  # recorded + in flight + the one not written
    code, out, _ = _run_cli(args, {}, limit=None)
    assert code == 0, out
    assert sorted(jsonl_ids(run_dir / "predictions.jsonl")) == sorted(synth.question_ids)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["failed"] == 0


FULL_DISK_METHOD = '''
import errno
from typing import ClassVar

from h2hmem.memory import Answer, MemoryMethod, MethodOptions


class SavesStateOptions(MethodOptions):
    pass


class SavesState(MemoryMethod[SavesStateOptions]):
    """Answers the first question; saving its state for the second hits a full disk."""

    name: ClassVar[str] = "saves-state"
    Options = SavesStateOptions

    def __init__(self, ctx, options=None, **params):
        super().__init__(ctx, options, **params)
        self.n = 0

    async def observe(self, session):
        pass

    async def answer(self, question):
        self.n += 1
        if self.n > 1:
            raise OSError(errno.ENOSPC, "No space left on device", "/runs/r/state/notes.json")
        return Answer(text="ok")
'''


@pytest.mark.timeout(60)
def test_a_full_disk_inside_a_method_stops_the_run_instead_of_failing_questions(tmp_path, monkeypatch):
    """A method's own saved state (A-Mem's notes, an index) on a full disk is the machine's
    problem, not the question's: LocalIOError naming the file, no failed record."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "full_disk_method.py").write_text(FULL_DISK_METHOD)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=3, multi_party=False)
    cfg = RunConfig(
        data_root=synth.root, method="full_disk_method:SavesState", out_dir=tmp_path / "runs", run_id="r",
        use_cache=False, concurrency=1,
    )  # fmt: skip
    with pytest.raises(LocalIOError, match=r"local I/O error: /runs/r/state/notes\.json: \[Errno 28\] No space left"):
        run_benchmark(cfg, chat_model=ScriptedChatModel(default="unused"), progress=False)
    preds = read_predictions(cfg.run_dir / "predictions.jsonl")
    assert len(preds) == 1 and not preds[0].failed


@needs_cli
@pytest.mark.timeout(240)
def test_evaluate_under_a_file_size_limit_exits_4_and_keeps_the_previous_score_set(tmp_path, server):
    """Before: a raw traceback and exit 1 (documented as "questions unjudged"), and ``scores/``
    half-updated: a new ``lexical.jsonl`` beside the previous evidence file and summary. Now: exit 4
    with one line naming the file, every file of the previous evaluation byte for byte as it was,
    no temporary file left; once the limit is gone the same command writes the new set."""
    synth = make_dataset(tmp_path / "data", dialogues=2, sessions=2, questions_per_session=3, multi_party=False)
    run_dir = tmp_path / "runs" / "ev"
    args = [
        "run", "--data", str(synth.root), "--method", "full-text", "--model", "openai:mock",
        "--base-url", server.base_url, "--out", str(tmp_path / "runs"), "--run-id", "ev", "--no-cache", "--quiet",
    ]  # fmt: skip
    code, out, _ = _run_cli(args, {}, limit=None)
    assert code == 0, out
    evaluate = ["evaluate", str(run_dir), "--metrics", "lexical,evidence", "--bootstrap", "0"]
    code, out, _ = _run_cli(evaluate, {}, limit=None)
    assert code == 0, out
    scores = run_dir / "scores"
    before = {p.name: p.read_bytes() for p in scores.iterdir() if p.name != ".lock"}
    sizes = sorted(len(b) for name, b in before.items() if name.endswith(".jsonl"))
    # a limit that the smaller score file fits under and the larger does not: the old code replaced
    # the first file, then failed on the second, leaving the set half-updated
    assert sizes[0] + 64 < sizes[-1], sizes
    # the answers change (a rerun replaced them), so every file of the new set differs from the old
    preds = [json.loads(x) for x in (run_dir / "predictions.jsonl").read_text().splitlines()]
    with (run_dir / "predictions.jsonl").open("a") as f:
        f.writelines(json.dumps({**p, "answer": "no idea"}) + "\n" for p in preds)
    code, out, seconds = _run_cli(evaluate, {}, limit=sizes[0] + 64)
    after = {p.name: p.read_bytes() for p in scores.iterdir() if p.name != ".lock"}
    assert sorted(after) == sorted(before) and [n for n in before if after[n] != before[n]] == []
    assert code == 4, out
    assert f"local I/O error: {scores}/" in out and "File too large; free space and rerun to resume" in out
    assert "Traceback" not in out
    code, out, _ = _run_cli(evaluate, {}, limit=None)
    assert code == 0, out
    lexical = [json.loads(x) for x in (scores / "lexical.jsonl").read_text().splitlines()]
    assert len(lexical) == len(preds) and all(r["exact_match"] == 0.0 for r in lexical)
    assert not any(p.name.endswith(".tmp") for p in scores.iterdir())


def test_the_advice_fits_the_cause():
    # "free space" was the advice for a read-only file system too
    import errno

    from h2hmem._localio import LocalIOError

    def advice(e: BaseException) -> str:
        return str(LocalIOError("/r/manifest.json", e)).split("; ", 1)[1]

    assert advice(OSError(errno.ENOSPC, "No space left on device")) == "free space and rerun to resume"
    assert advice(OSError(errno.EFBIG, "File too large")) == "free space and rerun to resume"
    assert (
        advice(OSError(errno.EROFS, "Read-only file system"))
        == "make the folder writable (the file system is read-only) and rerun to resume"
    )
    assert advice(OSError(errno.EACCES, "Permission denied")) == "make the folder writable and rerun to resume"
    assert advice(OSError(errno.EIO, "Input/output error")) == "check the disk and rerun to resume"
