"""evaluate_run on the real sample: scores files, summary, judge caching and re-judging."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from h2hmem.data import load_dataset
from h2hmem.llm import load_chat_model
from h2hmem.memory import Evidence
from h2hmem.metrics import NOT_COMPARABLE, evaluate_run, normalize_answer, summary_tables
from h2hmem.records import Prediction
from h2hmem.testing import MockOpenAIServer, ScriptedChatModel


def _grade(req) -> str:
    """Per item: 1 when the answer is the reference, 0.5 for "No", else 0."""
    out = []
    for item in req.items(user_message=0):
        if "id" in item:
            ans, ref = item["Assistant's answer"], item["Reference answer"]
            out.append(
                {"question_id": item["id"], "score": 1 if ans == ref else (0.5 if ans == "No" else 0), "reasoning": "r"}
            )
    return json.dumps({"judgments": out})


def judge_model(spec: str = "fake:judge") -> ScriptedChatModel:
    return ScriptedChatModel([_grade], spec=spec)


def _answer(i, q):
    return [None, q.gold, "No", "I don't know.", "I don't know."][i % 5]


@pytest.fixture()
def run(tmp_path, sample_root):
    qs = sorted(load_dataset(sample_root).questions, key=lambda q: q.id)
    lines = []
    for i, q in enumerate(qs):
        ev = [] if q.is_cross_session else [Evidence(session=q.answer_sessions[0] if i % 2 == 0 else "session999")]
        p = Prediction(
            question_id=q.id,
            split=q.split,
            dialogue=q.dialogue,
            session=q.session,
            task_type=q.task_type.abbr,
            main_category=q.main_category.value,
            difficulty=q.difficulty,
            question=q.text,
            gold="TAMPERED" if i == 1 else q.gold,
            answer=_answer(i, q),
            error="RuntimeError: boom" if i % 5 == 0 else None,
            evidence=ev,
            method="SecretMethod",
            details={"answer_sessions": list(q.answer_sessions)},
        )
        lines.append(p.model_dump_json())
    d = tmp_path / "run"
    d.mkdir()
    (d / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    (d / "manifest.json").write_text(
        json.dumps({"method": "full_text", "model": "openai:x", "data_root": str(sample_root), "split": "all"})
    )
    return d, qs


def test_lexical_and_evidence(run):
    d, qs = run
    summary = evaluate_run(d, n_boot=200)
    n = len(qs)
    lex = [json.loads(x) for x in (d / "scores" / "lexical.jsonl").read_text().splitlines()]
    assert len(lex) == n
    assert set(lex[0]) == {
        "schema",
        "question_id",
        "split",
        "task_type",
        "main_category",
        "difficulty",
        "dialogue",
        "precision",
        "recall",
        "f1",
        "bleu1",
        "exact_match",
        "failed",
        "prediction_hash",
    }
    by = {r["question_id"]: r for r in lex}
    assert by[qs[0].id]["failed"] and by[qs[0].id]["f1"] == 0.0 and by[qs[0].id]["bleu1"] == 0.0
    # qs[1]: answer = gold; its record's gold was tampered but the dataset's gold is used
    assert by[qs[1].id]["exact_match"] == 1.0 and by[qs[1].id]["bleu1"] == pytest.approx(1.0)
    assert summary["run"]["gold_mismatches"] == 1 and summary["run"]["gold_source"] == "dataset"
    assert summary["run"]["failed"] == sum(1 for i in range(n) if i % 5 == 0)
    assert summary["run"]["method"] == "full_text"

    em_expected = (
        sum(
            1
            for i, q in enumerate(qs)
            if i % 5 == 1
            or (i % 5 == 2 and normalize_answer(q.gold) == "no")
            or (i % 5 in (3, 4) and normalize_answer(q.gold) == "i dont know")
        )
        / n
    )
    overall = summary["metrics"]["lexical"]["aggregate"]["splits"]["all"]["overall"]
    assert overall["n_total"] == n and overall["failed"] == summary["run"]["failed"]
    assert overall["metrics"]["exact_match"]["mean"] == pytest.approx(em_expected)
    dy = summary["metrics"]["lexical"]["aggregate"]["splits"]["dyadic"]["overall"]["n_total"]
    mp = summary["metrics"]["lexical"]["aggregate"]["splits"]["multi-party"]["overall"]["n_total"]
    assert dy + mp == n and dy == sum(q.split == "dyadic" for q in qs)

    ev = summary["metrics"]["evidence"]
    absent = {
        (dl.split, dl.name, s.name)
        for dl in load_dataset(summary["run"]["data_root"]).dialogues
        for s in dl.sessions
        if s.absent
    }
    gone = [
        q for q in qs if not q.is_cross_session and all((q.split, q.dialogue, s) in absent for s in q.answer_sessions)
    ]
    included = [(i, q) for i, q in enumerate(qs) if not q.is_cross_session and q not in gone]
    assert gone  # the sample misses sessions: their questions are excluded with their own reason, not scored 0
    assert ev["status"] == "ok" and ev["excluded"] == {
        "no_gold_session": sum(q.is_cross_session for q in qs),
        "gold_session_absent": len(gone),
    }
    hits = sum(1 for i, q in included if i % 2 == 0 and i % 5 != 0)
    cell = ev["aggregate"]["splits"]["all"]["overall"]["metrics"]["recall@5"]
    assert cell["n"] == len(included) and cell["mean"] == pytest.approx(hits / len(included))
    assert json.loads((d / "scores" / "summary.json").read_text()) == summary


def test_judge_is_cached_per_question_and_rejudged_when_the_answer_changes(run):
    d, qs = run
    with MockOpenAIServer(responder=judge_model().responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        summary = evaluate_run(d, ["judge"], judge_model=model, n_boot=100, preset="harmonized")
        first_calls = srv.calls
        assert all("SecretMethod" not in json.dumps(r) for r in srv.requests)
    sessions = {(q.split, q.dialogue, q.session) for i, q in enumerate(qs) if i % 5}
    assert first_calls == len(sessions)  # one call per session, failed answers need none
    j = summary["metrics"]["judge"]
    assert j["coverage"] == {
        "judged": len(qs),
        "total": len(qs),
        "errors": 0,
        "failed_answers": sum(1 for i in range(len(qs)) if i % 5 == 0),
        "reasons": {},
    }
    assert summary["label"] is None and j["model"] == "openai:gpt-4o-mini"
    expected = sum(1.0 if i % 5 == 1 else (0.5 if i % 5 == 2 else 0.0) for i in range(len(qs))) / len(qs)
    assert j["aggregate"]["splits"]["all"]["overall"]["metrics"]["score"]["mean"] == pytest.approx(expected)
    assert "lexical" not in summary["metrics"]

    with MockOpenAIServer(responder=judge_model().responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        again = evaluate_run(d, ["judge"], judge_model=model, n_boot=100, preset="harmonized")
        assert srv.calls == 0
    assert again["metrics"]["judge"]["aggregate"] == j["aggregate"]

    changed = json.loads((d / "predictions.jsonl").read_text().splitlines()[3])
    changed["answer"] = changed["gold"]
    with (d / "predictions.jsonl").open("a") as f:
        f.write(json.dumps(changed) + "\n")
    with MockOpenAIServer(responder=judge_model().responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        third = evaluate_run(d, ["judge"], judge_model=model, n_boot=100, preset="harmonized")
        assert srv.calls == 1
    assert third["metrics"]["judge"]["aggregate"]["splits"]["all"]["overall"]["metrics"]["score"][
        "mean"
    ] == pytest.approx(expected + 1 / len(qs))
    lines = (d / "scores" / "judge.jsonl").read_text().splitlines()
    assert len(lines) == len(qs)  # compacted


def test_local_judge_labels_every_output_and_other_judge_is_refused(run):
    d, _ = run
    summary = evaluate_run(
        d,
        ["lexical", "judge"],
        judge_model=judge_model("local:smollm2"),
        judge_mode="question",
        n_boot=50,
        preset="harmonized",
    )
    assert summary["label"] == NOT_COMPARABLE and summary["metrics"]["judge"]["label"] == NOT_COMPARABLE
    recs = [json.loads(x) for x in (d / "scores" / "judge.jsonl").read_text().splitlines()]
    assert all(r["label"] == NOT_COMPARABLE and r["mode"] == "question" for r in recs)
    console = Console(record=True, width=200)
    for table in summary_tables(summary):
        console.print(table)
    assert (
        "LLM judge score (local:smollm2, question mode) — NOT COMPARABLE WITH PUBLISHED NUMBERS"
        in console.export_text()
    )
    with MockOpenAIServer(responder=judge_model().responder) as srv:
        model = load_chat_model("openai:gpt-4o-mini", base_url=srv.base_url, cache=None)
        with pytest.raises(ValueError, match="holds judgments by 'local:smollm2'"):
            evaluate_run(d, ["judge"], judge_model=model, preset="harmonized")


def test_errors_and_fallback_to_prediction_copies(run, tmp_path):
    d, qs = run
    with pytest.raises(ValueError, match="needs a judge model"):
        evaluate_run(d, ["judge"])
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_run(d, ["bleu"])
    with pytest.raises(FileNotFoundError):
        evaluate_run(tmp_path / "nowhere")
    (d / "manifest.json").unlink()
    summary = evaluate_run(d, n_boot=0)
    assert summary["run"]["gold_source"] == "predictions" and summary["run"]["gold_mismatches"] == 0
    lex = {
        json.loads(x)["question_id"]: json.loads(x) for x in (d / "scores" / "lexical.jsonl").read_text().splitlines()
    }
    assert lex[qs[1].id]["exact_match"] == 0.0  # scored against the record's (tampered) gold
    assert summary["metrics"]["evidence"]["excluded"] == {"no_gold_session": sum(q.is_cross_session for q in qs)}
    assert summary["metrics"]["lexical"]["aggregate"]["splits"]["all"]["overall"]["metrics"]["f1"]["ci"] is None


def test_a_damaged_judgment_line_is_named_by_file_and_line(run):
    """A line of scores/judge.jsonl that is not a judge record is refused with one message naming the
    file, the line and the field (was "record 4" and pydantic's whole error text, links included)."""
    d, _ = run
    scores = d / "scores"
    scores.mkdir(exist_ok=True)
    (scores / "judge.jsonl").write_text('\n\n{"question_id": 5}\n')  # line 3 (blank lines skipped)
    with pytest.raises(ValueError) as e:
        evaluate_run(d, ["judge"], judge_model=judge_model(), n_boot=0, preset="harmonized")
    message = str(e.value)
    assert message.startswith(f"{scores / 'judge.jsonl'}: line 3 is not a judge record: question_id: ")
    assert "errors.pydantic.dev" not in message and "\n" not in message
