"""The LLM judge runs after approval, in the background, through h2hmem.metrics.judge_predictions
against an OpenAI-compatible mock server on 127.0.0.1 that grades by comparing answer and gold."""

from __future__ import annotations

import json
import re
import time

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
        app = create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, judge_chat=judge))
        with TestClient(app) as client:
            upload(client, files)
            assert srv.calls == 0  # nothing is judged before approval
            login(client)
            client.post("/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/")})
            deadline = time.monotonic() + 120
            while (status := client.get("/api/entries/1").json()["judge_status"]) not in ("done", "partial", "failed"):
                assert time.monotonic() < deadline, f"judge still {status}"
                time.sleep(0.2)
            entry = client.get("/api/entries/1").json()
            q = {r["question_id"]: r for r in client.get("/api/entries/1/questions").json()["questions"]}
        # the judge saw question, gold and answer only — never the method's name
        assert all("My method" not in json.dumps(r) for r in srv.requests)
    # one answered question (UNSURE) stayed unjudged: the pass is partial, and the coverage is over
    # the answered questions (a failed answer is scored 0 without being judged)
    answered = sum(1 for p in preds if not p.failed)
    assert entry["judge_status"] == "partial" and entry["judge_model"] == "openai:mock-judge"
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
        with TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, judge_chat=judge))):
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
