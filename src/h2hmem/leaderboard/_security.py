"""Password hashing, admin accounts, CSRF tokens, the session secret and per-client rate limits."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import hmac
import math
import os
import re
import secrets

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from ._db import Admin, ClientEvent, Setting, utcnow
from ._sessions import revoke_admin_sessions
from ._settings import SECRET_ENV

# scrypt cost: n=2**14, r=8, p=1 — the parameters recommended for interactive logins
# (RFC 7914 §2, and Python's hashlib docs); 16 MiB of memory, ~50 ms per hash.
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_USERNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
MIN_PASSWORD_CHARS = 10


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$<salt>$<hash>`` (base64), with a random 16-byte salt."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${b64(salt)}${b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """True when ``password`` matches a :func:`hash_password` string (constant-time compare)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        want = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(want)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise ValueError(f"password must have at least {MIN_PASSWORD_CHARS} characters")


def create_admin(db: Session, username: str, password: str) -> Admin:
    """Create an administrator, or reset the password of an existing one (which ends all of
    that administrator's sessions).

    Raises:
        ValueError: a username outside ``[A-Za-z0-9_.@-]{1,64}`` or a password shorter than 10
            characters.
    """
    if not _USERNAME.match(username):
        raise ValueError("username must be 1-64 characters from letters, digits and _ . @ -")
    _check_password(password)
    admin = db.scalar(select(Admin).where(Admin.username == username))
    if admin is None:
        admin = Admin(username=username, password_hash=hash_password(password))
        db.add(admin)
        db.commit()
        return admin
    set_password(db, admin, password)
    return admin


def set_password(db: Session, admin: Admin, password: str) -> int:
    """Store a new password for ``admin`` and revoke all of their sessions; returns how many were open.

    Raises:
        ValueError: a password shorter than 10 characters.
    """
    _check_password(password)
    admin.password_hash = hash_password(password)
    db.commit()
    return revoke_admin_sessions(db, admin.id, "password changed")


def authenticate(db: Session, username: str, password: str) -> Admin | None:
    admin = db.scalar(select(Admin).where(Admin.username == username))
    if admin is None:
        verify_password(password, _dummy_hash())  # same work whether or not the name exists
        return None
    return admin if verify_password(password, admin.password_hash) else None


@functools.lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return hash_password(secrets.token_hex(8))


def session_secret(db: Session, configured: str | None) -> str:
    """The configured secret, else env ``H2HMEM_LEADERBOARD_SECRET``, else one generated once and kept in the DB."""
    if configured:
        return configured
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    row = db.get(Setting, "session_secret")
    if row is None:
        row = Setting(key="session_secret", value=secrets.token_urlsafe(48))
        db.add(row)
        db.commit()
    return row.value


def csrf_token(session: dict) -> str:
    """The session's CSRF token (created on first use)."""
    tok = session.get("csrf")
    if not tok:
        tok = session["csrf"] = secrets.token_urlsafe(32)
    return tok


def csrf_ok(session: dict, submitted: object) -> bool:
    tok = session.get("csrf")
    return isinstance(tok, str) and bool(tok) and isinstance(submitted, str) and hmac.compare_digest(tok, submitted)


def client_key(secret: str, address: str) -> str:
    """A keyed hash of a client address: rate limits work without storing addresses."""
    return hmac.new(secret.encode(), address.encode(), hashlib.sha256).hexdigest()[:32]


def over_limit(db: Session, kind: str, client: str, limit: int, window: dt.timedelta) -> dt.datetime | None:
    """When ``client`` already has ``limit`` events of ``kind`` in the last ``window``, the time
    the oldest one leaves the window (naive UTC); else None."""
    since = utcnow() - window
    q = select(func.count(), func.min(ClientEvent.at)).where(
        ClientEvent.kind == kind, ClientEvent.client == client, ClientEvent.at > since
    )
    n, oldest = db.execute(q).one()
    return oldest + window if n >= limit else None


def retry_after(until: dt.datetime) -> dict[str, str]:
    """The ``Retry-After`` header (whole seconds, at least 1) of a refusal that lasts until ``until``
    (naive UTC, as :func:`over_limit` returns it)."""
    return {"Retry-After": str(max(1, math.ceil((until - utcnow()).total_seconds())))}


EVENT_RETENTION = dt.timedelta(days=1)
"""Rate-limit events older than this are deleted (every window is at most an hour)."""


def record_event(db: Session, kind: str, client: str) -> None:
    """Count one event of ``kind`` for ``client``; events past :data:`EVENT_RETENTION` are dropped."""
    db.execute(delete(ClientEvent).where(ClientEvent.at < utcnow() - EVENT_RETENTION))
    db.add(ClientEvent(kind=kind, client=client))
    db.commit()
