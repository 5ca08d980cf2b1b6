"""SIGKILL during the other long steps: ``h2hmem caption`` and ``h2hmem evaluate --metrics judge``
(the installed console script, a child process) are killed once their output has started to
appear, then rerun. Every caption / judgment made before the kill is kept and not paid for again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from relkit import H2HMEM, cli, judge_aware, judged_run, make_dataset

from h2hmem.testing import Fault, MockOpenAIServer, Rule

pytestmark = pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")


def _kill_when(proc: subprocess.Popen, ready, deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=10)
            assert proc.returncode == -signal.SIGKILL, "the step ended before it could be killed"
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    raise AssertionError("no progress to kill at")


def _caption_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("caption/*.json"))


def test_caption_killed_midway_keeps_its_captions_and_redoes_only_the_rest(tmp_path):
    data = make_dataset(tmp_path / "data", dialogues=3, sessions=3, questions_per_session=1, multi_party=False)
    images = 3 * 3  # one 1.png per session, named by a turn (and by a session0 question: same image)
    caps = tmp_path / "caps"
    env_cache = {"H2HMEM_CACHE_DIR": str(tmp_path / "cache")}
    with MockOpenAIServer(latency_s=0.25) as srv:
        args = [
            "caption",
            str(data.root),
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--captions-dir",
            str(caps),
            "--concurrency",
            "2",
            "--no-cache",
            "--quiet",
        ]
        proc = subprocess.Popen(
            [str(H2HMEM), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env_cache}
        )
        _kill_when(proc, lambda: len(_caption_files(caps)) >= 2)
        before = {p: p.read_bytes() for p in _caption_files(caps)}
        assert 2 <= len(before) < images
        for content in before.values():  # written atomically: every file on disk is complete
            assert json.loads(content)["description"]["final_text"]
        srv.reset_stats()
        res = cli(*[a for a in args if a != "--no-cache"], env=env_cache)
    assert res.code == 0 and "Traceback" not in res.output, res.output
    after = _caption_files(caps)
    assert len(after) == images
    assert all(p.read_bytes() == c for p, c in before.items())  # kept, not redone
    assert srv.calls <= images - len(before)


def test_judge_killed_midway_keeps_its_judgments_and_judges_only_the_rest(tmp_path):
    data = make_dataset(tmp_path / "data", dialogues=3, sessions=2, questions_per_session=2, multi_party=False)
    run = judged_run(data, tmp_path)
    judge_file = run / "scores" / "judge.jsonl"
    with MockOpenAIServer(latency_s=0.3, responder=judge_aware) as srv:
        args = [
            "evaluate",
            str(run),
            "--metrics",
            "judge",
            "--judge-model",
            "openai:mock",
            "--judge-base-url",
            srv.base_url,
            "--data",
            str(data.root),
            "--no-cache",
            "--bootstrap",
            "0",
            "--quiet",
            "--concurrency",
            "1",
        ]
        proc = subprocess.Popen([str(H2HMEM), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _kill_when(proc, lambda: judge_file.exists() and judge_file.read_bytes().count(b"\n") >= 3)
        done = {json.loads(l)["question_id"] for l in judge_file.read_text().splitlines() if l.strip()}
        n = len(data.question_ids)
        assert 3 <= len(done) < n
        srv.reset_stats()
        res = cli(*args)
    assert res.code == 0 and "Traceback" not in res.output, res.output
    judged_again = {
        qid for body in srv.requests for qid in data.question_ids if _question_text(data, qid) in json.dumps(body)
    }
    assert not judged_again & done  # nothing judged before the kill is asked again
    summary = json.loads((run / "scores" / "summary.json").read_text())
    assert summary["metrics"]["judge"]["coverage"] == {
        "judged": n,
        "total": n,
        "errors": 0,
        "failed_answers": 1,
        "reasons": {},
    }
    lines = [json.loads(l)["question_id"] for l in judge_file.read_text().splitlines() if l.strip()]
    assert sorted(lines) == sorted(data.question_ids)  # compacted: one judgment per question


def _question_text(data, qid: str) -> str:
    from h2hmem.data import load_dataset

    return next(q.text for q in load_dataset(data.root).questions if q.id == qid)


def test_caption_cli_shows_the_whole_failure_reason(tmp_path):
    data = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    with MockOpenAIServer(script=[Rule(Fault.finish("content_filter"))]) as srv:
        res = cli(
            "caption",
            data.root,
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--captions-dir",
            tmp_path / "caps",
            "--quiet",
            env={"H2HMEM_CACHE_DIR": str(tmp_path / "cache")},
        )
    assert res.code == 1
    assert "[request: model 'mock'" in res.output, res.output


def test_amem_build_killed_midway_resumes_from_its_saved_notes(tmp_path):
    """A-Mem saves its note store (atomically) after every turn: a run killed twice while building
    resumes from the saved notes, so with the request cache the note writer is asked about each
    turn about once, not once per attempt."""
    data = make_dataset(tmp_path / "data", dialogues=2, sessions=3, questions_per_session=1, multi_party=False)
    turns = 2 * 3 * 4
    notes = tmp_path / "runs" / "amem" / "state"
    with MockOpenAIServer(latency_s=0.05) as srv:
        cmd = [
            str(H2HMEM),
            "run",
            "--data",
            str(data.root),
            "--method",
            "a-mem",
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--embedder",
            "openai:mock",
            "--cache-path",
            str(tmp_path / "c.sqlite"),
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "amem",
            "--quiet",
        ]
        env = {**os.environ, "OPENAI_BASE_URL": srv.base_url}  # the embedder's endpoint
        note_files = lambda: list(notes.rglob("amem_notes.json")) if notes.exists() else []  # noqa: E731

        def saved_notes() -> int:
            total = 0
            for f in note_files():
                try:
                    total += len(json.loads(f.read_text())["notes"])
                except (ValueError, OSError):
                    pass
            return total

        for threshold in (3, 12):
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            _kill_when(proc, lambda: saved_notes() >= threshold, deadline_s=60)  # noqa: B023 — used at once
            assert saved_notes() < turns
        final = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert final.returncode == 0, final.stdout + final.stderr
    preds = [json.loads(l) for l in (tmp_path / "runs" / "amem" / "predictions.jsonl").read_text().splitlines()]
    assert sorted(p["question_id"] for p in preds) == sorted(data.question_ids)
    assert not any(p["error"] for p in preds)
    assert saved_notes() == turns
    analysed = [
        b
        for b in srv.requests
        if str(b.get("messages", [{}])[-1].get("content", "")).startswith(
            ("Analyse one conversation turn", "Generate a structured analysis")
        )
    ]  # either preset
    # each turn once, plus at most the turns in flight at the two kills (one per dialogue being built)
    assert turns <= len(analysed) <= turns + 2 * 2
