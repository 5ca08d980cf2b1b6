"""Entries in the database: creating one from an upload, review transitions, public queries."""

from __future__ import annotations

import hashlib
from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from ..data import Dataset
from ._db import (
    MAX_DESCRIPTION_CHARS, MAX_METHOD_CHARS, MAX_ORGANISATION_CHARS, MAX_REASON_CHARS, Entry, EntryFile, QuestionScore, utcnow,
)
from ._format import MAX_ROWS
from ._scoring import QuestionResult, score_submission, summarise
from ._validate import SubmissionReport, UploadedFile, check_submission

MAX_PROBLEMS_KEPT = 50
"""Validation problems stored with an entry (counts are always complete)."""


class EntryMeta(BaseModel):
    """What the submitter types: method name (required), organisation, description."""

    model_config = ConfigDict(str_strip_whitespace=True)

    method: str = Field(min_length=1, max_length=MAX_METHOD_CHARS)
    organisation: str = Field(default="", max_length=MAX_ORGANISATION_CHARS)
    description: str = Field(default="", max_length=MAX_DESCRIPTION_CHARS)

    @field_validator("method", "organisation")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if any(ord(c) < 32 for c in v):
            raise ValueError("must be a single line without control characters")
        return v


def meta_errors(e: ValidationError) -> list[str]:
    """Readable messages for form fields: ``"method: String should have at least 1 character"``."""
    names = {"method": "Method name", "organisation": "Organisation", "description": "Description"}
    return [f"{names.get(str(err['loc'][0]), err['loc'][0])}: {err['msg']}" for err in e.errors()]


class TransitionError(ValueError):
    """A review action not allowed from the entry's current status."""


def create_entry(db: Session, dataset: Dataset, meta: EntryMeta, files: Sequence[UploadedFile], *,
                 max_rows: int = MAX_ROWS) -> tuple[Entry | None, SubmissionReport]:
    """Validate both files, score them against ``dataset`` and store a *pending* entry.

    Returns ``(None, report)`` when the report has errors (nothing stored), else ``(entry, report)``.
    """
    report = check_submission(files, dataset, require_both=True, max_rows=max_rows)
    if not report.ok:
        return None, report
    results = score_submission(report, dataset)
    entry = Entry(
        method=meta.method, organisation=meta.organisation, description=meta.description, status="pending",
        summary=summarise(results), validation=validation_summary(report),
    )
    by_name = {f.name: f for f in files}
    for name, split in report.files.items():
        content = by_name[name].content
        entry.files.append(EntryFile(split=split, name=name[:255], sha256=hashlib.sha256(content).hexdigest(), content=content))
    entry.questions = [QuestionScore(**r.model_dump()) for r in results]
    db.add(entry)
    db.commit()
    return entry, report


def validation_summary(report: SubmissionReport) -> dict:
    return {
        "rows": report.rows, "matched": len(report.matched), "expected": report.expected,
        "missing": len(report.missing), "counts": report.counts(),
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
        TransitionError: not allowed from the current status, or a rejection without a reason.
    """
    entry = db.get(Entry, entry_id)
    if entry is None:
        raise LookupError(f"no entry #{entry_id}")
    if status not in _ALLOWED:
        raise TransitionError(f"unknown action {status!r}")
    if entry.status not in _ALLOWED[status]:
        raise TransitionError(f"entry #{entry_id} is {entry.status}; it cannot become {status}")
    reason = reason.strip()
    if status == "rejected" and not reason:
        raise TransitionError("a rejection needs a reason")
    if len(reason) > MAX_REASON_CHARS:
        raise TransitionError(f"the reason is longer than {MAX_REASON_CHARS} characters")
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
