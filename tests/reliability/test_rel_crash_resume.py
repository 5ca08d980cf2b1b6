"""Crash-resume: ``h2hmem run`` (the installed console script, a real child process) is killed with
SIGKILL at seeded random moments — right after ``predictions.jsonl`` grows, at random times while
answering, and with the last line then torn mid-record — and resumed until it finishes.

End state, checked on the raw JSONL lines: exactly one record per question, none lost, none
duplicated; every torn tail was cut off (and recorded in the manifest's ``repairs``); the manifest
counts the resumes.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from relkit import H2HMEM, jsonl_ids, make_dataset

from h2hmem.records import Prediction, read_predictions
from h2hmem.testing import MockOpenAIServer

pytestmark = pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _wait_for_growth(proc: subprocess.Popen, path: Path, start_lines: int, extra: int, deadline_s: float) -> bool:
    """Poll (1 ms) until ``path`` holds more than ``start_lines + extra`` complete lines; False if the
    process ended first."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if _lines(path) > start_lines + extra:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.001)
    raise AssertionError(f"{path} did not grow within {deadline_s}s")


def _expected_repair(path: Path) -> int:
    """Bytes ``RunStore.repair`` must cut: the unterminated tail, unless it is a complete record."""
    data = path.read_bytes() if path.exists() else b""
    if not data or data.endswith(b"\n"):
        return 0
    tail = data[data.rfind(b"\n") + 1 :]
    try:
        Prediction.model_validate_json(tail)
        return 0
    except ValueError:
        return len(tail)


def test_sigkill_at_random_moments_then_resume_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(20240220)
    synth = make_dataset(tmp_path / "data", dialogues=3, sessions=4, questions_per_session=4)
    n_questions = len(synth.question_ids)
    assert n_questions == 72  # (3 dyadic + 1 multi-party) dialogues × (4 sessions × 4 + 2 session0)
    run_dir = tmp_path / "runs" / "crash"
    preds = run_dir / "predictions.jsonl"
    # each kill: how many more lines to wait for, then a random extra delay, then whether to tear
    plan = [
        ("after-growth", 0, 0.0, False),
        ("after-growth", rng.randint(1, 4), 0.0, True),
        ("random", 0, rng.uniform(0.05, 0.4), False),
        ("random", rng.randint(0, 3), rng.uniform(0.05, 0.4), True),
        ("after-growth", rng.randint(0, 2), 0.0, True),
        ("random", 0, rng.uniform(0.05, 0.4), False),
    ]
    expected_repairs: list[int] = []
    started = time.monotonic()
    with MockOpenAIServer(latency_s=0.15) as srv:
        cmd = [
            str(H2HMEM),
            "run",
            "--data",
            str(synth.root),
            "--method",
            "full-text",
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--cache-path",
            str(tmp_path / "cache.sqlite"),
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "crash",
            "--concurrency",
            "2",
            "--quiet",
        ]
        for i, (_kind, extra, delay, tear) in enumerate(plan):
            torn = _expected_repair(preds)
            if torn:
                expected_repairs.append(torn)
            before = _lines(preds)
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            alive = _wait_for_growth(proc, preds, before, extra, deadline_s=30)
            assert alive, f"kill {i}: the run finished before it could be killed; make the plan earlier"
            if delay:
                time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=10)
            assert proc.returncode == -signal.SIGKILL, f"kill {i}: process exited by itself: {err.decode()[-2000:]}"
            if tear:  # a crash in the middle of write(): cut the last line at a random byte
                data = preds.read_bytes()
                last_start = data.rstrip(b"\n").rfind(b"\n") + 1
                cut = rng.randint(last_start + 1, len(data) - 3)
                preds.write_bytes(data[:cut])
                assert not preds.read_bytes().endswith(b"\n")
        torn = _expected_repair(preds)
        if torn:
            expected_repairs.append(torn)
        final = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    assert final.returncode == 0, final.stdout + final.stderr
    assert "Traceback" not in final.stdout + final.stderr

    raw = jsonl_ids(preds)  # every complete raw line: any duplicate or loss shows here
    dupes = [q for q, n in Counter(raw).items() if n > 1]
    assert dupes == [], f"duplicated records: {dupes}"
    assert sorted(raw) == sorted(synth.question_ids)
    assert preds.read_bytes().endswith(b"\n")
    records = read_predictions(run_dir)
    assert len(records) == n_questions and all(p.answer and not p.failed for p in records)

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["resumes"] == len(plan)  # every launch after the first found the run and resumed it
    assert len(manifest["invocations"]) == len(plan) + 1
    assert [r["torn_bytes_removed"] for r in manifest.get("repairs", [])] == expected_repairs
    assert sum(tear for *_, tear in plan) <= len(expected_repairs)
    assert manifest["status"] == "complete"
    assert manifest["counts"]["recorded"] == n_questions and manifest["counts"]["failed"] == 0
    assert elapsed < 60, f"crash-resume test took {elapsed:.1f}s"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_finalises_the_manifest_and_says_how_to_resume(tmp_path, sig):
    """Ctrl-C or a scheduler's SIGTERM: exit 130 with a resume hint and no traceback; the manifest
    counts exactly the records on disk; the rerun answers only the rest."""
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=3, questions_per_session=3, multi_party=False)
    run_dir = tmp_path / "runs" / "stop"
    preds = run_dir / "predictions.jsonl"
    with MockOpenAIServer(latency_s=0.5) as srv:  # the signal must land mid-run on a loaded machine too
        cmd = [
            str(H2HMEM),
            "run",
            "--data",
            str(synth.root),
            "--method",
            "full-text",
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--no-cache",
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "stop",
            "--concurrency",
            "2",
            "--quiet",
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert _wait_for_growth(proc, preds, 0, 2, deadline_s=30)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, out + err
        assert "Traceback" not in out + err and "rerun the same command to resume" in err, out + err
        recorded = jsonl_ids(preds)
        assert 3 <= len(recorded) < len(synth.question_ids)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert manifest["status"] == "incomplete" and manifest["counts"]["recorded"] == len(recorded)
        srv.reset_stats()
        final = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert final.returncode == 0, final.stdout + final.stderr
        assert srv.calls == len(synth.question_ids) - len(recorded)  # no cache: only the rest was asked
    assert sorted(jsonl_ids(preds)) == sorted(synth.question_ids)


def test_sigterm_stops_evaluate_as_ctrl_c_and_leaves_no_temporary_file(tmp_path):
    """`evaluate` had no SIGTERM handler: a scheduler's stop killed it at once (exit -15) and left
    a staged ``scores/.lexical.jsonl.*.tmp`` behind. Now it ends as Ctrl-C does: exit 130, the
    judgments made so far kept, nothing half-written in scores/."""
    synth = make_dataset(tmp_path / "data", dialogues=1, sessions=3, questions_per_session=4, multi_party=False)
    runs = tmp_path / "runs"
    with MockOpenAIServer() as srv:
        common = ["--model", "openai:mock", "--base-url", srv.base_url, "--no-cache", "--quiet"]
        made = subprocess.run(
            [
                str(H2HMEM),
                "run",
                "--data",
                str(synth.root),
                "--method",
                "full-text",
                "--out",
                str(runs),
                "--run-id",
                "r",
                *common,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert made.returncode == 0, made.stdout + made.stderr
    run_dir = runs / "r"
    judged = run_dir / "scores" / "judge.jsonl"
    with MockOpenAIServer(latency_s=0.5) as judge:
        cmd = [
            str(H2HMEM), "evaluate", str(run_dir), "--metrics", "lexical,judge", "--judge-model", "openai:mock",
            "--judge-base-url", judge.base_url, "--judge-mode", "question", "--concurrency", "1", "--no-cache",
            "--quiet", "--bootstrap", "0",
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert _wait_for_growth(proc, judged, 0, 1, deadline_s=30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err and "rerun the same command to judge the rest" in err, out + err
    assert not list((run_dir / "scores").glob(".*.tmp")) and 2 <= _lines(judged) < len(synth.question_ids)
