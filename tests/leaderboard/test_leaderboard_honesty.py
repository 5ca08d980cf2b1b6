"""The leaderboard reports a judge pass as it went, and answers malformed input with 4xx, never 500.

Issue: with a judge that could judge nothing, an entry showed ``judge_status: "done"``, judge
0.000 and coverage 0.909 — the "judged" questions were the missing answers scored 0; an upload
holding a number of more than 4,300 digits, and ``/entries/9223372036854775808``, answered 500.
"""

from __future__ import annotations

import logging

import pytest
from lb_helpers import csrf_of, login, make_client, mixed_predictions, upload

from h2hmem.leaderboard import export_submission
from h2hmem.leaderboard._judge import JudgeVerdict, JudgeWorker


def _approved_entry(tmp_path, sample_root, sample_dataset):
    preds = mixed_predictions(sample_dataset)
    from lb_helpers import write_run

    files = export_submission(write_run(tmp_path / "run", preds))
    client = make_client(tmp_path, sample_root)
    upload(client, files)
    login(client)
    r = client.post("/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/")}, follow_redirects=False)
    assert r.status_code == 303
    answered = [p.question_id for p in preds if not p.failed and (p.answer or "").strip()]
    return client, answered, len(preds)


def _judge_with(client, sample_dataset, verdict):
    worker = JudgeWorker(client.app.state.sessions, sample_dataset, verdict, "openai:fake-judge")
    try:
        worker.enqueue(1)  # what approving does when the server has a judge
        assert worker.wait_idle(60), "the judge worker did not finish"
    finally:
        worker.shutdown()
    return client.get("/api/entries/1").json()


@pytest.mark.parametrize("judged_share", [0.0, 0.5, 1.0])
def test_judge_status_counts_only_answered_questions(tmp_path, sample_root, sample_dataset, judged_share):
    client, answered, n = _approved_entry(tmp_path, sample_root, sample_dataset)
    scored = set(answered[: int(len(answered) * judged_share)])

    def judge(preds):
        return [
            JudgeVerdict(
                question_id=p.question_id,
                score=1.0 if p.question_id in scored else None,
                reasoning="" if p.question_id in scored else "reply not valid JSON",
            )
            for p in preds
        ]

    entry = _judge_with(client, sample_dataset, judge)
    s = entry["scores"]["all"]
    assert s["answered"] == len(answered) and s["judged"] == len(scored)
    assert s["judge_coverage"] == pytest.approx(len(scored) / len(answered))
    admin_html = client.get("/admin?status=all").text
    entry_html = client.get("/admin/entries/1").text
    if judged_share == 0.0:
        # the missing answers are scored 0 without a call: not "judged", no judge score at all
        assert entry["judge_status"] == "failed" and s["judge"] is None
        assert f"(0/{len(answered)})" in admin_html and "failed" in admin_html
        assert f"judged 0 of {len(answered)} answered questions" in entry_html
        assert f"{len(answered)} unjudged" in entry_html and "reply not valid JSON" in entry_html
    elif judged_share == 0.5:
        assert entry["judge_status"] == "partial"
        # mean over every question: judged answers 1, unanswered 0, unjudged left out
        assert s["judge"] == pytest.approx(len(scored) / (len(scored) + n - len(answered)))
        assert f"partial (openai:fake-judge): judged {len(scored)} of {len(answered)}" in entry_html
    else:
        assert entry["judge_status"] == "done" and s["judge_coverage"] == 1.0
        assert f"({len(answered)}/{len(answered)})" in admin_html


def test_a_number_of_more_than_4300_digits_is_a_400_not_a_500(tmp_path, sample_root, files, caplog):
    client = make_client(tmp_path, sample_root)
    huge = b'{"predictions": [{"question_id": "x", "n": ' + b"7" * 5000 + b"}]}"
    with caplog.at_level(logging.DEBUG):
        r = upload(client, (huge, files[1].read_bytes()))
    assert r.status_code == 400 and "invalid JSON" in r.text and "4300" in r.text
    assert not [rec for rec in caplog.records if rec.exc_info], "an exception was logged"


BIG = "9223372036854775808"  # 2**63: one more than SQLite's largest integer


@pytest.mark.parametrize(
    "path",
    [f"/entries/{BIG}", f"/api/entries/{BIG}", f"/entries/{BIG}/questions", f"/api/entries/{BIG}/questions",
     f"/entries/{BIG}/questions.csv", f"/admin/entries/{BIG}", "/entries/-1", "/api/entries/0"],
)  # fmt: skip
def test_an_entry_number_sqlite_cannot_hold_is_4xx_without_a_traceback(tmp_path, sample_root, path, caplog):
    client = make_client(tmp_path, sample_root)
    login(client)
    with caplog.at_level(logging.DEBUG):
        r = client.get(path)
    assert r.status_code in (404, 422), r.text
    assert "Internal error" not in r.text
    if path.startswith("/api/"):
        assert "entry_id" in r.json()["detail"]
    else:
        assert r.headers["content-type"].startswith("text/html")
    assert not [rec for rec in caplog.records if rec.exc_info], "an exception was logged"
