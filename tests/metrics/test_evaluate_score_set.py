"""`evaluate` writes its score files as a set, and two evaluations of one run never both pay the judge.

A write that fails at any file of the set (a full disk, injected as a temporary file on
``/dev/full``, which fails every write with ENOSPC) leaves ``scores/`` byte for byte as the previous
evaluation left it, apart from the judgments appended to ``judge.jsonl`` meanwhile; the error is a
``LocalIOError`` naming the file, and the same call then completes without paying the judge again.
Before: each file was replaced on its own, so a full disk left a new ``lexical.jsonl`` beside no
evidence file and the previous summary.

A second evaluation while one holds the run's scores lock refuses at once (naming the holder)
without a judge call. Before: both judged every question (59 paid calls for a 30-question run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from h2hmem import LocalIOError, _atomic
from h2hmem.data import load_dataset
from h2hmem.llm import load_chat_model
from h2hmem.memory import Evidence
from h2hmem.metrics import EvaluationConflictError, evaluate_run
from h2hmem.records import Prediction
from h2hmem.testing import MockOpenAIServer

from .judge_helpers import ScriptedJudge

H2HMEM = Path(sys.executable).parent / "h2hmem"


def _pred(q, answer: str | None, error: str | None = None) -> Prediction:
    return Prediction(
        question_id=q.id,
        split=q.split,
        dialogue=q.dialogue,
        session=q.session,
        task_type=q.task_type.abbr,
        main_category=q.main_category.value,
        difficulty=q.difficulty,
        question=q.text,
        gold=q.gold,
        answer=answer,
        error=error,
        evidence=[Evidence(session=q.answer_sessions[0])] if q.answer_sessions else [],
        method="full-text",
    )


@pytest.fixture()
def run(tmp_path, sample_root):
    """A run of 24 sample questions (every 4th a failed answer); the sample's turn labels apply."""
    qs = sorted(load_dataset(sample_root).questions, key=lambda q: q.id)[:24]
    preds = [_pred(q, None, "RuntimeError: boom") if i % 4 == 0 else _pred(q, q.gold) for i, q in enumerate(qs)]
    d = tmp_path / "run"
    d.mkdir()
    (d / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in preds))
    (d / "manifest.json").write_text(
        json.dumps({"method": "full-text", "model": "openai:x", "data_root": str(sample_root), "split": "all"})
    )
    return d, preds


def _files(scores: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(scores.iterdir()) if p.name != ".lock"}


def _sessions(preds: list[Prediction]) -> int:
    """Judge calls of one evaluation in the official session batching, worked out by hand: one per
    (dialogue, session) holding an answered question (every scripted reply is valid: no re-asks)."""
    return len({(p.split, p.dialogue, p.session) for p in preds if not p.failed})


def _on_dev_full(site: str):
    """``_atomic._mkstemp`` whose temporary file for ``scores/<site>`` writes to /dev/full."""
    real = _atomic._mkstemp

    def mkstemp(dest: Path):
        fd, tmp = real(dest)
        if dest.name == site:
            full = os.open("/dev/full", os.O_WRONLY)
            os.dup2(full, fd)
            os.close(full)
        return fd, tmp

    return mkstemp


SITES = [
    "lexical.jsonl",
    "evidence.jsonl",
    "turn_evidence.jsonl",
    "turn_evidence.info.json",
    "judge.jsonl",
    "summary.json",
]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.filterwarnings("ignore::h2hmem.records.DuplicatePredictionsWarning")  # the replaced answer
@pytest.mark.parametrize("site", SITES)
def test_a_full_disk_at_any_score_file_leaves_the_previous_set_and_the_rerun_pays_nothing_again(run, monkeypatch, site):
    d, preds = run
    scores = d / "scores"
    first = ScriptedJudge()
    evaluate_run(d, ["lexical", "evidence", "judge"], judge_model=first.model, n_boot=0)
    assert len(first.model.requests) == _sessions(preds)
    before = _files(scores)
    assert set(SITES) <= set(before)

    # one answer changes (a rerun replaced it): every file of the set would change
    changed = preds[1].model_copy(update={"answer": "a different answer"})
    with (d / "predictions.jsonl").open("a") as f:
        f.write(changed.model_dump_json() + "\n")

    monkeypatch.setattr(_atomic, "_mkstemp", _on_dev_full(site))
    second = ScriptedJudge()
    with pytest.raises(LocalIOError) as info:
        evaluate_run(d, ["lexical", "evidence", "judge"], judge_model=second.model, n_boot=0)
    assert str(info.value) == (
        f"local I/O error: {scores / site}: [Errno 28] No space left on device; free space and rerun to resume"
    )
    after = _files(scores)
    assert sorted(after) == sorted(before)  # no temporary file is left behind
    judged = site in ("judge.jsonl", "summary.json")  # the scorers run in order: lexical, …, judge
    for name in before:
        if name == "judge.jsonl":  # only the judgment of the changed answer, when the judge ran
            assert after[name].startswith(before[name])
            appended = [json.loads(x) for x in after[name][len(before[name]) :].decode().splitlines()]
            assert [r["question_id"] for r in appended] == ([changed.question_id] if judged else [])
        else:
            assert after[name] == before[name], name
    assert len(second.model.requests) == (1 if judged else 0)  # the changed answer's session

    monkeypatch.undo()
    third = ScriptedJudge()
    summary = evaluate_run(d, ["lexical", "evidence", "judge"], judge_model=third.model, n_boot=0)
    # the changed answer is paid for once over both passes: a judgment appended by the stopped pass is reused
    assert len(second.model.requests) + len(third.model.requests) == 1
    judged = [json.loads(x) for x in (scores / "judge.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in judged] == [p.question_id for p in preds]  # compacted, in order
    assert summary["metrics"]["judge"]["coverage"]["judged"] == len(preds)
    lexical = {json.loads(x)["question_id"]: json.loads(x) for x in (scores / "lexical.jsonl").read_text().splitlines()}
    assert lexical[changed.question_id]["exact_match"] == 0.0  # the new answer, not the gold one
    assert not any(p.name.endswith(".tmp") for p in scores.iterdir())


def test_a_stopped_refresh_pass_keeps_the_previous_judgments(run, monkeypatch):
    """``--refresh-judge`` no longer deletes ``judge.jsonl`` before judging: a pass stopped by a
    full disk leaves the previous judgments readable (the new ones appended after them)."""
    d, preds = run
    evaluate_run(d, ["lexical", "judge"], judge_model=ScriptedJudge().model, n_boot=0)
    before = (d / "scores" / "judge.jsonl").read_bytes()
    summary_before = (d / "scores" / "summary.json").read_bytes()
    monkeypatch.setattr(_atomic, "_mkstemp", _on_dev_full("judge.jsonl"))
    with pytest.raises(LocalIOError):
        evaluate_run(d, ["lexical", "judge"], judge_model=ScriptedJudge().model, n_boot=0, refresh=True)
    after = (d / "scores" / "judge.jsonl").read_bytes()
    assert after.startswith(before) and len(after.splitlines()) == 2 * len(preds)
    assert (d / "scores" / "summary.json").read_bytes() == summary_before


class _GatedJudge(ScriptedJudge):
    """A scripted judge whose first reply waits until ``release`` is set (so a second evaluation
    surely starts while this one holds the lock)."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()
        chat = self.model.chat

        async def gated(messages, config=None, *, stage="answer"):
            self.started.set()
            assert self.release.wait(30), "the second evaluation never ended"
            return await chat(messages, config, stage=stage)

        self.model.chat = gated  # type: ignore[method-assign]


def test_two_evaluations_at_once_pay_the_judge_once(run):
    """In one process, two threads (a notebook and a script alike): the second refuses at once,
    naming the first, before any judge call; the first completes."""
    d, preds = run
    first, second = _GatedJudge(), ScriptedJudge()
    result: dict = {}

    def evaluate_first():
        try:
            result["summary"] = evaluate_run(d, ["lexical", "judge"], judge_model=first.model, n_boot=0)
        except BaseException as e:  # reported by the assertion below
            result["error"] = e

    t = threading.Thread(target=evaluate_first)
    t.start()
    try:
        assert first.started.wait(30)
        with pytest.raises(EvaluationConflictError, match=r"is being written by another evaluation \(pid \d+, "):
            evaluate_run(d, ["lexical", "judge"], judge_model=second.model, n_boot=0)
    finally:
        first.release.set()
        t.join(60)
    assert "error" not in result, result.get("error")
    assert second.model.requests == []
    assert len(first.model.requests) == _sessions(preds)
    assert result["summary"]["metrics"]["judge"]["coverage"]["judged"] == len(preds)


@pytest.mark.skipif(not H2HMEM.exists(), reason=f"console script {H2HMEM} not installed")
@pytest.mark.timeout(180)
def test_two_evaluate_commands_at_once_pay_the_judge_once(run):
    """The issue's reproduction: two ``h2hmem evaluate --metrics judge`` processes on one run
    against a judge server that counts its calls. The judge's first reply is held back until one
    process has exited, so the two surely overlap: that one refuses with exit code 2 and a line
    naming the other; the other judges; the server is paid one evaluation's calls (before: two)."""
    d, preds = run
    judge, gate = ScriptedJudge(), threading.Event()

    def responder(body):
        assert gate.wait(60)
        return judge(body)

    with MockOpenAIServer(responder=responder) as srv:
        args = [
            str(H2HMEM), "evaluate", str(d), "--metrics", "lexical,judge", "--judge-model", "openai:gpt-4o-mini",
            "--judge-base-url", srv.base_url, "--no-cache", "--quiet", "--bootstrap", "0",
        ]  # fmt: skip
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "COLUMNS": "200", "NO_COLOR": "1"}
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        deadline = time.monotonic() + 120
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        gate.set()
        outs = [p.communicate(timeout=120)[0] for p in procs]
        codes = [p.returncode for p in procs]
        calls = srv.calls
    refused = codes.index(2)
    assert sorted(codes) == [0, 2], outs
    assert "is being written by another evaluation (pid " in outs[refused]
    assert "h2hmem evaluate (judge, lexical) since " in outs[refused]
    assert "Traceback" not in outs[refused]
    assert calls == _sessions(preds)  # one evaluation's calls


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_at_the_judge_transcripts_names_that_file_and_keeps_the_scores(run, monkeypatch):
    """The judge's transcript file (RUN/transcripts-judge.jsonl.gz) on a full disk: the error is a
    LocalIOError naming it (before: a bare OSError, which the CLI blamed on RUN/scores), and the
    previous score set is untouched."""
    from h2hmem.records import _transcripts

    d, preds = run
    evaluate_run(d, ["lexical", "judge"], judge_model=ScriptedJudge().model, n_boot=0)
    before = _files(d / "scores")
    real_open = _transcripts.TranscriptWriter.open

    def open_on_dev_full(self):
        real_open(self)
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, self._fh.fileno())
        os.close(full)
        return self

    monkeypatch.setattr(_transcripts.TranscriptWriter, "open", open_on_dev_full)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with MockOpenAIServer(responder=ScriptedJudge()) as srv, pytest.raises(LocalIOError) as info:
        # a real client (the scripted in-process model records no transcripts)
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        evaluate_run(d, ["lexical", "judge"], judge_model=model, n_boot=0, refresh=True)
    assert str(info.value).startswith(f"local I/O error: {d / 'transcripts-judge.jsonl.gz'}: [Errno 28] No space left")
    after = _files(d / "scores")
    assert after["summary.json"] == before["summary.json"] and after["lexical.jsonl"] == before["lexical.jsonl"]


def test_an_evaluation_of_a_subset_keeps_the_other_questions_judgments(run):
    """`evaluate --task-type X` (lexical only, or with the judge): every scores file and the summary
    cover the selection, and the current judgments of the other questions are kept in
    judge.kept.jsonl, so the next full evaluation pays nothing (before: judge.jsonl kept only the
    selection's lines; 54 of 60 judgments were lost in a trial, paid again after)."""
    from h2hmem.run import Selection

    d, preds = run
    scores = d / "scores"
    evaluate_run(d, ["lexical", "judge"], judge_model=ScriptedJudge().model, n_boot=0)
    before = {r["question_id"]: r for r in map(json.loads, (scores / "judge.jsonl").read_text().splitlines())}
    assert len(before) == len(preds)
    types = sorted({p.task_type for p in preds})
    subset = Selection(task_types=[types[0]])
    inside = [p.question_id for p in preds if p.task_type == types[0]]
    outside = [p.question_id for p in preds if p.task_type != types[0]]
    assert inside and outside

    def lines(name):
        return [json.loads(x) for x in (scores / name).read_text().splitlines()]

    summary = evaluate_run(d, ["lexical"], n_boot=0, selection=subset)  # the judge not asked for
    assert summary["run"]["n_predictions"] == len(inside)
    assert [r["question_id"] for r in lines("judge.jsonl")] == inside  # as the summary and lexical.jsonl
    assert [r["question_id"] for r in lines("lexical.jsonl")] == inside
    assert lines("judge.kept.jsonl") == [before[q] for q in outside]

    second = ScriptedJudge()
    evaluate_run(d, ["lexical", "judge"], judge_model=second.model, n_boot=0, selection=subset)
    assert second.model.requests == []  # the subset was judged already

    third = ScriptedJudge()
    full = evaluate_run(d, ["lexical", "judge"], judge_model=third.model, n_boot=0)
    assert third.model.requests == [] and full["metrics"]["judge"]["stale"] is None
    assert full["metrics"]["judge"]["coverage"]["judged"] == len(preds)
    assert lines("judge.jsonl") == [before[p.question_id] for p in preds]


def test_a_subset_rejudged_by_another_judge_leaves_no_mixed_file(run):
    """`--refresh-judge` with another judge on a subset: judge.jsonl holds that judge's lines alone; the
    first judge's judgments of the others stay aside and are not taken for the second judge's, whose
    full pass then judges exactly the others (no refusal of a file mixing two judges)."""
    from h2hmem.run import Selection

    d, preds = run
    evaluate_run(d, ["judge"], judge_model=ScriptedJudge(spec="fake:judge-a").model, n_boot=0)
    types = sorted({p.task_type for p in preds})
    subset = Selection(task_types=[types[0]])
    b = ScriptedJudge(spec="fake:judge-b")
    evaluate_run(d, ["judge"], judge_model=b.model, n_boot=0, selection=subset, refresh=True)
    judged = [json.loads(x) for x in (d / "scores" / "judge.jsonl").read_text().splitlines()]
    assert {r["judge_model"] for r in judged} == {"fake:judge-b"}
    full_b = ScriptedJudge(spec="fake:judge-b")
    summary = evaluate_run(d, ["judge"], judge_model=full_b.model, n_boot=0)
    # one call per session holding an answered question outside the subset (session batching), worked out by hand
    others = {(p.dialogue, p.session) for p in preds if p.task_type != types[0] and not p.failed}
    assert others and len(full_b.model.requests) == len(others)
    assert summary["metrics"]["judge"]["model"] == "fake:judge-b"
    assert summary["metrics"]["judge"]["coverage"]["judged"] == len(preds)


def test_a_subset_evaluation_does_not_need_the_other_questions_in_the_dataset(run, monkeypatch):
    """The other questions' gold is read from the dataset only to keep their judgments current; a
    prediction the dataset lacks outside the selection does not stop the evaluation of the selection.
    The selection and the others are joined from one read of the dataset (it was read twice)."""
    from h2hmem.metrics import _evaluate
    from h2hmem.run import Selection

    reads: list[object] = []
    real_load = _evaluate.load_dataset
    monkeypatch.setattr(_evaluate, "load_dataset", lambda *a, **k: reads.append(a) or real_load(*a, **k))

    d, preds = run
    other = next(p for p in preds if p.task_type != preds[0].task_type)  # outside the selection below
    stray = other.model_copy(update={"question_id": other.question_id.rsplit("/", 2)[0] + "/session77/q4"})
    with (d / "predictions.jsonl").open("a") as f:
        f.write(stray.model_dump_json() + "\n")
    subset = Selection(task_types=[preds[0].task_type])
    summary = evaluate_run(d, ["lexical"], n_boot=0, selection=subset)
    assert summary["run"]["n_predictions"] == sum(p.task_type == preds[0].task_type for p in preds)
    assert len(reads) == 1
