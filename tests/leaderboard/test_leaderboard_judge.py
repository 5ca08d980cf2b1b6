"""The LLM judge runs after approval, in the background, through h2hmem.metrics.judge_predictions
against an OpenAI-compatible mock server on 127.0.0.1 that grades by comparing answer and gold."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from lb_helpers import csrf_of, login, make_prediction, mixed_predictions, upload, write_run

from h2hmem.leaderboard import LeaderboardSettings, create_admin, create_app, export_submission, open_database
from h2hmem.llm import RetryPolicy, load_chat_model
from h2hmem.testing import MockOpenAIServer

UNSURE = "I am not sure, maybe the teapot?"
ITEM = re.compile(
    r"\[(q\d+)\]\nQuestion: .*?\nReference answer: (.*?)\nAssistant's answer: (.*?)(?=\n\n\[q\d+\]\n|\Z)", re.S
)


def grader(body: dict) -> str:
    """1 when the answer equals the gold, 0 otherwise; an invalid score (0.3) for UNSURE answers."""
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    out = []
    for lid, gold, answer in ITEM.findall(first_user):
        score = 0.3 if answer.strip() == UNSURE else (1 if answer.strip() == gold.strip() else 0)
        out.append({"question_id": lid, "score": score, "reasoning": "compared with the reference"})
    return json.dumps({"judgments": out})


def approve_and_wait_for_the_judge(client) -> None:
    """Approve entry 1 (logged in) and wait until its judging is over: done, partial or failed (at most 120 s)."""
    client.post("/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/")})
    deadline = time.monotonic() + 120
    while (status := client.get("/api/entries/1").json()["judge_status"]) not in ("done", "partial", "failed"):
        assert time.monotonic() < deadline, f"judge still {status}"
        time.sleep(0.2)


def test_judge_scores_after_approval(tmp_path, sample_root, sample_dataset):
    preds = mixed_predictions(sample_dataset)
    qs = sample_dataset.questions
    preds[1] = make_prediction(qs[1], UNSURE)  # question 1 is a wrong-answer one: now unjudgeable
    files = export_submission(write_run(tmp_path / "run", preds))
    want = []
    for p in preds:
        if p.failed or not (p.answer or "").strip():
            want.append(0.0)
        elif p.answer == UNSURE:
            continue
        else:
            want.append(1.0 if p.answer.strip() == p.gold.strip() else 0.0)
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with open_database(db_url)() as db:
        create_admin(db, "admin", "correct horse battery")
    with MockOpenAIServer(responder=grader) as srv:
        judge = load_chat_model(
            "openai:mock-judge",
            base_url=srv.base_url,
            api_key="test",
            retry=RetryPolicy(max_retries=1, initial_backoff_s=0.01, max_backoff_s=0.01),
        )
        settings = LeaderboardSettings(
            data_root=sample_root, db_url=db_url, judge_chat=judge, judge_preset="harmonized"
        )
        with TestClient(create_app(settings)) as client:
            upload(client, files)
            assert srv.calls == 0  # nothing is judged before approval
            login(client)
            approve_and_wait_for_the_judge(client)
            entry = client.get("/api/entries/1").json()
            q = {r["question_id"]: r for r in client.get("/api/entries/1/questions").json()["questions"]}
        # the judge saw question, gold and answer only — never the method's name
        assert all("My method" not in json.dumps(r) for r in srv.requests)
    # one answered question (UNSURE) stayed unjudged: the pass is partial, and the coverage is over
    # the answered questions (a failed answer is scored 0 without being judged)
    answered = sum(1 for p in preds if not p.failed)
    assert entry["judge_status"] == "partial" and entry["judge_model"] == "openai:mock-judge"
    assert entry["judge_preset"] == "harmonized"
    s = entry["scores"]["all"]
    assert s["judged"] == answered - 1 and s["judge_coverage"] == pytest.approx((answered - 1) / answered)
    assert s["judge"] == pytest.approx(sum(want) / len(want))
    # one batch per (dialogue, session) holding an answered question, plus one single re-ask
    # of the item whose score was invalid (its final chance: the score stays None)
    sessions = {(p.split, p.dialogue, p.session) for p in preds if not p.failed}
    assert srv.calls == len(sessions) + 1
    assert q[qs[1].id]["judge_score"] is None and q[qs[6].id]["judge_score"] == 0.0  # qs[6] failed: 0 without a call


def test_interrupted_judging_resumes_at_start(tmp_path, sample_root, sample_dataset):
    """An entry left 'running' by a stopped server is judged when the next server starts."""
    from h2hmem.leaderboard._db import Entry

    preds = mixed_predictions(sample_dataset)
    files = export_submission(write_run(tmp_path / "run", preds))
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url))) as client:
        upload(client, files)
    sessions = open_database(db_url)
    with sessions() as db:
        db.get(Entry, 1).judge_status = "running"
        db.commit()
    with MockOpenAIServer(responder=grader) as srv:
        judge = load_chat_model("openai:mock-judge", base_url=srv.base_url, api_key="test")
        settings = LeaderboardSettings(
            data_root=sample_root, db_url=db_url, judge_chat=judge, judge_preset="harmonized"
        )
        with TestClient(create_app(settings)):
            deadline = time.monotonic() + 120
            while True:
                with sessions() as db:
                    e = db.get(Entry, 1)
                    if e.judge_status == "done":
                        break
                assert time.monotonic() < deadline, f"judge still {e.judge_status}"
                time.sleep(0.2)
    golds = sum(1 for p in preds if not p.failed and p.answer.strip() == p.gold.strip())
    answered = sum(1 for p in preds if not p.failed)
    assert e.summary["all"]["judge"] == pytest.approx(golds / 441) and e.summary["all"]["judged"] == answered
    assert e.status == "pending"  # judging never publishes anything


OFFICIAL_BATCH = Path(__file__).parents[1] / "metrics" / "fixtures" / "official_judge_batch.json"
PAPER_ITEM = re.compile(
    r"--- Question \d+ ---\nQuestion ID: (q\d+)\nQuestion: .*?\nGround Truth: (.*?)\nAssistant Answer: (.*?)\n\n(?=--- |Please output)",
    re.S,
)


def paper_grader(body: dict) -> str:
    """The official judge's reply format (a JSON array): 1 for the gold, 0.3 (off-level) for UNSURE, else 0."""
    out = []
    for lid, gold, answer in PAPER_ITEM.findall(body["messages"][0]["content"]):
        score = 0.3 if answer == UNSURE else (1 if answer == gold else 0)
        out.append({"question_id": lid, "score": score, "reasoning": "compared with the ground truth"})
    return "Here are the results:\n" + json.dumps(out)


def _official_batch_prompt(preds: list) -> str:
    """The official judge's batch prompt for one session's predictions, built by hand from its format:
    the official rubric as recorded from the official script, the header (method and answer model
    withheld: ``unknown``), then each question."""
    recorded = json.loads(OFFICIAL_BATCH.read_text(encoding="utf-8"))["request"]["messages"][0]["content"]
    rubric = recorded[: recorded.index("\nDialogue: ") - 1]  # the rubric, then "\n" (the join), then "\nDialogue: …"
    p0 = preds[0]
    lines = [
        rubric,
        f"\nDialogue: {p0.dialogue}",
        f"Session: {p0.session}",
        "Memory System: unknown",
        "VLM Model: unknown",
        "",
    ]
    for i, p in enumerate(preds, 1):
        qid = p.question_id.rsplit("/", 1)[-1]
        lines += [f"--- Question {i} ---", f"Question ID: {qid}", f"Question: {p.question}"]
        lines += [f"Ground Truth: {p.gold.strip()}", f"Assistant Answer: {p.answer.strip()}", ""]
    return "\n".join([*lines, "Please output the results in JSON array format as specified above."])


def test_default_server_judges_with_the_paper_judge_and_says_so(tmp_path, sample_root, sample_dataset):
    """With default settings an entry is judged with the official request (the official prompt
    verbatim, one user message per session, temperature 0, nothing else; off-level scores snapped),
    and the public pages name the preset; an entry judged under the other preset is marked."""
    from h2hmem.leaderboard._db import Entry

    preds = mixed_predictions(sample_dataset)
    qs = sample_dataset.questions
    preds[1] = make_prediction(qs[1], UNSURE)  # the judge gives 0.3: the paper judge snaps it to 0.25
    files = export_submission(write_run(tmp_path / "run", preds))
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with open_database(db_url)() as db:
        create_admin(db, "admin", "correct horse battery")
    with MockOpenAIServer(responder=paper_grader) as srv:
        judge = load_chat_model("openai:mock-judge", base_url=srv.base_url, api_key="test", cache=None)
        with TestClient(
            create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, judge_chat=judge))
        ) as client:
            upload(client, files)
            login(client)
            approve_and_wait_for_the_judge(client)
            entry = client.get("/api/entries/1").json()
            client.post("/admin/logout", data={"csrf_token": csrf_of(client, "/")})
            ranking_html, entry_html = client.get("/").text, client.get("/entries/1").text
            with open_database(db_url)() as db:  # as if judged by a server started with --judge-preset harmonized
                db.get(Entry, 1).judge_preset = "harmonized"
                db.commit()
            marked_html = client.get("/").text
            csv_rows = client.get("/leaderboard.csv").text.splitlines()
        requests = list(srv.requests)
    # one request per (dialogue, session) with an answered question, each the official body exactly
    by_session: dict[tuple, list] = {}
    for p in preds:
        if not p.failed:
            by_session.setdefault((p.split, p.dialogue, p.session), []).append(p)
    want = {_official_batch_prompt(ps) for ps in by_session.values()}
    assert len(requests) == len(by_session)
    for body in requests:
        assert set(body) == {"model", "messages", "temperature"} and body["temperature"] == 0
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
    assert {b["messages"][0]["content"] for b in requests} == want
    # scores: 1 for the gold, 0.25 for the snapped 0.3, 0 for wrong and failed answers; all judged
    scores = [0.25 if p.answer == UNSURE else 1.0 if not p.failed and p.answer == p.gold else 0.0 for p in preds]
    answered = sum(1 for p in preds if not p.failed)
    assert entry["judge_status"] == "done" and entry["judge_preset"] == "paper"
    assert entry["scores"]["all"]["judged"] == answered
    assert entry["scores"]["all"]["judge"] == pytest.approx(sum(scores) / len(scores))
    # the pages say which preset scored it; an entry scored under the other preset is marked
    assert "the <strong>paper</strong> judge preset (the official judge prompt, verbatim" in ranking_html
    assert "preset-mark" not in ranking_html
    assert "paper judge preset" in entry_html
    assert (
        '<span class="preset-mark" title="Judged under the harmonized judge preset; this server judges with paper">'
        in marked_html
    )
    header, row = csv_rows[0].split(","), csv_rows[1].split(",")
    assert row[header.index("judge_preset")] == "harmonized"
