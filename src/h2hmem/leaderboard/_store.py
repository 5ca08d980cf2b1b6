"""Entries in the database: creating one from an upload, review transitions, public queries."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import unicodedata
from collections.abc import Sequence
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from ..data import Dataset, Split
from ._db import (
    MAX_DESCRIPTION_CHARS,
    MAX_EMAIL_CHARS,
    MAX_METHOD_CHARS,
    MAX_ORGANISATION_CHARS,
    MAX_REASON_CHARS,
    Entry,
    EntryFile,
    utcnow,
)
from ._format import MAX_ROWS
from ._scoring import QuestionResult, summarise
from ._validate import SubmissionReport, UploadedFile, check_submission

MAX_PROBLEMS_KEPT = 50
"""Validation problems stored with an entry (counts are always complete)."""


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class EntryMeta(BaseModel):
    """What the submitter types: method name (required), organisation, description, e-mail (optional)."""

    model_config = ConfigDict(str_strip_whitespace=True)

    method: str = Field(min_length=1, max_length=MAX_METHOD_CHARS)
    organisation: str = Field(default="", max_length=MAX_ORGANISATION_CHARS)
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)
    email: str = Field(default="", max_length=MAX_EMAIL_CHARS)
    """Contact for the administrators; stored, never shown publicly."""

    @field_validator("email")
    @classmethod
    def _email(cls, v: str) -> str:
        if v and not _EMAIL.match(v):
            raise ValueError("not an e-mail address (name@example.org)")
        return v

    @field_validator("method", "organisation")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if any(ord(c) < 32 for c in v):
            raise ValueError("must be a single line without control characters")
        return v


def meta_errors(e: ValidationError) -> list[str]:
    """Readable messages for form fields: ``"method: String should have at least 1 character"``."""
    names = {"method": "Method name", "organisation": "Organisation", "description": "Description", "email": "E-mail"}
    return [f"{names.get(str(err['loc'][0]), err['loc'][0])}: {err['msg']}" for err in e.errors()]


class TransitionError(ValueError):
    """A review action not allowed from the entry's current status."""


class ReviewFormError(ValueError):
    """A review action whose form is incomplete or too long (a rejection without a reason, a reason
    over :data:`MAX_REASON_CHARS`): the request, not the entry's state, is at fault."""


def predictions_hash(report: SubmissionReport) -> str:
    """SHA-256 of the normalized predictions: the sorted ``(question_id, answer)`` pairs of the
    matched rows, each answer NFC-normalized with runs of white space collapsed and ends trimmed.
    File names, JSON formatting, row order and the ignored fields (``original_answer``,
    ``category``, extra keys) do not change it, so re-uploads of the same answers collide."""
    pairs = sorted(
        (m.question_id, " ".join(unicodedata.normalize("NFC", m.system_answer).split())) for m in report.matched
    )
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def receipt_hash(token: str) -> str:
    """The hex SHA-256 stored for a submitter's status token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_entry(
    db: Session, dataset: Dataset, meta: EntryMeta, files: Sequence[UploadedFile], *, max_rows: int = MAX_ROWS
) -> tuple[Entry | None, SubmissionReport, str]:
    """Validate both files and store a *pending* entry, queued for scoring (``_scorer``).

    The entry's ``content_hash`` is :func:`predictions_hash`; ``duplicate_of`` names the earliest
    entry with the same hash. Returns ``(entry, report, token)`` where ``token`` is the
    submitter's status token (only its hash is stored), or ``(None, report, "")`` when the report
    has errors (nothing stored).
    """
    report = check_submission(files, dataset, require_both=True, max_rows=max_rows)
    if not report.ok:
        return None, report, ""
    digest = predictions_hash(report)
    first = db.scalar(select(Entry.id).where(Entry.content_hash == digest).order_by(Entry.id).limit(1))
    token = secrets.token_urlsafe(24)
    entry = Entry(
        method=meta.method,
        organisation=meta.organisation,
        description=meta.description,
        email=meta.email,
        status="pending",
        score_status="queued",
        summary={},
        validation=validation_summary(report),
        content_hash=digest,
        duplicate_of=first,
        receipt_hash=receipt_hash(token),
    )
    by_name = {f.name: f for f in files}
    for name, split in report.files.items():
        content = by_name[name].content
        entry.files.append(
            EntryFile(split=split, name=name[:255], sha256=hashlib.sha256(content).hexdigest(), content=content)
        )
    db.add(entry)
    db.commit()
    return entry, report, token


def entry_by_receipt(db: Session, token: str) -> Entry | None:
    """The entry whose status token is ``token``, else None."""
    if not token or len(token) > 200:
        return None
    return db.scalar(select(Entry).where(Entry.receipt_hash == receipt_hash(token)))


def submitter_state(entry: Entry) -> str:
    """What the submitter sees: ``queued``, ``scoring``, ``scored`` or ``failed`` while pending
    review, then ``approved``, ``rejected`` or ``withdrawn``."""
    return entry.score_status if entry.status == "pending" else entry.status


def stored_files(entry: Entry) -> list[UploadedFile]:
    """The entry's uploaded files as :class:`UploadedFile` (for re-validation and scoring)."""
    return [UploadedFile(name=f.name, content=f.content, split=cast(Split, f.split)) for f in entry.files]


def validation_summary(report: SubmissionReport) -> dict:
    return {
        "rows": report.rows,
        "matched": len(report.matched),
        "expected": report.expected,
        "missing": len(report.missing),
        "counts": report.counts(),
        "problems": [str(p) for p in report.problems[:MAX_PROBLEMS_KEPT]],
    }


def results_of(entry: Entry) -> list[QuestionResult]:
    return [QuestionResult.model_validate(q, from_attributes=True) for q in entry.questions]


def refresh_summary(entry: Entry) -> None:
    """Recompute ``entry.summary`` from its per-question rows (after judge scores arrive)."""
    entry.summary = summarise(results_of(entry))


_ALLOWED = {
    "approved": ("pending", "rejected", "withdrawn"),
    "rejected": ("pending",),
    "withdrawn": ("pending", "approved"),
}


def set_status(db: Session, entry_id: int, status: str, admin: str, reason: str = "") -> Entry:
    """Approve, reject (``reason`` required) or withdraw an entry.

    Raises:
        LookupError: no such entry.
        TransitionError: not allowed from the current status (or not scored yet, for an approval).
        ReviewFormError: a rejection without a reason, or a reason over ``MAX_REASON_CHARS``.
    """
    entry = db.get(Entry, entry_id)
    if entry is None:
        raise LookupError(f"no entry #{entry_id}")
    if status not in _ALLOWED:
        raise TransitionError(f"unknown action {status!r}")
    if entry.status not in _ALLOWED[status]:
        raise TransitionError(f"entry #{entry_id} is {entry.status}; it cannot become {status}")
    reason = reason.strip()
    if status == "approved" and entry.score_status != "scored":
        raise TransitionError(f"entry #{entry_id} is not scored yet ({entry.score_status}); approve it once scored")
    if status == "rejected" and not reason:
        raise ReviewFormError("a rejection needs a reason")
    if len(reason) > MAX_REASON_CHARS:
        raise ReviewFormError(f"the reason is longer than {MAX_REASON_CHARS} characters")
    entry.status = status
    entry.reason = reason
    entry.reviewed_at = utcnow()
    entry.reviewed_by = admin
    db.commit()
    return entry


def public_entries(db: Session) -> list[Entry]:
    """Approved entries only, oldest first."""
    return list(db.scalars(select(Entry).where(Entry.status == "approved").order_by(Entry.id)))


def public_entry(db: Session, entry_id: int, *, with_questions: bool = False) -> Entry | None:
    """The entry when it is approved, else None (unapproved entries do not exist publicly)."""
    q = select(Entry).where(Entry.id == entry_id, Entry.status == "approved")
    if with_questions:
        q = q.options(selectinload(Entry.questions))
    return db.scalar(q)


def entries_by_status(db: Session, status: str | None = None) -> list[Entry]:
    q = select(Entry).order_by(Entry.id.desc())
    if status:
        q = q.where(Entry.status == status)
    return list(db.scalars(q))
