"""Server-side admin sessions: logout, password changes, revocation, removal and timeouts end them
for every copy of the cookie, on every admin route (GET and POST)."""

from __future__ import annotations

import datetime as dt

from fastapi.testclient import TestClient
from lb_helpers import ADMIN_PW, csrf_of, login, make_client, upload
from sqlalchemy import func, select
from typer.testing import CliRunner

from h2hmem.cli import app as cli
from h2hmem.leaderboard import create_admin
from h2hmem.leaderboard._db import Admin, AdminSession, Entry

COOKIE = "h2hmem_session"
OTHER_PW = "another long password"


def _admin_routes(app) -> list[tuple[str, str]]:
    """(method, path) of every route that needs an administrator, path parameters filled in."""
    out = []
    for path, methods in app.openapi()["paths"].items():  # every route the app serves (static files aside)
        if path in ("/admin/login", "/admin/logout") or not path.startswith(("/admin", "/api/admin")):
            continue
        path = path.replace("{entry_id}", "1").replace("{session_id}", "1").replace("{username}", "other")
        out += [(m.upper(), path) for m in sorted(methods)]
    return out


def _clone(client: TestClient, cookie: str) -> TestClient:
    thief = TestClient(client.app)
    thief.cookies.set(COOKIE, cookie)
    return thief


def _assert_refused(thief: TestClient, csrf: str) -> int:
    """Every admin route refuses ``thief``: HTML → 303 to the login page, API → 401. Returns the count."""
    routes = _admin_routes(thief.app)
    for method, path in routes:
        data = {"csrf_token": csrf, "reason": "stolen", "current": ADMIN_PW, "new": "x" * 20, "repeat": "x" * 20}
        r = thief.request(method, path, data=data if method == "POST" else None, follow_redirects=False)
        if path.startswith("/api/"):
            assert r.status_code == 401, (method, path, r.status_code)
        else:
            assert (r.status_code, r.headers.get("location")) == (303, "/admin/login"), (method, path, r.status_code)
    return len(routes)


def _db(client: TestClient):
    return client.app.state.sessions()


def _with_entry_and_other_admin(client: TestClient, files) -> None:
    upload(client, files)
    with _db(client) as db:
        create_admin(db, "other", OTHER_PW)


def test_logout_ends_the_session_for_every_copy_of_the_cookie(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    _with_entry_and_other_admin(client, files)
    assert login(client).status_code == 303
    stolen, csrf = client.cookies[COOKIE], csrf_of(client, "/admin")
    thief = _clone(client, stolen)
    assert thief.get("/admin").status_code == 200  # the copy works while the session is open
    r = client.post("/admin/logout", data={"csrf_token": csrf}, follow_redirects=False)
    assert r.status_code == 303
    n = _assert_refused(thief, csrf)
    assert n >= 12  # queue, entry page, 4 review actions, API queue, sessions, revoke, remove, password ×2
    with _db(client) as db:
        entry = db.get(Entry, 1)
        assert (entry.status, entry.reviewed_by) == ("pending", None)  # no POST went through
        assert db.scalar(select(Admin).where(Admin.username == "other")) is not None
        states = [(s.revoked_why, s.admin.username) for s in db.scalars(select(AdminSession))]
    assert states == [("logged out", "admin")]
    assert "Log out" not in thief.get("/").text  # public pages do not treat it as logged in either


def test_password_reset_ends_every_old_session(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    _with_entry_and_other_admin(client, files)
    second = TestClient(client.app)
    login(client), login(second)
    old = [(c.cookies[COOKIE], csrf_of(c, "/admin")) for c in (client, second)]
    with _db(client) as db:  # what `h2hmem leaderboard create-admin` does for an existing name
        create_admin(db, "admin", "a brand new password")
    for cookie, csrf in old:
        _assert_refused(_clone(client, cookie), csrf)
    assert login(client).status_code == 401  # the old password is gone
    assert login(client, password="a brand new password").status_code == 303


def test_changing_the_password_on_the_web_ends_all_sessions(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    _with_entry_and_other_admin(client, files)
    other_admin = TestClient(client.app)
    login(other_admin, "other", OTHER_PW)
    laptop = TestClient(client.app)
    login(client), login(laptop)
    old = [(c.cookies[COOKIE], csrf_of(c, "/admin")) for c in (client, laptop)]
    tok = csrf_of(client, "/admin/password")
    r = client.post(
        "/admin/password", data={"csrf_token": tok, "current": "wrong", "new": "n" * 12, "repeat": "n" * 12}
    )
    assert r.status_code == 400 and "The current password is wrong." in r.text
    r = client.post("/admin/password", data={"csrf_token": tok, "current": ADMIN_PW, "new": "short", "repeat": "short"})
    assert r.status_code == 400 and "The new password must have at least 10 characters." in r.text
    r = client.post(
        "/admin/password", data={"csrf_token": tok, "current": ADMIN_PW, "new": "n" * 12, "repeat": "n" * 12}
    )
    assert r.status_code == 200 and "Password changed: every session was ended; log in again." in r.text
    for cookie, csrf in old:
        _assert_refused(_clone(client, cookie), csrf)
    assert other_admin.get("/admin").status_code == 200  # another administrator's session is untouched
    assert login(client, password="n" * 12).status_code == 303


def _age_newest_session(client: TestClient, **shift: dt.timedelta) -> None:
    """Move the newest session's ``created_at`` / ``last_seen_at`` back by the given amounts."""
    with _db(client) as db:
        s = db.scalar(select(AdminSession).order_by(AdminSession.id.desc()).limit(1))
        for column, delta in shift.items():
            setattr(s, column, getattr(s, column) - delta)
        db.commit()


def test_idle_and_absolute_timeouts(tmp_path, sample_root):
    client = make_client(tmp_path, sample_root, session_idle_minutes=30, session_hours=8)
    login(client)
    assert client.get("/admin").status_code == 200
    _age_newest_session(client, last_seen_at=dt.timedelta(minutes=29))
    assert client.get("/admin").status_code == 200  # 29 idle minutes: still open, and refreshed
    _age_newest_session(client, last_seen_at=dt.timedelta(minutes=31))
    assert client.get("/admin", follow_redirects=False).status_code == 303
    login(client)
    _age_newest_session(client, created_at=dt.timedelta(hours=8, minutes=1))  # active now, logged in 8 h 1 min ago
    assert client.get("/admin", follow_redirects=False).status_code == 303
    fresh = TestClient(client.app)
    assert login(fresh).status_code == 303
    page = fresh.get("/admin/sessions").text
    assert page.count("idle timeout") == 1 and page.count("expired") == 1


def test_admins_revoke_sessions_and_remove_another_admin_on_the_web(tmp_path, sample_root, files):
    client = make_client(tmp_path, sample_root)
    _with_entry_and_other_admin(client, files)
    other = TestClient(client.app)
    login(other, "other", OTHER_PW)
    other_csrf = csrf_of(other, "/admin")
    login(client)
    page = client.get("/admin/sessions").text
    assert "other" in page and "(this session)" in page and page.count(">Revoke</button>") == 2
    with _db(client) as db:
        other_sid = db.scalar(select(AdminSession.id).join(Admin).where(Admin.username == "other"))
    tok = csrf_of(client, "/admin/sessions")
    r = client.post(f"/admin/sessions/{other_sid}/revoke", data={"csrf_token": tok}, follow_redirects=False)
    assert r.status_code == 303
    _assert_refused(other, other_csrf)
    assert "revoked (revoked by admin)" in client.get("/admin/sessions").text
    login(other, "other", OTHER_PW)
    assert client.post("/admin/admins/admin/remove", data={"csrf_token": tok}).status_code == 409  # not yourself
    r = client.post("/admin/admins/other/remove", data={"csrf_token": tok}, follow_redirects=False)
    assert r.status_code == 303
    assert other.get("/admin", follow_redirects=False).status_code == 303
    assert login(other, "other", OTHER_PW).status_code == 401
    with _db(client) as db:
        assert db.scalar(select(func.count()).select_from(Admin)) == 1
    assert client.post("/admin/admins/other/remove", data={"csrf_token": tok}).status_code == 404


def test_cli_lists_and_revokes_sessions_and_removes_admins(tmp_path, sample_root):
    runner = CliRunner()
    client = make_client(tmp_path, sample_root)
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with _db(client) as db:
        create_admin(db, "other", OTHER_PW)
    other = TestClient(client.app)
    login(client), login(other, "other", OTHER_PW)
    r = runner.invoke(cli, ["leaderboard", "sessions", "--db", db_url])
    assert r.exit_code == 0 and r.output.count("active") == 2, r.output
    r = runner.invoke(cli, ["leaderboard", "revoke-sessions", "--db", db_url, "--id", "1"])
    assert r.exit_code == 0 and "session #1 revoked" in r.output
    assert client.get("/admin", follow_redirects=False).status_code == 303
    assert other.get("/admin").status_code == 200
    r = runner.invoke(cli, ["leaderboard", "revoke-sessions", "--db", db_url, "--id", "1"])
    assert r.exit_code == 2 and "no open session #1" in r.output
    r = runner.invoke(cli, ["leaderboard", "revoke-sessions", "--db", db_url])
    assert r.exit_code == 2 and "exactly one of --id and --username" in r.output
    r = runner.invoke(cli, ["leaderboard", "revoke-sessions", "--db", db_url, "--username", "other"])
    assert r.exit_code == 0 and "1 session(s) of 'other' revoked" in r.output
    assert other.get("/admin", follow_redirects=False).status_code == 303
    login(other, "other", OTHER_PW)
    r = runner.invoke(cli, ["leaderboard", "remove-admin", "--db", db_url, "--username", "other"])
    assert r.exit_code == 0 and "administrator 'other' removed" in r.output
    assert other.get("/admin", follow_redirects=False).status_code == 303
    r = runner.invoke(cli, ["leaderboard", "remove-admin", "--db", db_url, "--username", "other"])
    assert r.exit_code == 2 and "no administrator 'other'" in r.output
    r = runner.invoke(cli, ["leaderboard", "sessions", "--db", db_url, "--username", "admin"])
    assert r.exit_code == 0 and r.output.count("revoked") >= 2 and "active" not in r.output and "other" not in r.output
