"""The submitter's side: receipt, status link through every state, duplicates, the private e-mail,
and a database made by the previous version brought up to date at start-up."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

from lb_helpers import csrf_of, login, make_client, status_path, upload
from sqlalchemy import inspect

from h2hmem.leaderboard import UploadedFile, check_submission, predictions_hash, score_submission
from h2hmem.leaderboard._db import make_engine


class GatedScorer:
    """:func:`score_submission` that waits until the test opens the gate (one entry at a time)."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def __call__(self, report, dataset):
        assert self.gate.wait(60), "the test never opened the gate"
        return score_submission(report, dataset)


def _state(client, path: str) -> dict:
    return client.get(path.replace("/status/", "/api/status/")).json()


def _wait_state(client, path: str, want: str) -> dict:
    deadline = time.monotonic() + 30
    while (s := _state(client, path))["state"] != want:
        assert time.monotonic() < deadline, f"state stayed {s['state']!r}, wanted {want!r}"
        time.sleep(0.05)
    return s


def test_status_link_follows_every_state(tmp_path, sample_root, files):
    scorer = GatedScorer()
    client = make_client(tmp_path, sample_root, scorer=scorer)
    r = upload(client, files, method="First", email="first@example.org", wait=False)
    assert r.status_code == 200 and "Your receipt" in r.text and r.headers["cache-control"] == "no-store"
    first = status_path(r.text)
    assert len(first.rsplit("/", 1)[1]) >= 32  # 24 random bytes, URL-safe base64
    _wait_state(client, first, "scoring")  # the worker holds it at the gate
    second = status_path(upload(client, files, method="Second", wait=False).text)
    s = _state(client, second)
    assert s["state"] == "queued" and s["scores"] is None and s["duplicate_of"] == 1
    page = client.get(second)
    assert 'data-state="queued"' in page.text and '<meta http-equiv="refresh" content="5">' in page.text
    assert "Scores appear here once the entry is scored." in page.text
    scorer.gate.set()
    assert client.app.state.scorer.wait_idle(60)
    s = _wait_state(client, first, "scored")
    assert s["scores"]["all"]["n"] == 441 and "email" not in s
    page = client.get(first).text
    assert 'data-state="scored"' in page and f"{s['scores']['all']['f1']:.3f}" in page and "refresh" not in page
    login(client)
    tok = csrf_of(client, "/admin")
    client.post("/admin/entries/1/approve", data={"csrf_token": tok})
    client.post("/admin/entries/2/reject", data={"csrf_token": tok, "reason": "Same files as entry #1."})
    assert _state(client, first)["state"] == "approved"
    s = _state(client, second)
    assert s["state"] == "rejected" and s["reason"] == "Same files as entry #1."
    page = client.get(second).text
    assert 'data-state="rejected"' in page and "Same files as entry #1." in page
    assert "/entries/1" in client.get(first).text  # approved: a link to the public page
    # a wrong or truncated token is simply not found
    assert client.get(first[:-1]).status_code == 404 and client.get("/api/status/nope").status_code == 404


def test_approving_before_scoring_is_refused(tmp_path, sample_root, files):
    scorer = GatedScorer()
    client = make_client(tmp_path, sample_root, scorer=scorer)
    path = status_path(upload(client, files, wait=False).text)
    _wait_state(client, path, "scoring")
    login(client)
    r = client.post("/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/admin")})
    assert r.status_code == 409 and "is not scored yet (scoring)" in r.text
    scorer.gate.set()
    assert client.app.state.scorer.wait_idle(60)


def test_identical_submissions_are_flagged_and_marked(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    upload(client, files, method="Original")
    # the same answers, re-serialized: other row order, other white space, the ignored fields changed
    shuffled = []
    for f in files:
        data = json.loads(f.read_text())
        rows = data["predictions"][::-1]
        for row in rows:
            row["system_answer"] = "  " + row["system_answer"].replace(" ", "\n ") + " "
            row["category"] = "whatever"
        shuffled.append(json.dumps({"predictions": rows}, indent=2).encode())
    upload(client, tuple(shuffled), method="Copy")
    changed = json.loads(files[1].read_text())
    changed["predictions"][0]["system_answer"] += " (edited)"
    upload(client, (files[0].read_bytes(), json.dumps(changed).encode()), method="Edited")
    login(client)
    queue = client.get("/admin").text
    rows = {m: queue.split(f">{m}</a>", 1)[1].split("</tr>", 1)[0] for m in ("Original", "Copy", "Edited")}
    assert 'duplicate of <a href="/admin/entries/1">#1</a>' in rows["Copy"]
    assert "duplicate of" not in rows["Original"] and "duplicate of" not in rows["Edited"]
    assert [e["duplicate_of"] for e in client.get("/api/admin/entries").json()["entries"]] == [None, 1, None]
    assert "same normalized predictions as" in client.get("/admin/entries/2").text
    tok = csrf_of(client, "/admin")
    for i in (1, 2, 3):
        client.post(f"/admin/entries/{i}/approve", data={"csrf_token": tok})
    ranking = client.get("/").text
    copy_row = ranking.split('data-entry="2"', 1)[1].split("</tr>", 1)[0]
    assert 'duplicate of <a href="/entries/1">#1</a>' in copy_row
    assert ranking.count("duplicate of") == 1
    assert client.get("/api/entries/2").json()["duplicate_of"] == 1


def test_predictions_hash_ignores_form_not_answers(files, sample_dataset):
    def digest(dy: bytes, mp: bytes) -> str:
        rep = check_submission(
            [
                UploadedFile(name="prediction_dyadic.json", content=dy),
                UploadedFile(name="prediction_multiparty.json", content=mp),
            ],
            sample_dataset,
        )
        assert rep.ok
        return predictions_hash(rep)

    dy, mp = (f.read_bytes() for f in files)
    base = digest(dy, mp)
    data = json.loads(dy)
    data["predictions"][5]["system_answer"] = "\u0065\u0301 " + data["predictions"][5]["system_answer"]  # e + accent
    decomposed = digest(json.dumps(data).encode(), mp)
    data["predictions"][5]["system_answer"] = data["predictions"][5]["system_answer"].replace("\u0065\u0301", "\u00e9")
    assert digest(json.dumps(data, indent=3).encode(), mp) == decomposed != base  # NFC: é == e + ◌́
    for row in data["predictions"]:
        row.pop("question_id")  # matched by text instead: same questions, same hash
    assert digest(json.dumps(data).encode(), mp) == decomposed


def test_email_is_kept_for_admins_only(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    r = upload(client, files, email="not-an-address")
    assert r.status_code == 400 and "E-mail: Value error, not an e-mail address (name@example.org)" in r.text
    receipt = upload(client, files, method="Mailed", email="secret.person@example.org")
    assert "stored for the administrators only" in receipt.text and "secret.person" not in receipt.text
    path = status_path(receipt.text)
    login(client)
    assert "secret.person@example.org" in client.get("/admin/entries/1").text
    client.post("/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/admin")})
    for p in (
        "/",
        "/entries/1",
        "/entries/1/questions",
        "/entries/1/questions.csv",
        "/leaderboard.csv",
        "/leaderboard.json",
        "/api/entries",
        "/api/entries/1",
        path,
        path.replace("/status/", "/api/status/"),
    ):
        assert "secret.person" not in client.get(p).text, p


OLD_ENTRIES = """CREATE TABLE lb_entries (id INTEGER NOT NULL PRIMARY KEY, method VARCHAR(100) NOT NULL,
 organisation VARCHAR(200) NOT NULL, description TEXT NOT NULL, status VARCHAR(16) NOT NULL, reason TEXT NOT NULL,
 created_at DATETIME NOT NULL, reviewed_at DATETIME, reviewed_by VARCHAR(64), summary JSON NOT NULL,
 validation JSON NOT NULL, judge_model VARCHAR(200), judge_status VARCHAR(16) NOT NULL, judge_error TEXT NOT NULL)"""
"""``lb_entries`` as the first release created it."""


def test_a_database_of_the_previous_version_is_upgraded(tmp_path, sample_root, files):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.execute(OLD_ENTRIES)
    con.execute(
        "INSERT INTO lb_entries VALUES (1, 'Old method', '', '', 'approved', '', '2025-01-02 03:04:05', "
        "'2025-01-03 00:00:00', 'alice', ?, '{}', 'openai:gpt-4o-mini', 'done', '')",
        (json.dumps({"all": {"f1": 0.4567, "n": 441, "coverage": 1.0}}),),
    )
    con.commit()
    con.close()
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    cols = {c["name"] for c in inspect(engine).get_columns("lb_entries")}
    assert {"score_status", "email", "content_hash", "duplicate_of", "receipt_hash"} <= cols
    assert "lb_admin_sessions" in inspect(engine).get_table_names()
    assert {i["name"] for i in inspect(engine).get_indexes("lb_entries")} >= {"ix_lb_entries_receipt_hash"}
    engine.dispose()
    client = make_client(tmp_path, sample_root, db_url=url)
    assert "0.457" in client.get("/").text  # the old entry, scored (server default), on the 0–1 scale
    assert client.get("/api/entries/1").json()["duplicate_of"] is None
    # judged before the judge preset was recorded: the leaderboard judged with harmonized then; marked
    assert client.get("/api/entries/1").json()["judge_preset"] == "harmonized"
    assert "† harmonized judge</span>" in client.get("/").text
    r = upload(client, files, method="New one")
    assert r.status_code == 200 and "Entry #2 received" in r.text
    assert _state(client, status_path(r.text))["state"] == "scored"
    login(client)
    assert "Old method" in client.get("/admin?status=all").text


def test_a_scoring_failure_is_shown_not_raised(tmp_path, sample_root, files):
    def broken(report, dataset):
        raise RuntimeError("tokenizer data missing")

    client = make_client(tmp_path, sample_root, scorer=broken)
    path = status_path(upload(client, files).text)
    s = _state(client, path)
    assert s["state"] == "failed" and s["scores"] is None
    assert "scoring failed: an administrator will look at it" in client.get(path).text
    login(client)
    page = client.get("/admin/entries/1").text
    assert "RuntimeError: tokenizer data missing" in page and 'id="approve"' not in page
