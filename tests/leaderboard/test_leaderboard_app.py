"""The web service through FastAPI's TestClient on a SQLite file (PostgreSQL: test_leaderboard_postgres.py)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient
from lb_helpers import ADMIN_PW, csrf_of, expected_f1, login, make_client, mixed_predictions, upload


@pytest.fixture
def client(tmp_path, sample_root) -> TestClient:
    return make_client(tmp_path, sample_root)


def _approve(client: TestClient, entry_id: int):
    return client.post(
        f"/admin/entries/{entry_id}/approve", data={"csrf_token": csrf_of(client, "/")}, follow_redirects=False
    )


def test_upload_review_and_ranking(client, files, sample_dataset, tmp_path):
    r = upload(client, files, method="Gold-ish RAG")
    assert r.status_code == 200 and "Entry #1 received" in r.text and "pending review" in r.text
    # pending: nowhere public
    assert client.get("/api/entries").json() == {"entries": []}
    assert client.get("/api/entries/1").status_code == 404
    assert client.get("/entries/1").status_code == 404
    assert "Gold-ish RAG" not in client.get("/").text
    assert "Gold-ish RAG" not in client.get("/leaderboard.csv").text
    # review
    assert login(client).status_code == 303
    queue = client.get("/admin")
    assert "Gold-ish RAG" in queue.text and "pending" in queue.text
    assert _approve(client, 1).status_code == 303
    entry = client.get("/api/entries/1").json()
    want = expected_f1(sample_dataset, mixed_predictions(sample_dataset))
    assert entry["scores"]["all"]["f1"] == pytest.approx(want, abs=1e-12)
    assert entry["scores"]["all"]["n"] == 441 and entry["scores"]["split:dyadic"]["n"] == 289
    # every 7th question failed → answered = 441 - 63
    assert entry["scores"]["all"]["answered"] == 441 - 441 // 7
    assert entry["scores"]["all"]["coverage"] == pytest.approx((441 - 63) / 441)
    assert set(entry["scores"]) >= {"main:Memory Recall", "sub:UPR", "sub:AR"}
    page = client.get("/")
    assert "Gold-ish RAG" in page.text and f"{want:.3f}" in page.text
    # a server without a judge names no judge preset: no entry has judge scores
    assert "This server runs no LLM judge: the LLM judge column is empty.</span>" in page.text
    assert "judge preset" not in page.text
    from h2hmem.leaderboard import open_database
    from h2hmem.leaderboard._db import Entry

    with open_database(f"sqlite:///{tmp_path / 'lb.db'}")() as db:  # as if judged while the server had a judge
        e = db.get(Entry, 1)
        e.judge_status, e.judge_preset = "done", "harmonized"
        db.commit()
    note = (
        "the LLM judge column is empty except for entries judged before (their preset is shown when it is not paper)."
    )
    assert note in client.get("/").text
    detail = client.get("/entries/1")
    assert detail.status_code == 200 and "<svg" in detail.text and "UPR" in detail.text
    qs = client.get("/api/entries/1/questions").json()["questions"]
    assert len(qs) == 441 and sum(q["f1"] for q in qs) / 441 == pytest.approx(want)
    assert client.get("/entries/1/questions?task=CD&split=dyadic").status_code == 200


def test_script_in_method_name_is_inert(client, files):
    evil = "<script>alert(1)</script>"
    upload(client, files, method=evil, organisation='"><img src=x onerror=alert(2)>', description=evil)
    login(client)
    _approve(client, 1)
    for path in ("/", "/entries/1", "/admin?status=all", "/admin/entries/1", "/entries/1/questions"):
        html = client.get(path).text
        assert evil not in html and "<img src=x" not in html, path
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/").text
    assert client.get("/").headers["content-security-policy"].startswith("default-src 'self'")
    assert client.get("/api/entries/1").json()["method"] == evil  # data kept as typed; escaped when rendered


def test_over_limit_file_is_refused(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root, max_file_bytes=100_000)  # the dyadic file is ~114 kB
    assert files[0].stat().st_size > 100_000 > files[1].stat().st_size
    r = upload(client, files)
    assert r.status_code == 413
    assert "The dyadic file &#39;prediction_dyadic.json&#39; is larger than the limit of 100 kB per file." in r.text
    assert client.get("/admin").status_code == 200  # still a normal page, no traceback
    # a body far above the limit is cut off before it is read
    big = b"x" * 600_000  # above 2 × 100 kB + 256 kB of form overhead
    r = client.post("/submit", data={"csrf_token": csrf_of(client)}, files={"file_dyadic": ("a.json", big)})
    assert r.status_code == 413 and "too large" in r.text


def test_wrong_field_type_is_refused_with_row_and_field(client, files):
    data = json.loads(files[0].read_text())
    data["predictions"][3]["system_answer"] = 42
    r = upload(client, (json.dumps(data).encode(), files[1].read_bytes()))
    assert r.status_code == 400
    assert "The files were refused: 1 error" in r.text
    assert "prediction_dyadic.json predictions[3].system_answer: Input should be a valid string (got int)" in r.text
    assert "Traceback" not in r.text
    login(client)
    assert "Nothing here" in client.get("/admin?status=all").text  # nothing stored


def test_missing_file_and_method_are_reported(client, files):
    tok = csrf_of(client)
    r = client.post(
        "/submit",
        data={"csrf_token": tok, "method": "  "},
        files={"file_dyadic": ("prediction_dyadic.json", files[0].read_bytes())},
    )
    assert r.status_code == 400
    assert "Method name: String should have at least 1 character" in r.text
    assert "The multi-party file (prediction_multiparty.json) is required." in r.text


def test_unauthenticated_review_is_refused(client, files):
    """Without a session every admin route redirects HTML requests to the login page (GET and
    POST alike, before the form is read) and answers API requests 401; nothing changes."""
    upload(client, files)
    tok = csrf_of(client)
    for action in ("approve", "reject", "withdraw"):
        r = client.post(f"/admin/entries/1/{action}", data={"csrf_token": tok, "reason": "x"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/admin/login", action
    for path in ("/admin", "/admin/entries/1", "/admin/sessions", "/admin/password"):
        r = client.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/admin/login", path
    r = client.get("/api/admin/entries")
    assert r.status_code == 401 and r.json() == {"detail": "Administrators only: log in first."}
    login(client)
    assert "pending" in client.get("/admin/entries/1").text
    assert client.get("/api/admin/entries").json()["entries"][0]["status"] == "pending"


def test_missing_or_wrong_csrf_token_is_refused(client, files):
    r = upload(client, files, csrf="")
    assert r.status_code == 403 and "no valid security token (CSRF)" in r.text
    r = client.post("/admin/login", data={"username": "admin", "password": ADMIN_PW})
    assert r.status_code == 403
    r = client.post("/admin/login", data={"username": "admin", "password": ADMIN_PW, "csrf_token": "forged"})
    assert r.status_code == 403
    upload(client, files)
    login(client)
    r = client.post("/admin/entries/1/approve", data={})
    assert r.status_code == 403
    assert client.get("/api/entries").json() == {"entries": []}
    # a token from another session is refused too
    other = TestClient(client.app)
    r = other.post("/submit", data={"csrf_token": csrf_of(client), "method": "m"})
    assert r.status_code == 403


def test_altered_gold_gets_the_same_score(client, files):
    """original_answer set to the system answer (and categories scrambled): scores unchanged."""
    altered = []
    for f in files:
        data = json.loads(f.read_text())
        for row in data["predictions"]:
            row["original_answer"] = row["system_answer"]
            row["category"] = "Answer Refusal"
            del row["question_id"]  # matched by text, as official files are
        altered.append(json.dumps(data).encode())
    assert upload(client, files, method="honest").status_code == 200
    r = upload(client, tuple(altered), method="altered")
    assert r.status_code == 200 and "gold-mismatch" in r.text
    login(client)
    _approve(client, 1)
    _approve(client, 2)
    a, b = (client.get(f"/api/entries/{i}").json()["scores"] for i in (1, 2))
    assert a == b
    assert a["all"]["f1"] < 0.5  # a copied gold would have given F1 1 on every answered question


def test_only_approved_entries_are_public(client, files):
    for name in ("pending one", "rejected one", "withdrawn one", "approved one"):
        upload(client, files, method=name)
    login(client)
    tok = csrf_of(client, "/")
    r = client.post("/admin/entries/2/reject", data={"csrf_token": tok, "reason": ""})
    assert r.status_code == 422 and "a rejection needs a reason" in r.text  # a form error, not a state conflict
    r = client.post("/admin/entries/2/reject", data={"csrf_token": tok, "reason": "x" * 2001})
    assert r.status_code == 422 and "longer than 2000 characters" in r.text
    assert (
        client.post(
            "/admin/entries/2/reject", data={"csrf_token": tok, "reason": "duplicate"}, follow_redirects=False
        ).status_code
        == 303
    )
    _approve(client, 3)
    assert (
        client.post(
            "/admin/entries/3/withdraw", data={"csrf_token": tok, "reason": "asked by authors"}, follow_redirects=False
        ).status_code
        == 303
    )
    _approve(client, 4)
    assert client.post("/admin/entries/2/reject", data={"csrf_token": tok, "reason": "again"}).status_code == 409
    assert [e["method"] for e in client.get("/api/entries").json()["entries"]] == ["approved one"]
    for path in ("/", "/leaderboard.csv", "/leaderboard.json"):
        text = client.get(path).text
        assert "approved one" in text and not any(
            n in text for n in ("pending one", "rejected one", "withdrawn one")
        ), path
    for i in (1, 2, 3):
        assert client.get(f"/api/entries/{i}").status_code == 404
        assert client.get(f"/entries/{i}/questions.csv").status_code == 404
    admin_all = client.get("/admin?status=all").text
    assert all(n in admin_all for n in ("pending one", "rejected one", "withdrawn one"))


def test_sorting_and_downloads(client, files, tmp_path, sample_dataset):
    # a second, better entry: gold answers everywhere except the failed ones
    better = []
    for f in files:
        data = json.loads(f.read_text())
        for row in data["predictions"]:
            row["system_answer"] = row["original_answer"]
        better.append(json.dumps(data).encode())
    upload(client, files, method='=HYPERLINK("x")', organisation="B lab")
    upload(client, tuple(better), method="Alpha", organisation="A lab")
    login(client)
    _approve(client, 1)
    _approve(client, 2)

    def order(query: str) -> list[str]:
        html = client.get("/" + query).text
        return [m for m in ("Alpha", "=HYPERLINK") if m in html and html.index(m) >= 0] and sorted(
            ("Alpha", "=HYPERLINK"), key=html.index
        )

    assert order("") == ["Alpha", "=HYPERLINK"]  # default: overall F1, best first
    assert order("?sort=all&dir=asc") == ["=HYPERLINK", "Alpha"]
    assert order("?sort=organisation&dir=desc") == ["=HYPERLINK", "Alpha"]
    assert order("?metric=bleu1&sort=sub:UPR") == ["Alpha", "=HYPERLINK"]
    bad = client.get("/?metric=nonsense")
    assert bad.status_code == 400 and "unknown metric" in bad.text
    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboard.csv").text)))
    assert [r["method"] for r in rows] == ['\'=HYPERLINK("x")', "Alpha"]  # formula neutralised
    api = {e["id"]: e for e in client.get("/api/entries").json()["entries"]}
    assert float(rows[1]["all/f1"]) == pytest.approx(api[2]["scores"]["all"]["f1"])
    assert float(rows[1]["sub:CD/n"]) == api[2]["scores"]["sub:CD"]["n"]
    assert client.get("/leaderboard.json").json()["entries"] == client.get("/api/entries").json()["entries"]
    q = list(csv.DictReader(io.StringIO(client.get("/entries/2/questions.csv").text)))
    assert len(q) == 441 and {r["answered"] for r in q} == {"True"}


def test_upload_rate_limit(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root, uploads_per_hour=2)
    assert upload(client, files).status_code == 200
    assert upload(client, files, csrf="").status_code == 403  # refused before counting
    assert upload(client, (b"{}", b"{}")).status_code == 400
    r = upload(client, files)
    assert r.status_code == 429 and "Too many uploads from your address: at most 2 per hour." in r.text
    assert 3500 < int(r.headers["retry-after"]) <= 3600  # the first upload leaves the hour's window then


def test_login_failures(tmp_path, sample_root):
    client = make_client(tmp_path, sample_root, logins_per_15min=2)
    r = login(client, password="wrong password")
    assert r.status_code == 401 and "Wrong username or password." in r.text
    assert login(client, username="nobody").status_code == 401
    r = login(client)  # right password, but the address is locked out for 15 minutes
    assert r.status_code == 429 and "Too many failed logins" in r.text
    assert 850 < int(r.headers["retry-after"]) <= 900  # the first failure leaves the 15 minutes' window then


def test_unexpected_errors_are_a_page_not_a_traceback(client, monkeypatch):
    from h2hmem.leaderboard import _public

    def boom(db):
        raise RuntimeError("database exploded at /srv/secret/path")

    monkeypatch.setattr(_public, "public_entries", boom)
    c = TestClient(client.app, raise_server_exceptions=False)
    r = c.get("/")
    assert r.status_code == 500 and "Internal error: the request could not be completed" in r.text
    assert "Traceback" not in r.text and "/srv/secret" not in r.text
    r = c.get("/api/entries")
    assert r.status_code == 500 and r.json() == {
        "detail": "Internal error: the request could not be completed (it is logged on the server)."
    }


def test_page_modules_do_not_import_the_app_module():
    """No import cycle: the route modules and ``_web`` import shared helpers from ``_web``, never ``_app``."""
    import ast
    from pathlib import Path

    import h2hmem.leaderboard as lb

    pkg = Path(lb.__file__).parent
    for name in ("_web", "_public", "_submit", "_admin", "_accounts", "_middleware", "_sessions"):
        tree = ast.parse((pkg / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "_app" not in imported, name


@pytest.mark.parametrize("field", ["max_file_bytes", "max_rows"])
def test_a_size_limit_must_be_positive(field, sample_root):
    from pydantic import ValidationError

    from h2hmem.leaderboard import LeaderboardSettings

    with pytest.raises(ValidationError, match=f"{field}\n  Input should be greater than 0"):
        LeaderboardSettings(data_root=sample_root, **{field: 0})
