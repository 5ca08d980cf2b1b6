"""Administrators managing access: the session list (revoke any), removing another administrator,
changing one's own password (which ends every session of that administrator, this one too)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from ._db import Admin, AdminSession
from ._security import MIN_PASSWORD_CHARS, set_password, verify_password
from ._sessions import AdminIdentity, list_admins, list_sessions, remove_admin, revoke_session, session_state
from ._web import PageError, checked_form, form_text, get_db, policy_of, render, require_admin

router = APIRouter(prefix="/admin")


@router.get("/sessions", response_class=HTMLResponse)
def sessions_page(request: Request, db: Session = Depends(get_db), me: AdminIdentity = Depends(require_admin)):
    policy = policy_of(request.app.state.settings)
    rows = [(s, session_state(s, policy)) for s in list_sessions(db)]
    return render(request, "sessions.html", rows=rows, admins=list_admins(db), me=me, policy=policy)


@router.post("/sessions/{session_id}/revoke")
async def revoke(
    request: Request, session_id: int, db: Session = Depends(get_db), me: AdminIdentity = Depends(require_admin)
):
    await checked_form(request)
    if db.get(AdminSession, session_id) is None:
        raise PageError(404, f"No session #{session_id}.")
    await run_in_threadpool(revoke_session, db, session_id, f"revoked by {me.username}")
    if session_id == me.session_id:
        request.session.clear()
        return RedirectResponse("/admin/login", status_code=303)
    return RedirectResponse("/admin/sessions", status_code=303)


@router.post("/admins/{username}/remove")
async def remove(
    request: Request, username: str, db: Session = Depends(get_db), me: AdminIdentity = Depends(require_admin)
):
    await checked_form(request)
    if username == me.username:
        raise PageError(409, "You cannot remove yourself; another administrator (or the command line) can.")
    try:
        await run_in_threadpool(remove_admin, db, username)
    except LookupError as e:
        raise PageError(404, str(e)) from None
    return RedirectResponse("/admin/sessions", status_code=303)


@router.get("/password", response_class=HTMLResponse)
def password_page(request: Request, _: AdminIdentity = Depends(require_admin)):
    return render(request, "password.html", error="", min_chars=MIN_PASSWORD_CHARS)


@router.post("/password", response_class=HTMLResponse)
async def change_password(request: Request, db: Session = Depends(get_db), me: AdminIdentity = Depends(require_admin)):
    form = await checked_form(request)
    current, new, repeat = (form_text(form, k) for k in ("current", "new", "repeat"))
    admin = db.scalar(select(Admin).where(Admin.id == me.admin_id))
    error = ""
    if admin is None or not await run_in_threadpool(verify_password, current, admin.password_hash):
        error = "The current password is wrong."
    elif new != repeat:
        error = "The new passwords differ."
    else:
        try:
            await run_in_threadpool(set_password, db, admin, new)
        except ValueError as e:
            error = f"The new {e}."
    if error:
        return render(request, "password.html", status_code=400, error=error, min_chars=MIN_PASSWORD_CHARS)
    request.session.clear()
    request.state.admin_identity = None  # this session ended with the others
    return render(request, "login.html", error="", notice="Password changed: every session was ended; log in again.")
