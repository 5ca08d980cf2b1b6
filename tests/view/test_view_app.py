"""The viewer's pages over two real runs of the sample (FastAPI's TestClient): run list, question
table filters and sorting, the question page (evidence turns, gold sessions, prompt, reply),
side-by-side comparison, images, escaping, and ``h2hmem runs list``."""

from __future__ import annotations

import json
import re
import shutil
from statistics import fmean

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from view_helpers import HTML, INJECTED_TURN, QID

from h2hmem.records import read_predictions
from h2hmem.view import create_viewer_app


@pytest.fixture(scope="module")
def client(sample_runs):
    return TestClient(create_viewer_app(sample_runs.runs))


def _judge(run_dir):
    return {r["question_id"]: r for r in map(json.loads, (run_dir / "scores" / "judge.jsonl").read_text().splitlines())}


def _qids(html: str) -> list[str]:
    return re.findall(r'<tr data-qid="([^"]+)"', html)


def test_run_list_shows_each_run_with_its_headline_judge_score(client, sample_runs):
    html = client.get("/").text
    for d in sample_runs.runs:
        scores = [r["score"] for r in _judge(d).values()]
        row = re.search(rf'<tr data-run="{re.escape(d.name)}">(.*?)</tr>', html, flags=re.S).group(1)
        assert f'data-col="score">{fmean(scores):.3f}<' in row  # micro mean over all 289 questions
        assert ">289<" in row and ">complete<" in row and "openai:gpt-4o-mini" in row


def test_head_is_answered_like_get_without_a_body(client, sample_runs):
    # `curl -I` got 405: the viewer answered GET only
    run_page = re.search(r'href="(/runs/[^"/]+)"', client.get("/").text).group(1)
    for path in ("/", run_page):
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code == 200 and head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"]
    assert client.head("/no-such-page").status_code == client.get("/no-such-page").status_code == 404


def test_filter_by_task_type_and_judge_level(client, sample_runs):
    d = sample_runs.runs[0]
    preds = read_predictions(d)
    judge = _judge(d)
    html = client.get(f"/runs/{d.name}", params={"task_type": "UPR"}).text
    want = {p.question_id for p in preds if p.task_type == "UPR"}
    assert set(_qids(html)) == want and len(want) == 46
    assert set(re.findall(r'data-task-type="([^"]+)"', html)) == {"UPR"}
    html = client.get(f"/runs/{d.name}", params={"task_type": "UPR", "judge": "0.5"}).text
    assert set(_qids(html)) == {q for q in want if judge[q]["score"] == 0.5}
    html = client.get(f"/runs/{d.name}", params={"failed": "yes"}).text
    assert _qids(html) == [] and "No question matches these filters." in html


def test_f1_range_and_evidence_filters_partition_the_questions(client, sample_runs):
    d = sample_runs.runs[0]
    lexical = {r["question_id"]: r for r in map(json.loads, (d / "scores" / "lexical.jsonl").read_text().splitlines())}
    evidence = {
        r["question_id"]: r for r in map(json.loads, (d / "scores" / "evidence.jsonl").read_text().splitlines())
    }
    zero = set(_qids(client.get(f"/runs/{d.name}", params={"f1_max": 0}).text))
    assert zero == {q for q, r in lexical.items() if r["f1"] == 0}
    some = set(_qids(client.get(f"/runs/{d.name}", params={"f1_min": 0.01}).text))
    assert some == {q for q, r in lexical.items() if r["f1"] >= 0.01} and not zero & some
    hit, miss, na = (
        set(_qids(client.get(f"/runs/{d.name}", params={"evidence": v}).text)) for v in ("hit", "miss", "n/a")
    )
    assert hit == {q for q, r in evidence.items() if r["hit@5"] == 1.0}
    assert miss == {q for q, r in evidence.items() if r["hit@5"] == 0.0}
    assert len(hit) + len(miss) + len(na) == 289 and hit and miss and na


def test_worst_first_orders_by_judge_then_f1(client, sample_runs):
    d = sample_runs.runs[1]
    judge = _judge(d)
    lexical = {
        r["question_id"]: r["f1"] for r in map(json.loads, (d / "scores" / "lexical.jsonl").read_text().splitlines())
    }
    order = _qids(client.get(f"/runs/{d.name}").text)
    keys = [(judge[q]["score"], lexical[q]) for q in order]
    assert len(order) == 289 and keys == sorted(keys)
    assert _qids(client.get(f"/runs/{d.name}", params={"sort": "best"}).text)[0] == max(
        order, key=lambda q: (judge[q]["score"], lexical[q])
    )
    assert client.get(f"/runs/{d.name}", params={"sort": "nonsense"}).status_code == 422


def test_question_page_shows_evidence_turns_prompt_reply_and_scores(client, sample_runs):
    d = sample_runs.runs[0]
    p = next(p for p in read_predictions(d) if p.question_id == QID)
    html = client.get(f"/runs/{d.name}/q/{QID}").text
    assert f'<h1 id="question">{sample_runs.question_text}</h1>' in html.replace("&#39;", "'")
    assert f'<span id="gold">{escape(p.gold)}</span>' in html and f'<span id="answer">{escape(p.answer)}</span>' in html
    assert 'gold sessions: <span id="gold-sessions">session1</span>' in html
    # retrieved turns as the dataset has them, in rank order; those of session1 are marked gold
    turns = re.findall(r'<div class="turn( gold)?" data-session="(session\d+)" data-turn="(\d+)">', html)
    assert [(s, int(t)) for _, s, t in turns] == [(e.session, e.turn) for e in p.evidence]
    assert all(bool(g) == (s == "session1") for g, s, _ in turns)
    assert ("session1", INJECTED_TURN) in [(s, int(t)) for _, s, t in turns]
    # the whole prompt and the raw reply of the answer call
    # (the official Naive RAG prompt of the default preset paper asks for JSON with "system_answer")
    assert "Question: " in html and ("Answer:" in html or "system_answer" in html) and p.answer in html
    assert re.search(r"answer call · openai:gpt-4o-mini · paid", html)
    assert "judge call · openai:judge" in html  # the judge's batch call, from transcripts-judge.jsonl.gz
    assert "scripted &lt;i&gt;q1&lt;/i&gt;" in html  # judge reasoning, escaped
    assert 'href="/compare/' + QID in html


def test_everything_from_the_data_is_escaped(client, sample_runs):
    for d in sample_runs.runs:
        html = client.get(f"/runs/{d.name}/q/{QID}").text
        assert '<b id="injected">' not in html and "<script>document" not in html and "<img src=x" not in html
        assert "&lt;b id=&#34;injected&#34;&gt;bold&lt;/b&gt;&lt;script&gt;" in html  # shown as text
    assert HTML not in client.get(f"/compare/{QID}").text


def test_full_text_evidence_is_whole_sessions_with_the_gold_one_marked(client, sample_runs):
    d = sample_runs.runs[1]
    html = client.get(f"/runs/{d.name}/q/{QID}").text
    sessions = re.findall(r'<details class="session-unit( gold)?" data-session="(session\d+)">', html)
    assert sessions and [s for g, s in sessions if g] == ["session1"]
    assert 'class="thumb"' in html  # turn 0 of session1 has an image file


def test_compare_shows_the_question_in_both_runs(client, sample_runs):
    html = client.get(f"/compare/{QID}").text
    cols = re.findall(r'<section class="col" data-run="([^"]+)">', html)
    assert cols == [d.name for d in sample_runs.runs]
    one = client.get(f"/compare/{QID}", params={"run": sample_runs.runs[1].name}).text
    assert re.findall(r'<section class="col" data-run="([^"]+)">', one) == [sample_runs.runs[1].name]


def test_only_images_of_the_dataset_are_served(client, sample_runs):
    key = sample_runs.runs[0].name
    html = client.get(f"/runs/{key}/q/{QID}").text
    src = re.search(r'<img class="thumb" alt="[^"]*" src="([^"]+)"', html)
    if src is None:  # naive-rag may not retrieve turn 0: use the full-text page
        src = re.search(
            r'<img class="thumb" alt="[^"]*" src="([^"]+)"',
            client.get(f"/runs/{sample_runs.runs[1].name}/q/{QID}").text,
        )
    r = client.get(src.group(1))
    assert r.status_code == 200 and r.content.startswith(b"\x89PNG")
    for bad in ("session1/session.json", "session1/..%2Fsession.json", "session2/1.png"):
        assert client.get(f"/runs/{key}/image/dyadic/dialogue5/{bad}").status_code == 404


def test_unknown_run_and_question_are_404_pages(client, sample_runs):
    r = client.get("/runs/nope")
    assert r.status_code == 404 and "No run &#39;nope&#39;" in r.text
    r = client.get(f"/runs/{sample_runs.runs[0].name}/q/dyadic/dialogue5/session1/q999")
    assert r.status_code == 404 and "has no answer to question" in r.text
    assert (
        "script-src" not in r.headers["content-security-policy"]
        and "default-src 'none'" in r.headers["content-security-policy"]
    )


def test_runs_list_json_and_table(sample_runs, tmp_path):
    from typer.testing import CliRunner

    from h2hmem.cli import app

    out = sample_runs.runs[0].parent
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["run_id"] for r in rows] == sorted(d.name for d in sample_runs.runs)
    for r in rows:
        d = out / r["run_id"]
        assert (
            r["answered"] == 289 and r["failed"] == 0 and r["status"] == "complete" and r["headline_metric"] == "judge"
        )
        assert r["headline_score"] == pytest.approx(fmean(j["score"] for j in _judge(d).values()))
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(out)], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and all(d.name in res.output for d in sample_runs.runs) and "289/289" in res.output
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(out / "missing")])
    assert res.exit_code == 2 and "no such folder" in res.output
    # failed answers are not answered: a copy of a run with 2 of its records turned into failures
    copy = tmp_path / "failing" / "run"
    shutil.copytree(sample_runs.runs[0], copy)
    lines = [json.loads(x) for x in (copy / "predictions.jsonl").read_text().splitlines()]
    for rec in lines[:2]:
        rec["answer"], rec["error"] = None, "ServerError: 500"
    (copy / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent), "--json"])
    (row,) = json.loads(res.output)
    assert (row["recorded"], row["answered"], row["failed"]) == (289, 287, 2)
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent)], env={"COLUMNS": "250"})
    assert "287/289" in res.output
    # the copy is named by its folder (what other commands are given), with the manifest's run id beside it
    assert f"run (run {sample_runs.runs[0].name})" in res.output
    # a damaged line (cut short, newline kept) is shown, as every other command refuses the file there
    text = (copy / "predictions.jsonl").read_text().splitlines()
    text[5] = text[5][:40]
    (copy / "predictions.jsonl").write_text("".join(x + "\n" for x in text))
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent), "--json"])
    (row,) = json.loads(res.output)
    assert row["damaged_lines"] == [6] and row["recorded"] == 288
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent)], env={"COLUMNS": "250"})
    assert "complete, 1 damaged line (line 6)" in res.output


def test_runs_list_shows_a_retrieval_only_run_as_retrieved_with_its_evidence_headline(sample_runs, tmp_path):
    """A --retrieval-only run records evidence and no answers: `runs list` shows it as retrieved (not
    "289/289 answered") with its evidence recall@5 as the headline (before: "not scored")."""
    from typer.testing import CliRunner

    from h2hmem.cli import app
    from h2hmem.metrics import evaluate_run

    copy = tmp_path / "retrieval" / "run"
    shutil.copytree(sample_runs.runs[0], copy)
    shutil.rmtree(copy / "scores")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["retrieval_only"] = True
    (copy / "manifest.json").write_text(json.dumps(manifest))
    lines = [json.loads(x) for x in (copy / "predictions.jsonl").read_text().splitlines()]
    for rec in lines:
        rec["answer"] = None
    (copy / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    evaluate_run(copy, ["evidence"], n_boot=0)
    scored = [json.loads(x) for x in (copy / "scores" / "evidence.jsonl").read_text().splitlines()]
    expected = fmean(r["recall@5"] for r in scored if not r["excluded"])  # micro mean over the scored questions

    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent), "--json"])
    (row,) = json.loads(res.output)
    assert (row["recorded"], row["answered"], row["failed"], row["retrieval_only"]) == (289, 0, 0, True)
    assert row["headline_metric"] == "evidence recall@5" and row["headline_score"] == pytest.approx(expected)
    res = CliRunner().invoke(app, ["runs", "list", "--out", str(copy.parent)], env={"COLUMNS": "250"})
    assert "289/289 retrieved" in res.output and f"evidence recall@5 {expected:.3f}" in res.output
