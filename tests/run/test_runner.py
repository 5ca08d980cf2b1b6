"""Runner: one record per question, resume, torn-line repair, retry-failed, protocols, manifest."""

import json
import stat

import pytest
from fakes import RecorderMemory, fake_chat

from h2hmem.data import load_dataset
from h2hmem.records import RunStore, read_predictions
from h2hmem.run import RunConfig, RunConflictError, run_benchmark


def _config(sample_root, tmp_path, **kw):
    base = dict(
        data_root=sample_root, split="multi-party", method="full-text", out_dir=tmp_path / "runs", use_cache=False
    )
    base.update(kw)
    return RunConfig(**base)


def test_full_text_answers_every_question_once(sample_root, tmp_path):
    chat = fake_chat()
    cfg = _config(sample_root, tmp_path)
    summary = run_benchmark(cfg, chat_model=chat, progress=False)
    preds = read_predictions(summary.run_dir)
    expected = {q.id for q in load_dataset(sample_root, "multi-party").questions}
    assert len(expected) == 152
    assert {p.question_id for p in preds} == expected
    assert summary.answered_now == 152 and summary.failed == 0 and chat.calls == 152
    lines = (summary.run_dir / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 152
    # the manifest (written through a temporary file and a rename) has the mode of predictions.jsonl
    modes = {f: stat.S_IMODE((summary.run_dir / f).stat().st_mode) for f in ("manifest.json", "predictions.jsonl")}
    assert modes["manifest.json"] == modes["predictions.jsonl"], modes
    m = json.loads((summary.run_dir / "manifest.json").read_text())
    assert m["method"] == "full-text" and m["protocol"] == "full" and len(m["dataset_fingerprint"]) == 64
    assert m["counts"]["recorded"] == 152 and m["status"] == "complete"
    assert m["prompt_hashes"]["answer"] and m["prompt_hashes"]["paper/full_text"]
    # default preset paper: every resolved option recorded (head truncation at 4,096 cl100k tokens)
    assert m["config"]["preset"] == "paper" and m["identity"]["preset"] == "paper"
    options = m["components"]["memory"]["options"]
    assert options["truncation"] == "head" and options["max_context_tokens"] == 4096 and options["top_p"] == 0.9
    assert "options" not in m["method_description"]
    assert m["usage"]["answer"]["calls"] == 152
    assert m["timing"]["sessions_observed"] == 6 and m["timing"]["memory_build_s"] >= 0
    # questions about absent sessions are still answered, with the memory that exists
    absent = [p for p in preds if p.details["answer_sessions"] and p.details["answer_sessions"][0] in ("session2",)]
    assert absent and all(p.answer and p.error is None for p in absent)
    # full-text reports the sessions it showed as evidence; dialogue2 has no session.json at all
    assert all(p.evidence for p in preds if p.dialogue != "dialogue2")
    assert not any(p.evidence for p in preds if p.dialogue == "dialogue2")

    # rerun: resumes, nothing asked again
    again = run_benchmark(cfg, chat_model=chat, progress=False)
    assert again.answered_now == 0 and again.skipped == 152 and chat.calls == 152
    m = json.loads((summary.run_dir / "manifest.json").read_text())
    assert m["resumes"] == 1 and m["invocations"][1]["settings_changed"] == {}
    # a resume with other settings outside the identity: the run's config stays the first one's,
    # and the resume's invocation names what it changed
    run_benchmark(cfg.replace(concurrency=3, timeout_s=9.0), chat_model=chat, progress=False)
    m = json.loads((summary.run_dir / "manifest.json").read_text())
    assert m["resumes"] == 2 and m["config"]["concurrency"] == cfg.execution.concurrency != 3
    assert m["invocations"][2]["settings_changed"] == {"concurrency": 3, "timeout_s": 9.0}
    assert m["invocations"][0]["settings_changed"] == {}


def test_torn_line_is_repaired_and_question_redone(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, limit=10)
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    path = cfg.run_dir / "predictions.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    torn_id = json.loads(lines[-1])["question_id"]
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # crash mid-write
    chat = fake_chat()
    s = run_benchmark(cfg, chat_model=chat, progress=False)
    assert s.answered_now == 1 and chat.calls == 1
    preds = read_predictions(cfg.run_dir)
    assert len(preds) == 10 and torn_id in {p.question_id for p in preds}
    assert len(path.read_text().splitlines()) == 10
    assert json.loads((cfg.run_dir / "manifest.json").read_text())["repairs"][0]["torn_bytes_removed"] > 0


def test_failures_are_recorded_and_retry_failed_redoes_only_them(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, limit=20)
    s = run_benchmark(cfg, chat_model=fake_chat(fail_on="?"), progress=False)
    preds = read_predictions(cfg.run_dir)
    failed = [p for p in preds if p.failed]
    assert len(preds) == 20 and failed and s.failed == len(failed)
    assert all(p.answer is None and "scripted failure" in p.error for p in failed)
    # a plain resume does not redo them
    chat = fake_chat()
    assert run_benchmark(cfg, chat_model=chat, progress=False).answered_now == 0 and chat.calls == 0
    # --retry-failed redoes exactly the failed ones
    s2 = run_benchmark(cfg.model_copy(update={"retry_failed": True}), chat_model=chat, progress=False)
    assert s2.answered_now == len(failed) and chat.calls == len(failed) and s2.failed == 0
    assert all(not p.failed for p in read_predictions(cfg.run_dir))


def test_online_protocol_answers_after_each_session(sample_root, tmp_path):
    RecorderMemory.log.clear()
    cfg = _config(sample_root, tmp_path, method="fakes:RecorderMemory", protocol="online")
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    log = [l for l in RecorderMemory.log if "dialogue4" in l]
    d4 = next(d for d in load_dataset(sample_root, "multi-party").dialogues if d.name == "dialogue4")
    home = {q.text: q.session for q in d4.questions}  # the memory logs the text: it never sees the session

    def first_answer(session):
        return log.index(next(l for l in log if l.startswith("answer") and home.get(l.split(": ", 1)[1]) == session))

    first_s2_answer = first_answer("session2")
    assert "observe multi-party/dialogue4/session2" in log[:first_s2_answer]
    assert "observe multi-party/dialogue4/session3" not in log[:first_s2_answer]
    # session0 questions come after every session was observed
    first_pool = first_answer("session0")
    assert "observe multi-party/dialogue4/session5" in log[:first_pool]


def test_full_protocol_observes_everything_first(sample_root, tmp_path):
    RecorderMemory.log.clear()
    cfg = _config(sample_root, tmp_path, method="fakes:RecorderMemory", split="dyadic", limit=30)
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    preds = read_predictions(cfg.run_dir)
    assert {p.answer for p in preds if p.dialogue == "dialogue5"} == {"seen 14"}


def test_a_build_that_never_suspends_lets_other_tasks_run_between_sessions(sample_root, tmp_path):
    # RecorderMemory.observe never awaits anything (like an index over cached embeddings): without
    # a yield per session, one dialogue's whole build would run before any other task — the replies
    # in flight and the questions of dialogues already built would wait for it
    RecorderMemory.log.clear()
    cfg = _config(sample_root, tmp_path, method="fakes:RecorderMemory")
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    log = RecorderMemory.log
    observed = [line.split()[1].rsplit("/", 1)[0] for line in log if line.startswith("observe")]
    # build turns (run/_build_order.py): CPU-only builds run one dialogue after another, in order,
    # so the first dialogue's questions go out after its own build, not after four
    order = list(dict.fromkeys(observed))
    assert order == [f"multi-party/dialogue{i}" for i in range(1, len(order) + 1)]
    assert observed == sorted(observed, key=order.index)
    # and between two sessions of dialogue 2's build, dialogue 1's questions are answered
    d2 = [i for i, line in enumerate(log) if line.startswith("observe multi-party/dialogue2/")]
    assert any(line.startswith("answer multi-party/dialogue1:") for line in log[d2[0] : d2[-1]])


def test_builds_that_wait_on_io_still_overlap(sample_root, tmp_path):
    # a build step that really waits (a note writer's model call) passes the turn on at once:
    # the next dialogue starts building while the first one waits
    RecorderMemory.log.clear()
    cfg = _config(sample_root, tmp_path, method="fakes:WaitingRecorderMemory")
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    observed = [line.split()[1] for line in RecorderMemory.log if line.startswith("observe")]
    d1 = [i for i, o in enumerate(observed) if o.startswith("multi-party/dialogue1/")]
    d2 = [i for i, o in enumerate(observed) if o.startswith("multi-party/dialogue2/")]
    assert d2[0] < d1[-1]  # dialogue 2 began before dialogue 1 was built
    assert len(set(o.rsplit("/", 1)[0] for o in observed[:4])) == 4  # four side by side, as before turns


def test_conflicting_settings_refused(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, limit=3, run_id="fixed")
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    with pytest.raises(RunConflictError, match="other settings"):
        run_benchmark(cfg.model_copy(update={"method": "naive-rag"}), chat_model=fake_chat(), progress=False)


def test_store_repair_keeps_complete_record_without_newline(tmp_path):
    store = RunStore(tmp_path)
    (tmp_path / "predictions.jsonl").write_text('{"a": 1}\n')
    assert store.repair() == 0


def test_unknown_method_parameter_refused_before_any_work(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, method_params={"top_k": 3})  # full-text has no top-k
    with pytest.raises(ValueError, match="'full-text' has no option top_k; its options: layout, prompt, truncation"):
        run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert not (cfg.run_dir / "predictions.jsonl").exists()


def test_invalid_unicode_from_a_plugin_is_replaced_and_flagged(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, method="fakes:SurrogateMemory", limit=2)
    summary = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    recs = [json.loads(l) for l in (summary.run_dir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["answer"] for r in recs] == ["caf\ufffd", "caf\ufffd"]
    assert all(r["details"]["invalid_unicode"] == ["answer"] for r in recs)


def test_default_run_id_separates_settings_that_change_answers(sample_root, tmp_path):
    base = _config(sample_root, tmp_path, method="naive-rag")
    assert base.default_run_id() == "naive-rag_local-smollm2_multi-party_full"
    k3 = base.model_copy(update={"method_params": {"top_k": 3}})
    k3_again = base.model_copy(update={"method_params": {"top_k": 3}})
    cold = base.model_copy(update={"answer_temperature": 0.0})
    ids = {base.default_run_id(), k3.default_run_id(), cold.default_run_id()}
    assert len(ids) == 3 and k3.default_run_id() == k3_again.default_run_id()
    assert k3.default_run_id().startswith("naive-rag_local-smollm2_multi-party_full_h")


def test_bad_parameter_value_stops_the_run_before_any_work(sample_root, tmp_path):
    from h2hmem.run import MethodSetupError

    cfg = _config(sample_root, tmp_path, method="naive-rag", method_params={"top_k": 0})
    with pytest.raises(MethodSetupError, match="method 'naive-rag' option top_k: expected int >= 1, got 0"):
        run_benchmark(cfg, chat_model=fake_chat(), embedder=object(), progress=False)
    assert not (cfg.run_dir / "predictions.jsonl").exists() and not (cfg.run_dir / "manifest.json").exists()


def test_unknown_embedder_refused_up_front(sample_root, tmp_path):
    cfg = _config(sample_root, tmp_path, method="naive-rag", embedder="bogus")
    with pytest.raises(ValueError, match="unknown embedder spec 'bogus'"):
        run_benchmark(cfg, chat_model=fake_chat(), progress=False)


def test_runner_tallies_each_questions_calls_itself(sample_root, tmp_path):
    # the Answer carries no usage: the runner adds up the calls made while the question was answered
    chat = fake_chat()
    cfg = _config(sample_root, tmp_path, method="fakes:TwoCallMemory", limit=3)
    summary = run_benchmark(cfg, chat_model=chat, progress=False)
    preds = read_predictions(summary.run_dir)
    answer_calls = [r for r in chat.requests if r.stage == "answer"]
    assert len(preds) == 3 and len(answer_calls) == 6
    for p in preds:
        mine = [r for r in answer_calls if r.question and p.question.startswith(r.question)]
        assert len(mine) == 2  # draft and answer; no build call is charged to a question
        assert p.usage.calls == 2 and p.usage.completion_tokens == 2 * 3
        assert p.usage.prompt_tokens == sum(len(r.user_text) // 4 for r in mine)
        assert p.cached is False
    m = json.loads((summary.run_dir / "manifest.json").read_text())
    assert m["usage"]["answer"]["calls"] == 6 and m["usage"]["memory_build"]["calls"] >= 1


def test_a_recorded_question_the_dataset_lacks_is_refused_on_resume(sample_root, tmp_path):
    # kept before: the resume exited 0, and every evaluate then failed on that line
    cfg = _config(sample_root, tmp_path, limit=3)
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    path = cfg.run_dir / "predictions.jsonl"
    lines = path.read_text().splitlines()
    stray = json.loads(lines[0])
    stray["question_id"] = "multi-party/dialogue9/session1/q0"
    path.write_text("\n".join([*lines, json.dumps(stray)]) + "\n")
    chat = fake_chat()
    with pytest.raises(
        ValueError, match=r"1 record\(s\) name a question that is not in the dataset .*dialogue9/session1/q0"
    ):
        run_benchmark(cfg, chat_model=chat, progress=False)
    assert chat.calls == 0
