"""Transcripts across a crash: ``h2hmem run`` (the console script, a child process) is killed with
SIGKILL at a known point — after exactly N model replies were delivered, the next calls hanging in
the mock — and a torn transcript member is left behind; the same command then finishes the run.

Checked on the raw files: exactly one paid record (``cached: false``) per reply the server sent,
no paid call recorded twice, every call of the resumed invocation that the cache served (the
rebuilt memories' construction calls) recorded as a cache hit whose key is a paid record's, the
torn member cut off (and counted in the manifest's ``repairs``), and the file readable with ``gzip``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from relkit import H2HMEM, jsonl_ids, make_dataset

from h2hmem.records import encode_record, read_transcripts
from h2hmem.testing import MockOpenAIServer, default_responder

pytestmark = pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")
RUN_TESTS = Path(__file__).parents[1] / "run"  # transcript_memory.SummaryMemory lives there


class GatedResponder:
    """Answers the first ``limit`` chat requests (``None``: all), then holds every later one open."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.replies = 0
        self._lock = threading.Lock()

    async def __call__(self, body: dict) -> str:
        with self._lock:
            allowed = self.limit is None or self.replies < self.limit
            if allowed:
                self.replies += 1
        if not allowed:
            await asyncio.sleep(3600)
        return default_responder(body)


def _paid(run_dir: Path) -> list[dict]:
    return [r for r in read_transcripts(run_dir) if not r["cached"]]


def test_sigkill_then_resume_keeps_one_paid_record_per_reply(tmp_path):
    synth = make_dataset(tmp_path / "data", dialogues=3, sessions=4, questions_per_session=4)
    n_q = len(synth.question_ids)  # 72 questions, 4 dialogues × 4 sessions: 16 construction calls
    run_dir = tmp_path / "runs" / "t"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(RUN_TESTS), os.environ.get("PYTHONPATH", "")])}
    gate = GatedResponder(limit=24)
    with MockOpenAIServer(responder=gate) as srv:
        cmd = [
            str(H2HMEM),
            "run",
            "--data",
            str(synth.root),
            "--method",
            "transcript_memory:SummaryMemory",
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--cache-path",
            str(tmp_path / "cache.sqlite"),
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "t",
            "--concurrency",
            "4",
            "--quiet",
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 60
        while True:  # wait until all 24 replies are recorded, every recorded answer has its prediction,
            # and the next calls hang in the mock
            paid = _paid(run_dir) if (run_dir / "transcripts.jsonl.gz").exists() else []
            answers = sum(r["stage"] == "answer" for r in paid)
            preds = len(jsonl_ids(run_dir / "predictions.jsonl")) if (run_dir / "predictions.jsonl").exists() else 0
            if len(paid) == 24 and preds == answers and srv.in_flight == 4:  # 4 = --concurrency, held open
                break
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, f"only {len(paid)} paid records, {preds} predictions"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        first = _paid(run_dir)
        assert len(first) == 24 and gate.replies == 24
        builds_first = sum(r["stage"] == "memory_build" for r in first)
        answered_first = len(jsonl_ids(run_dir / "predictions.jsonl"))
        # a record being written when the process died: a torn member at the end of the file
        torn = encode_record({"stage": "answer", "pad": "x" * 3000})[:-5]
        with open(run_dir / "transcripts.jsonl.gz", "ab") as f:
            f.write(torn)

        gate.limit = None
        final = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert final.returncode == 0, final.stdout + final.stderr
        replies = gate.replies
        chat_requests = srv.endpoints.count("chat")

    recs = read_transcripts(run_dir)
    paid = [r for r in recs if not r["cached"]]
    hits = [r for r in recs if r["cached"]]
    assert all(r["error"] is None for r in recs)
    assert len(paid) == replies  # exactly one paid record per reply the server sent …
    assert chat_requests - replies == 4  # … and the calls hanging at the kill (concurrency 4) are not paid
    keys = Counter(r["cache_key"] for r in paid)
    assert max(keys.values()) == 1  # no paid call recorded twice
    assert {r["cache_key"] for r in hits} <= set(keys)  # each hit names the paid call it replays
    assert [r["invocation"] for r in recs] == sorted(r["invocation"] for r in recs)  # 0 … then 1
    second = [r for r in recs if r["invocation"] == 1]
    # the resumed run rebuilt every memory: its construction calls paid before the kill are hits now
    assert sum(r["stage"] == "memory_build" and r["cached"] for r in second) == builds_first
    assert sum(r["stage"] == "answer" for r in paid) == n_q and sum(r["stage"] == "memory_build" for r in paid) == 16
    assert not any(r["stage"] == "answer" and r["cached"] for r in recs)  # answered questions were skipped
    answered = Counter(r["question_ids"][0] for r in paid if r["stage"] == "answer")
    assert sorted(answered) == sorted(synth.question_ids) and set(answered.values()) == {1}
    assert len(jsonl_ids(run_dir / "predictions.jsonl")) == n_q and answered_first < n_q

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert [r["transcript_bytes_removed"] for r in manifest["repairs"] if "transcript_bytes_removed" in r] == [
        len(torn)
    ]
    with gzip.open(run_dir / "transcripts.jsonl.gz", "rt", encoding="utf-8") as f:
        assert sum(1 for _ in f) == len(recs)
