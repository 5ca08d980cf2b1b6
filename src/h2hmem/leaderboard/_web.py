"""Helpers every leaderboard page module shares: rendering, errors, forms, database and the
logged-in administrator. ``_app`` and the route modules (``_public``, ``_submit``, ``_admin``,
``_accounts``) all import from here, never from each other.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Annotated, Any, cast

import jinja2
from fastapi import HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from ._security import csrf_ok, csrf_token
from ._sessions import AdminIdentity, SessionPolicy, resume_session

EntryId = Annotated[int, PathParam(ge=1, le=2**63 - 1, description="entry number (a SQLite integer)")]
"""An entry number in a URL: one SQLite cannot hold (``/entries/9223372036854775808``) is a 422 with
a message, not an ``OverflowError`` in the database driver."""


class PageError(HTTPException):
    """An error shown to the user as a page (or JSON under /api/) with a plain message."""


class LoginRequired(Exception):
    """No valid admin session: HTML requests are redirected to the login page, API requests get 401."""


_UNSET = object()


def is_api(path: str) -> bool:
    """Paths answered in JSON (errors included)."""
    return path.startswith("/api/")


def policy_of(settings: Any) -> SessionPolicy:
    """The session timeouts of :class:`LeaderboardSettings` ``settings``."""
    return SessionPolicy(
        idle=dt.timedelta(minutes=settings.session_idle_minutes), absolute=dt.timedelta(hours=settings.session_hours)
    )


def current_admin(request: Request) -> AdminIdentity | None:
    """The administrator whose session the request's cookie names, when that session is still
    active in the database (looked up once per request); None otherwise."""
    cached = getattr(request.state, "admin_identity", _UNSET)
    if cached is not _UNSET:
        return cast("AdminIdentity | None", cached)  # set below, once per request
    token = request.session.get("sid")
    identity = None
    if isinstance(token, str) and token:
        with request.app.state.sessions() as db:
            identity = resume_session(db, token, policy_of(request.app.state.settings))
        if identity is None:
            request.session.pop("sid", None)
    request.state.admin_identity = identity
    return identity


def require_admin(request: Request) -> AdminIdentity:
    """FastAPI dependency: the logged-in administrator.

    Raises:
        LoginRequired: no active session (never ``200``, whatever the route or method).
    """
    identity = current_admin(request)
    if identity is None:
        raise LoginRequired
    return identity


def get_db(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as db:
        yield db


def render(request: Request, template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    """Render ``template`` with the common context (site title, the server's judge preset, whether
    it runs a judge, admin name, CSRF token)."""
    env: jinja2.Environment = request.app.state.templates
    ctx.setdefault("site_title", request.app.state.settings.title)
    ctx.setdefault("judge_preset", request.app.state.settings.judge_preset)
    ctx.setdefault("judge_enabled", request.app.state.judge is not None)
    identity = current_admin(request)
    ctx["admin"] = identity.username if identity else None
    ctx["csrf"] = csrf_token(request.session)
    ctx["request_path"] = request.url.path
    return HTMLResponse(env.get_template(template).render(**ctx), status_code=status_code)


def error_page(app: Any, status: int, message: str, path: str) -> HTMLResponse:
    """The error page without a session (used where no request session exists, e.g. in middleware)."""
    html = app.state.templates.get_template("error.html").render(
        site_title=app.state.settings.title, admin=None, csrf="", request_path=path, message=message, status=status
    )
    return HTMLResponse(html, status_code=status)


async def checked_form(request: Request) -> Any:
    """The POSTed form after its CSRF token was checked.

    Raises:
        PageError: 403 when the token is missing or wrong.
    """
    form = await request.form(max_files=4, max_fields=20)
    if not csrf_ok(request.session, form.get("csrf_token")):
        raise PageError(
            403,
            "This form has no valid security token (CSRF). Reload the page and submit again; cookies must be enabled.",
        )
    return form


def form_text(form: Any, name: str) -> str:
    """A text field of a form ('' when absent or a file)."""
    v = form.get(name)
    return v if isinstance(v, str) else ""
