from __future__ import annotations

import json

from sqlalchemy import text
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.leaderboard import open_database
from h2hmem.leaderboard._security import authenticate

runner = CliRunner()


def test_export_and_validate(mixed_run, sample_root, tmp_path):
    r = runner.invoke(app, ["submission", "export", str(mixed_run)])
    assert r.exit_code == 0, r.output
    dy = mixed_run / "submission" / "prediction_dyadic.json"
    mp = mixed_run / "submission" / "prediction_multiparty.json"
    assert f"{dy} (289 rows)" in r.output.replace("\n", "") and mp.exists()
    r = runner.invoke(app, ["submission", "validate", str(dy), str(mp), "--data", str(sample_root)])
    assert r.exit_code == 0, r.output
    assert "VALID: 0 error(s), 0 warning(s); 441 of 441 rows matched, 0 questions missing" in r.output

    data = json.loads(dy.read_text())
    data["predictions"][3]["system_answer"] = None
    bad = tmp_path / "prediction_dyadic.json"
    bad.write_text(json.dumps(data))
    r = runner.invoke(app, ["submission", "validate", str(bad), "--data", str(sample_root)])
    assert r.exit_code == 1
    assert (
        f"{bad} predictions[3].system_answer: Input should be a valid string (got NoneType) [invalid-field]" in r.output
    )
    assert "INVALID: 1 error(s)" in r.output
    r = runner.invoke(app, ["submission", "validate", str(bad), "--data", str(sample_root), "--json"])
    out = json.loads(r.output)
    assert r.exit_code == 1 and out["ok"] is False and out["counts"]["error"] == {"invalid-field": 1}


def test_cli_errors_are_messages(tmp_path, sample_root):
    r = runner.invoke(app, ["submission", "validate", str(tmp_path / "none.json"), "--data", str(sample_root)])
    assert r.exit_code == 2 and "does not exist" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["submission", "export", str(tmp_path)])
    assert r.exit_code == 2 and "predictions.jsonl" in r.output
    r = runner.invoke(app, ["leaderboard", "serve", "--data", str(tmp_path / "nodata")])
    assert r.exit_code == 2 and "cannot start the leaderboard" in r.output


def test_export_failures_are_one_line_and_write_nothing_half(mixed_run, tmp_path, monkeypatch):
    # --out under a regular file
    (tmp_path / "afile").write_text("x")
    r = runner.invoke(app, ["submission", "export", str(mixed_run), "--out", str(tmp_path / "afile" / "sub")])
    out = " ".join(r.output.split())
    assert (
        r.exit_code == 2 and f"cannot export the submission: {tmp_path / 'afile'}" in out and "Not a directory" in out
    )
    assert "Traceback" not in out
    # a damaged manifest: refused before any file is written
    manifest = mixed_run / "manifest.json"
    manifest.write_text('{"schema": "h2hmem.manifest/1", "run_id": ')  # cut short
    r = runner.invoke(app, ["submission", "export", str(mixed_run)])
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and f"{manifest}" in out and "Traceback" not in out and "wrote" not in out
    assert not (mixed_run / "submission").exists()
    manifest.unlink()

    # a full disk: exit 4 naming the file, no half file left
    monkeypatch.setattr("h2hmem._atomic.os.fdopen", lambda fd, mode: _Full(fd))
    r = runner.invoke(app, ["submission", "export", str(mixed_run)])
    out = " ".join(r.output.split())
    assert r.exit_code == 4 and "local I/O error:" in out and "No space left on device; free space and rerun" in out
    assert list((mixed_run / "submission").iterdir()) == []  # the temporary file removed


class _Full:
    """A file whose every write fails for want of space."""

    def __init__(self, fd):
        import os

        os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def write(self, data):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")


def test_create_admin(tmp_path):
    db = f"sqlite:///{tmp_path / 'lb.db'}"
    r = runner.invoke(
        app, ["leaderboard", "create-admin", "--db", db, "--username", "alice", "--password-stdin"], input="short\n"
    )
    assert r.exit_code == 2 and "at least 10 characters" in r.output
    r = runner.invoke(
        app,
        ["leaderboard", "create-admin", "--db", db, "--username", "alice", "--password-stdin"],
        input="a long enough password\n",
    )
    assert r.exit_code == 0 and "administrator 'alice' saved" in r.output
    with open_database(db)() as s:
        assert authenticate(s, "alice", "a long enough password") is not None
        assert authenticate(s, "alice", "a long enough passwor") is None
        stored = s.scalar(text("select password_hash from lb_admins"))
    assert stored.startswith("scrypt$16384$8$1$") and "a long enough password" not in stored


def test_serve_command_starts_a_working_server(tmp_path, sample_root):
    """`h2hmem leaderboard serve` as a real process on a free port answers the ranking and the API."""
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "h2hmem"
    proc = subprocess.Popen(
        [
            str(exe),
            "leaderboard",
            "serve",
            "--data",
            str(sample_root),
            "--db",
            f"sqlite:///{tmp_path / 'lb.db'}",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/entries", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "server did not answer within 90 s"
                time.sleep(0.3)
        assert r.status_code == 200 and r.json() == {"entries": []}
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert "No approved entries yet." in page.text and "h2hmem_session" in page.headers.get("set-cookie", "")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_refuses_an_unknown_judge_preset(tmp_path, sample_root):
    from typer.testing import CliRunner

    from h2hmem.cli import app

    res = CliRunner().invoke(
        app, ["leaderboard", "serve", "--data", str(sample_root), "--judge-preset", "official", "--db", "sqlite://"]
    )
    assert res.exit_code == 2 and "--judge-preset must be one of paper, harmonized" in res.output


def test_serve_sets_the_admin_session_lifetimes_and_names_a_bad_value(tmp_path, sample_root, monkeypatch):
    """`--session-idle-minutes` / `--session-hours` reach the service's settings (before, only Python
    could set them); a value the settings refuse is an error naming the option, not a traceback."""
    import uvicorn
    from typer.testing import CliRunner

    import h2hmem.leaderboard as lb
    from h2hmem import defaults
    from h2hmem.cli import app

    seen = {}
    monkeypatch.setattr(lb, "create_app", lambda settings: seen.setdefault("settings", settings))
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    base = ["leaderboard", "serve", "--data", str(sample_root), "--db", f"sqlite:///{tmp_path / 'lb.db'}"]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    assert (
        (seen["settings"].session_idle_minutes, seen["settings"].session_hours)
        == (
            defaults.LEADERBOARD_SESSION_IDLE_MINUTES,
            defaults.LEADERBOARD_SESSION_HOURS,
        )
        == (30.0, 8.0)
    )
    seen.clear()
    r = CliRunner().invoke(app, [*base, "--session-idle-minutes", "5", "--session-hours", "1.5"])
    assert r.exit_code == 0, r.output
    assert (seen["settings"].session_idle_minutes, seen["settings"].session_hours) == (5.0, 1.5)
    seen.clear()
    r = CliRunner().invoke(app, [*base, "--session-hours", "0"])
    assert r.exit_code == 2 and not seen
    assert "--session-hours: Input should be greater than 0" in " ".join(r.output.split())
    assert "Traceback" not in r.output
    for option, value, message in (
        ("--session-hours", "inf", "--session-hours: Input should be a finite number"),
        ("--session-idle-minutes", "nan", "--session-idle-minutes: Input should be a finite number"),
        ("--max-file-mb", "inf", "--max-file-mb: must be a number > 0, got inf"),
        ("--max-file-mb", "nan", "--max-file-mb: must be a number > 0, got nan"),
    ):  # before: OverflowError / ValueError tracebacks
        r = CliRunner().invoke(app, [*base, option, value])
        assert r.exit_code == 2 and not seen and message in " ".join(r.output.split()), (option, value, r.output)
