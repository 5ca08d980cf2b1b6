"""Server-side administrator sessions: created at login, looked up on every admin request,
revoked by logout, by a password change, by another administrator or from the command line.

A session ends at the first of: revocation, :attr:`SessionPolicy.idle` without a request, or
:attr:`SessionPolicy.absolute` after login. The browser's (signed) cookie only carries the
random token; the database keeps its SHA-256, so revoking the row ends every copy of the cookie.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, selectinload

from ._db import Admin, AdminSession, utcnow

KEEP_ENDED = dt.timedelta(days=7)
"""Ended sessions stay listed this long, then are deleted."""


@dataclass(frozen=True)
class SessionPolicy:
    """When sessions end on their own: ``idle`` after the last request, ``absolute`` after login."""

    idle: dt.timedelta = dt.timedelta(minutes=30)
    absolute: dt.timedelta = dt.timedelta(hours=8)


@dataclass(frozen=True)
class AdminIdentity:
    """Who is logged in: the admin's id and name, and the session row's id."""

    admin_id: int
    username: str
    session_id: int


def token_hash(token: str) -> str:
    """The hex SHA-256 stored for a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


def start_session(db: Session, admin: Admin, user_agent: str = "") -> str:
    """A new session for ``admin``; returns the token to put in the cookie (shown nowhere else)."""
    db.execute(delete(AdminSession).where(AdminSession.last_seen_at < utcnow() - KEEP_ENDED))
    token = secrets.token_urlsafe(32)
    db.add(AdminSession(token_hash=token_hash(token), admin_id=admin.id, user_agent=user_agent[:200]))
    db.commit()
    return token


def session_state(s: AdminSession, policy: SessionPolicy, now: dt.datetime | None = None) -> str:
    """``"active"``, ``"revoked (<why>)"``, ``"idle timeout"`` or ``"expired"``."""
    now = now or utcnow()
    if s.revoked_at is not None:
        return f"revoked ({s.revoked_why})" if s.revoked_why else "revoked"
    if now - s.created_at > policy.absolute:
        return "expired"
    if now - s.last_seen_at > policy.idle:
        return "idle timeout"
    return "active"


def resume_session(db: Session, token: str, policy: SessionPolicy) -> AdminIdentity | None:
    """The identity of an active session with ``token`` (its last-seen time refreshed), else None."""
    s = db.scalar(
        select(AdminSession)
        .where(AdminSession.token_hash == token_hash(token))
        .options(selectinload(AdminSession.admin))
    )
    if s is None:
        return None
    now = utcnow()
    if session_state(s, policy, now) != "active":
        return None
    s.last_seen_at = now
    db.commit()
    return AdminIdentity(admin_id=s.admin_id, username=s.admin.username, session_id=s.id)


def revoke_session(db: Session, session_id: int, why: str) -> bool:
    """End one session; False when there is no such session or it had already been revoked."""
    n = db.execute(
        update(AdminSession)
        .where(AdminSession.id == session_id, AdminSession.revoked_at.is_(None))
        .values(revoked_at=utcnow(), revoked_why=why[:64])
    ).rowcount  # type: ignore[attr-defined]  # stubs type execute() as Result; an UPDATE gives a CursorResult
    db.commit()
    return bool(n)


def revoke_admin_sessions(db: Session, admin_id: int, why: str) -> int:
    """End every session of one administrator; returns how many were still open. Commits."""
    n = db.execute(
        update(AdminSession)
        .where(AdminSession.admin_id == admin_id, AdminSession.revoked_at.is_(None))
        .values(revoked_at=utcnow(), revoked_why=why[:64])
    ).rowcount  # type: ignore[attr-defined]  # stubs type execute() as Result; an UPDATE gives a CursorResult
    db.commit()
    return n


def revoke_sessions_of(db: Session, username: str, why: str) -> int:
    """End every session of the administrator named ``username``; returns how many were open.

    Raises:
        LookupError: no administrator of that name.
    """
    admin = db.scalar(select(Admin).where(Admin.username == username))
    if admin is None:
        raise LookupError(f"no administrator {username!r}")
    return revoke_admin_sessions(db, admin.id, why)


def list_sessions(db: Session, username: str | None = None) -> list[AdminSession]:
    """Sessions (newest first) with their admin loaded, optionally of one administrator."""
    q = select(AdminSession).options(selectinload(AdminSession.admin)).order_by(AdminSession.id.desc())
    if username is not None:
        q = q.join(Admin).where(Admin.username == username)
    return list(db.scalars(q))


def list_admins(db: Session) -> list[Admin]:
    """Every administrator, by name."""
    return list(db.scalars(select(Admin).order_by(Admin.username)))


def remove_admin(db: Session, username: str) -> None:
    """Delete an administrator and all their sessions.

    Raises:
        LookupError: no administrator of that name.
    """
    admin = db.scalar(select(Admin).where(Admin.username == username))
    if admin is None:
        raise LookupError(f"no administrator {username!r}")
    db.execute(delete(AdminSession).where(AdminSession.admin_id == admin.id))
    db.delete(admin)
    db.commit()
