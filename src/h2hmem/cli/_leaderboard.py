"""``h2hmem submission …`` (export / validate leaderboard files) and ``h2hmem leaderboard …`` (the web service)."""

from __future__ import annotations

import getpass
import json
import math
import sys
from pathlib import Path
from typing import cast

import typer
from pydantic import ValidationError
from rich.table import Table

from .. import defaults
from .._atomic import atomic_write_text
from ._app import app, console, fail, fail_os

submission_app = typer.Typer(help="Export and validate leaderboard submission files.", no_args_is_help=True)
leaderboard_app = typer.Typer(
    help="Run the leaderboard web service and manage its administrators.", no_args_is_help=True
)
app.add_typer(submission_app, name="submission")
app.add_typer(leaderboard_app, name="leaderboard")

DEFAULT_DB = "sqlite:///h2hmem-leaderboard.db"
_OPTION = {
    "max_file_bytes": "--max-file-mb",
    "uploads_per_hour": "--uploads-per-hour",
    "session_idle_minutes": "--session-idle-minutes",
    "session_hours": "--session-hours",
    "db_url": "--db",
    "data_root": "--data",
}
"""LeaderboardSettings field → the serve option that sets it (for error messages)."""


@submission_app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory holding predictions.jsonl."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default RUN_DIR/submission)."),
) -> None:
    """Write prediction_dyadic.json and/or prediction_multiparty.json, one per split the run answered
    (official fields + question_id)."""
    from ..leaderboard import export_submission
    from ..records import RunStore

    if not (run_dir / "predictions.jsonl").is_file():
        raise fail(f"{run_dir}: no predictions.jsonl (is this a run directory?)")
    where = out or run_dir / "submission"
    try:
        RunStore(run_dir).read_manifest()  # a damaged manifest is refused before anything is written
        paths = export_submission(run_dir, out)
        if not paths:
            raise fail(f"{run_dir}: the run has no predictions")
        for p in paths:
            n = len(json.loads(p.read_text(encoding="utf-8"))["predictions"])
            console.print(f"wrote {p} ({n} rows)", highlight=False)
        _report_missing(run_dir, paths[0].parent)
    except (FileNotFoundError, ValueError) as e:
        raise fail(str(e))
    except OSError as e:  # a read-only or full disk, --out under a file: one line naming the file
        raise fail_os(e, where, f"cannot export the submission: {e.filename or where}: {e.strerror or e}")


def _report_missing(run_dir: Path, out: Path) -> None:
    """Name the benchmark questions the submission lacks (all written to OUT/missing.txt)."""
    from ..data import DatasetError
    from ..leaderboard import missing_questions
    from ..records import read_predictions

    try:
        missing = missing_questions(run_dir)
    except DatasetError as e:
        console.print(f"[yellow]note:[/] cannot check for missing questions ({e})", highlight=False)
        return
    if missing is None:
        console.print(
            "[yellow]note:[/] the run's dataset folder is not available: missing questions not checked", highlight=False
        )
        return
    ids = [q for split in missing.values() for q in split]
    (out / "missing.txt").unlink(missing_ok=True)
    if not ids:
        console.print("every benchmark question has an answer")
        return
    atomic_write_text(out / "missing.txt", "".join(q + "\n" for q in ids))
    per_split = ", ".join(f"{len(v)} {k}" for k, v in missing.items() if v)
    failed = {p.question_id for p in read_predictions(run_dir) if p.failed}
    n_failed = sum(1 for q in ids if q in failed)
    why = []
    if n_failed:
        why.append(f"{n_failed} failed (redo them: h2hmem run … --retry-failed)")
    if n_failed < len(ids):
        why.append(f"{len(ids) - n_failed} never asked (the run chose a subset, or stopped early)")
    console.print(
        f"[yellow]missing:[/] {len(ids)} questions have no answer ({per_split}): {'; '.join(why)}. A leaderboard "
        f"entry needs all of them. First: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}; full list: "
        f"{out / 'missing.txt'}",
        highlight=False,
        soft_wrap=True,
    )


@submission_app.command("validate")
def validate_cmd(
    files: list[Path] = typer.Argument(..., help="prediction_dyadic.json and/or prediction_multiparty.json."),
    data: Path = typer.Option(..., "--data", help="Dataset root with the gold answers."),
    split: str | None = typer.Option(None, "--split", help="Split of a single file whose name does not say it."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as one JSON object."),
    show: int = typer.Option(20, help="How many problems of each severity to list."),
) -> None:
    """Check submission files against the dataset; exit 1 when there are errors."""
    from ..data import SPLITS, DatasetError
    from ..leaderboard import validate_submission

    if split is not None and split not in SPLITS:
        raise fail(f"unknown split {split!r}; expected dyadic or multi-party")
    try:
        report = validate_submission(files, data, split=split)
    except (FileNotFoundError, ValueError, DatasetError) as e:
        raise fail(str(e))
    if as_json:
        out = report.model_dump(exclude={"matched"})
        out.update(ok=report.ok, matched=len(report.matched), counts=report.counts())
        print(json.dumps(out, ensure_ascii=False, indent=1))
        raise typer.Exit(0 if report.ok else 1)
    t = Table(title="Submission files", title_justify="left")
    for c in ("file", "split", "rows"):
        t.add_column(c)
    rows_per_file: dict[str, int] = {}
    for m in report.matched:
        rows_per_file[m.file] = rows_per_file.get(m.file, 0) + 1
    for name, sp in report.files.items():
        t.add_row(name, sp, f"{rows_per_file.get(name, 0)} matched of {report.expected.get(sp, 0)} questions")
    console.print(t)
    for sev, items in (("error", report.errors), ("warning", report.warnings)):
        if not items:
            continue
        counts = ", ".join(f"{code} {n}" for code, n in report.counts()[sev].items())
        console.print(f"[bold]{len(items)} {sev}(s)[/]: {counts}")
        for p in items[:show]:
            console.print(f"  {p}", highlight=False, markup=False, soft_wrap=True)
        if len(items) > show:
            console.print(f"  … {len(items) - show} more (use --json for all)")
    verdict = "[green]VALID[/]" if report.ok else "[red]INVALID[/]"
    console.print(
        f"{verdict}: {len(report.errors)} error(s), {len(report.warnings)} warning(s); "
        f"{len(report.matched)} of {report.rows} rows matched, {len(report.missing)} "
        f"question{'' if len(report.missing) == 1 else 's'} missing"
    )
    raise typer.Exit(0 if report.ok else 1)


@leaderboard_app.command("serve")
def serve_cmd(
    data: Path = typer.Option(..., "--data", help="Dataset root with the gold answers."),
    db: str = typer.Option(
        DEFAULT_DB, "--db", help="SQLAlchemy URL: sqlite:///file.db or postgresql+psycopg://user:pw@host/db."
    ),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="Judge model spec, e.g. openai:gpt-4o-mini (official)."
    ),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible endpoint of the judge."
    ),
    judge_preset: str = typer.Option(
        "paper",
        "--judge-preset",
        help="paper (the official judge request, as the published table was scored) or harmonized "
        "(h2hmem's strict judge). Recorded with each entry's judge scores; entries judged under the "
        "other preset are marked on the public pages.",
    ),
    max_file_mb: float = typer.Option(10.0, "--max-file-mb", help="Upload limit per file (MB)."),
    uploads_per_hour: int = typer.Option(10, "--uploads-per-hour", help="Upload attempts per client address per hour."),
    https_only: bool = typer.Option(
        False, "--https-only-cookies", help="Mark the session cookie Secure (behind HTTPS)."
    ),
    session_idle_minutes: float = typer.Option(
        defaults.LEADERBOARD_SESSION_IDLE_MINUTES,
        "--session-idle-minutes",
        help="An administrator's session ends after this many minutes without a request (> 0).",
    ),
    session_hours: float = typer.Option(
        defaults.LEADERBOARD_SESSION_HOURS,
        "--session-hours",
        help="An administrator's session ends this many hours after login, however active (> 0).",
    ),
) -> None:
    """Serve the leaderboard (upload page, admin review, public ranking, JSON API)."""
    import uvicorn
    from sqlalchemy.exc import SQLAlchemyError

    from ..data import DatasetError
    from ..leaderboard import LeaderboardSettings, create_app
    from ..presets import PRESETS, Preset

    if judge_preset not in PRESETS:
        raise fail(f"--judge-preset must be one of {', '.join(PRESETS)}, not {judge_preset!r}")
    if not math.isfinite(max_file_mb) or max_file_mb <= 0:
        raise fail(f"--max-file-mb: must be a number > 0, got {max_file_mb}")
    try:
        settings = LeaderboardSettings(
            data_root=data,
            db_url=db,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            judge_preset=cast(Preset, judge_preset),  # checked above
            max_file_bytes=int(max_file_mb * 1e6),
            uploads_per_hour=uploads_per_hour,
            https_only_cookies=https_only,
            session_idle_minutes=session_idle_minutes,
            session_hours=session_hours,
        )
    except ValidationError as e:  # names the setting and what it accepts
        raise fail("; ".join(f"{_OPTION.get(str(err['loc'][0]), err['loc'][0])}: {err['msg']}" for err in e.errors()))
    try:
        application = create_app(settings)
    except (FileNotFoundError, ValueError, RuntimeError, DatasetError, SQLAlchemyError, ImportError) as e:
        raise fail(f"cannot start the leaderboard: {e}")
    judge = f"{judge_model}, {judge_preset} preset" if judge_model else "off"
    console.print(f"leaderboard on http://{host}:{port}/ (database {_redact(db)}; judge {judge})", highlight=False)
    uvicorn.run(application, host=host, port=port, log_level="info")


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<url>"


@leaderboard_app.command("create-admin")
def create_admin_cmd(
    db: str = typer.Option(DEFAULT_DB, "--db", help="The leaderboard's database URL."),
    username: str = typer.Option(..., "--username"),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from standard input."),
) -> None:
    """Create an administrator (or set a new password for an existing one)."""
    from sqlalchemy.exc import SQLAlchemyError

    from ..leaderboard import create_admin, open_database

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("Password: ")
        if getpass.getpass("Repeat: ") != password:
            raise fail("the passwords differ")
    try:
        sessions = open_database(db)
        with sessions() as s:
            create_admin(s, username, password)
    except ValueError as e:
        raise fail(str(e))
    except SQLAlchemyError as e:
        raise fail(f"database {_redact(db)}: {e.__class__.__name__}: {getattr(e, 'orig', e)}")
    console.print(f"administrator {username!r} saved in {_redact(db)}", highlight=False)


def _open_db(db: str):
    from sqlalchemy.exc import SQLAlchemyError

    from ..leaderboard import open_database

    try:
        return open_database(db)
    except SQLAlchemyError as e:
        raise fail(f"database {_redact(db)}: {e.__class__.__name__}: {getattr(e, 'orig', e)}")


@leaderboard_app.command("sessions")
def sessions_cmd(
    db: str = typer.Option(DEFAULT_DB, "--db", help="The leaderboard's database URL."),
    username: str | None = typer.Option(None, "--username", help="Only this administrator's sessions."),
    idle_minutes: float = typer.Option(
        defaults.LEADERBOARD_SESSION_IDLE_MINUTES,
        "--idle-minutes",
        help="The server's --session-idle-minutes (for the state column).",
    ),
    hours: float = typer.Option(
        defaults.LEADERBOARD_SESSION_HOURS, "--hours", help="The server's --session-hours (for the state column)."
    ),
) -> None:
    """List administrator sessions (newest first) with their state."""
    import datetime as dt

    from ..leaderboard import SessionPolicy, list_sessions, session_state

    policy = SessionPolicy(idle=dt.timedelta(minutes=idle_minutes), absolute=dt.timedelta(hours=hours))
    with _open_db(db)() as s:
        rows = list_sessions(s, username)
        t = Table(title=f"Sessions in {_redact(db)}", title_justify="left")
        for c in ("id", "admin", "logged in (UTC)", "last request (UTC)", "state", "browser"):
            t.add_column(c)
        for r in rows:
            t.add_row(
                str(r.id),
                r.admin.username,
                f"{r.created_at:%Y-%m-%d %H:%M}",
                f"{r.last_seen_at:%Y-%m-%d %H:%M}",
                session_state(r, policy),
                r.user_agent[:40],
            )
    console.print(t)
    if not rows:
        console.print("no sessions")


@leaderboard_app.command("revoke-sessions")
def revoke_sessions_cmd(
    db: str = typer.Option(DEFAULT_DB, "--db", help="The leaderboard's database URL."),
    session_id: int | None = typer.Option(None, "--id", help="One session (ids from `h2hmem leaderboard sessions`)."),
    username: str | None = typer.Option(None, "--username", help="Every session of this administrator."),
) -> None:
    """End administrator sessions at once (the cookie of a revoked session is refused everywhere)."""
    from ..leaderboard import revoke_session, revoke_sessions_of

    if (session_id is None) == (username is None):
        raise fail("give exactly one of --id and --username")
    why = "revoked from the command line"
    with _open_db(db)() as s:
        if session_id is not None:
            if not revoke_session(s, session_id, why):
                raise fail(f"no open session #{session_id}")
            console.print(f"session #{session_id} revoked")
            return
        assert username is not None  # exactly one of the two was given (checked above)
        try:
            n = revoke_sessions_of(s, username, why)
        except LookupError as e:
            raise fail(str(e))
    console.print(f"{n} session(s) of {username!r} revoked", highlight=False)


@leaderboard_app.command("remove-admin")
def remove_admin_cmd(
    db: str = typer.Option(DEFAULT_DB, "--db", help="The leaderboard's database URL."),
    username: str = typer.Option(..., "--username"),
) -> None:
    """Delete an administrator and all of their sessions."""
    from ..leaderboard import remove_admin

    with _open_db(db)() as s:
        try:
            remove_admin(s, username)
        except LookupError as e:
            raise fail(str(e))
    console.print(f"administrator {username!r} removed with their sessions", highlight=False)
