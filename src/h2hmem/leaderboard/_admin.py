"""Administration: login, review queue, approve / reject with a reason / withdraw.

Accounts are created from the command line only (``h2hmem leaderboard create-admin``).
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ._app import PageError, checked_form, render
from ._db import STATUSES, Entry
from ._public import get_db
from ._scoring import GROUP_ORDER, METRICS, group_label
from ._security import authenticate, client_key, over_limit, record_event
from ._store import TransitionError, entries_by_status, set_status
from ._views import METRIC_LABELS, subtype_chart

router = APIRouter(prefix="/admin")


def require_admin(request: Request) -> str:
    """The logged-in administrator's name.

    Raises:
        PageError: 401 when nobody is logged in.
    """
    name = request.session.get("admin")
    if not name:
        raise PageError(401, "Administrators only: log in at /admin/login first.")
    return name


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request):
    return render(request, "login.html", error="")


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, db: Session = Depends(get_db)):
    s = request.app.state.settings
    form = await checked_form(request)
    client = client_key(request.app.state.secret, request.client.host if request.client else "unknown")
    window = dt.timedelta(minutes=15)
    if await run_in_threadpool(over_limit, db, "login-fail", client, s.logins_per_15min, window) is not None:
        return render(request, "login.html", status_code=429, error="Too many failed logins from your address; wait 15 minutes.")
    username, password = form.get("username"), form.get("password")
    admin = None
    if isinstance(username, str) and isinstance(password, str) and len(username) <= 64 and len(password) <= 1024:
        admin = await run_in_threadpool(authenticate, db, username, password)
    if admin is None:
        await run_in_threadpool(record_event, db, "login-fail", client)
        return render(request, "login.html", status_code=401, error="Wrong username or password.")
    request.session.clear()  # a fresh session (and CSRF token) after login
    request.session["admin"] = admin.username
    return RedirectResponse("/admin", status_code=303)


@router.post("/logout")
async def logout(request: Request):
    await checked_form(request)
    request.session.clear()
    return RedirectResponse("/", status_code=303)


@router.get("", response_class=HTMLResponse)
def queue(request: Request, status: str = "pending", db: Session = Depends(get_db)):
    if not request.session.get("admin"):
        return RedirectResponse("/admin/login", status_code=303)
    if status not in (*STATUSES, "all"):
        raise PageError(400, f"unknown status {status!r}")
    entries = entries_by_status(db, None if status == "all" else status)
    return render(request, "admin.html", entries=entries, status=status, statuses=STATUSES)


@router.get("/entries/{entry_id}", response_class=HTMLResponse)
def entry_review(request: Request, entry_id: int, db: Session = Depends(get_db)):
    require_admin(request)
    e = db.get(Entry, entry_id)
    if e is None:
        raise PageError(404, f"No entry #{entry_id}.")
    return render(request, "entry.html", entry=e, groups=[(g, group_label(g)) for g in GROUP_ORDER if g in e.summary],
                  metrics=METRICS, metric_labels=METRIC_LABELS, chart=subtype_chart(e.summary), admin_view=True,
                  judge_enabled=request.app.state.judge is not None)


async def _act(request: Request, db: Session, entry_id: int, status: str) -> RedirectResponse:
    admin = require_admin(request)
    form = await checked_form(request)
    reason = form.get("reason") if isinstance(form.get("reason"), str) else ""
    try:
        entry = await run_in_threadpool(set_status, db, entry_id, status, admin, reason)
    except LookupError as e:
        raise PageError(404, str(e)) from None
    except TransitionError as e:
        raise PageError(409, str(e)) from None
    judge = request.app.state.judge
    if status == "approved" and judge is not None and entry.judge_status in ("none", "failed"):
        await run_in_threadpool(judge.enqueue, entry_id)
    return RedirectResponse(f"/admin/entries/{entry_id}", status_code=303)


@router.post("/entries/{entry_id}/approve")
async def approve(request: Request, entry_id: int, db: Session = Depends(get_db)):
    return await _act(request, db, entry_id, "approved")


@router.post("/entries/{entry_id}/reject")
async def reject(request: Request, entry_id: int, db: Session = Depends(get_db)):
    return await _act(request, db, entry_id, "rejected")


@router.post("/entries/{entry_id}/withdraw")
async def withdraw(request: Request, entry_id: int, db: Session = Depends(get_db)):
    return await _act(request, db, entry_id, "withdrawn")


@router.post("/entries/{entry_id}/rejudge")
async def rejudge(request: Request, entry_id: int, db: Session = Depends(get_db)):
    require_admin(request)
    await checked_form(request)
    judge = request.app.state.judge
    if judge is None:
        raise PageError(409, "No judge model is configured (start the server with --judge-model).")
    if db.get(Entry, entry_id) is None:
        raise PageError(404, f"No entry #{entry_id}.")
    await run_in_threadpool(judge.enqueue, entry_id)
    return RedirectResponse(f"/admin/entries/{entry_id}", status_code=303)
