"""Administration: login and logout, review queue, approve / reject with a reason / withdraw.

Every route but the login page depends on :func:`require_admin`, which checks the server-side
session on each request: without one, HTML requests are redirected to the login page and API
requests get 401 (``_app``), before any form is read. Accounts are created from the command line
(``h2hmem leaderboard create-admin``); sessions and other admins are managed in ``_accounts``.
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ._db import STATUSES, Entry
from ._scoring import GROUP_ORDER, METRICS, group_label
from ._security import authenticate, client_key, over_limit, record_event, retry_after
from ._sessions import AdminIdentity, revoke_session, start_session
from ._store import ReviewFormError, TransitionError, entries_by_status, set_status
from ._views import METRIC_LABELS, subtype_chart
from ._web import EntryId, PageError, checked_form, current_admin, form_text, get_db, render, require_admin

router = APIRouter()


@router.get("/admin/login", response_class=HTMLResponse)
def login_page(request: Request):
    return render(request, "login.html", error="", notice="")


@router.post("/admin/login", response_class=HTMLResponse)
async def login(request: Request, db: Session = Depends(get_db)):
    s = request.app.state.settings
    form = await checked_form(request)
    client = client_key(request.app.state.secret, request.client.host if request.client else "unknown")
    window = dt.timedelta(minutes=15)
    until = await run_in_threadpool(over_limit, db, "login-fail", client, s.logins_per_15min, window)
    if until is not None:
        page = render(
            request,
            "login.html",
            status_code=429,
            notice="",
            error="Too many failed logins from your address; wait 15 minutes.",
        )
        page.headers.update(retry_after(until))
        return page
    username, password = form_text(form, "username"), form_text(form, "password")
    admin = None
    if username and password and len(username) <= 64 and len(password) <= 1024:
        admin = await run_in_threadpool(authenticate, db, username, password)
    if admin is None:
        await run_in_threadpool(record_event, db, "login-fail", client)
        return render(request, "login.html", status_code=401, error="Wrong username or password.", notice="")
    token = await run_in_threadpool(start_session, db, admin, request.headers.get("user-agent", ""))
    request.session.clear()  # a fresh cookie session (and CSRF token) after login
    request.session["sid"] = token
    return RedirectResponse("/admin", status_code=303)


@router.post("/admin/logout")
async def logout(request: Request, db: Session = Depends(get_db)):
    await checked_form(request)
    identity = current_admin(request)
    if identity is not None:
        await run_in_threadpool(revoke_session, db, identity.session_id, "logged out")
    request.session.clear()
    return RedirectResponse("/", status_code=303)


@router.get("/admin", response_class=HTMLResponse)
def queue(
    request: Request, status: str = "pending", db: Session = Depends(get_db), _: AdminIdentity = Depends(require_admin)
):
    if status not in (*STATUSES, "all"):
        raise PageError(400, f"unknown status {status!r}")
    entries = entries_by_status(db, None if status == "all" else status)
    return render(request, "admin.html", entries=entries, status=status, statuses=STATUSES)


@router.get("/api/admin/entries")
def api_queue(status: str = "pending", db: Session = Depends(get_db), _: AdminIdentity = Depends(require_admin)):
    """The review queue as JSON (admins only): id, method, status, score status, duplicate_of, e-mail."""
    if status not in (*STATUSES, "all"):
        raise PageError(400, f"unknown status {status!r}")
    return {
        "entries": [
            {
                "id": e.id,
                "method": e.method,
                "organisation": e.organisation,
                "email": e.email,
                "status": e.status,
                "score_status": e.score_status,
                "duplicate_of": e.duplicate_of,
                "reason": e.reason,
            }
            for e in entries_by_status(db, None if status == "all" else status)
        ]
    }


@router.get("/admin/entries/{entry_id}", response_class=HTMLResponse)
def entry_review(
    request: Request, entry_id: EntryId, db: Session = Depends(get_db), _: AdminIdentity = Depends(require_admin)
):
    e = db.get(Entry, entry_id)
    if e is None:
        raise PageError(404, f"No entry #{entry_id}.")
    return render(
        request,
        "entry.html",
        entry=e,
        groups=[(g, group_label(g)) for g in GROUP_ORDER if g in e.summary],
        metrics=METRICS,
        metric_labels=METRIC_LABELS,
        chart=subtype_chart(e.summary),
        admin_view=True,
        public_ids=set(),
    )


async def _act(request: Request, db: Session, entry_id: int, status: str, admin: AdminIdentity) -> RedirectResponse:
    form = await checked_form(request)
    try:
        entry = await run_in_threadpool(set_status, db, entry_id, status, admin.username, form_text(form, "reason"))
    except LookupError as e:
        raise PageError(404, str(e)) from None
    except ReviewFormError as e:  # the form, not the entry's state
        raise PageError(422, str(e)) from None
    except TransitionError as e:
        raise PageError(409, str(e)) from None
    judge = request.app.state.judge
    if status == "approved" and judge is not None and entry.judge_status in ("none", "failed"):
        await run_in_threadpool(judge.enqueue, entry_id)
    return RedirectResponse(f"/admin/entries/{entry_id}", status_code=303)


@router.post("/admin/entries/{entry_id}/approve")
async def approve(
    request: Request, entry_id: EntryId, db: Session = Depends(get_db), admin: AdminIdentity = Depends(require_admin)
):
    return await _act(request, db, entry_id, "approved", admin)


@router.post("/admin/entries/{entry_id}/reject")
async def reject(
    request: Request, entry_id: EntryId, db: Session = Depends(get_db), admin: AdminIdentity = Depends(require_admin)
):
    return await _act(request, db, entry_id, "rejected", admin)


@router.post("/admin/entries/{entry_id}/withdraw")
async def withdraw(
    request: Request, entry_id: EntryId, db: Session = Depends(get_db), admin: AdminIdentity = Depends(require_admin)
):
    return await _act(request, db, entry_id, "withdrawn", admin)


@router.post("/admin/entries/{entry_id}/rejudge")
async def rejudge(
    request: Request, entry_id: EntryId, db: Session = Depends(get_db), _: AdminIdentity = Depends(require_admin)
):
    await checked_form(request)
    judge = request.app.state.judge
    if judge is None:
        raise PageError(409, "No judge model is configured (start the server with --judge-model).")
    if db.get(Entry, entry_id) is None:
        raise PageError(404, f"No entry #{entry_id}.")
    await run_in_threadpool(judge.enqueue, entry_id)
    return RedirectResponse(f"/admin/entries/{entry_id}", status_code=303)
