"""The upload page (both prediction files plus metadata; every refusal is shown on the page), the
submitter's receipt and the status page behind an unguessable token."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ..data import Split
from ._db import Entry
from ._format import FILE_NAMES
from ._scoring import GROUP_ORDER, METRICS, group_label
from ._security import client_key, over_limit, record_event, retry_after
from ._store import EntryMeta, create_entry, entry_by_receipt, meta_errors, submitter_state
from ._validate import UploadedFile
from ._views import METRIC_LABELS
from ._web import PageError, checked_form, form_text, get_db, render

router = APIRouter()
FIELDS: dict[Split, str] = {"dyadic": "file_dyadic", "multi-party": "file_multiparty"}
"""Form field of each split's file."""


def human_size(n: int) -> str:
    """``10000000`` → ``"10 MB"``, ``1500`` → ``"1.5 kB"`` (decimal units)."""
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _form_page(
    request: Request,
    status: int = 200,
    errors: list[str] | None = None,
    problems: list[str] | None = None,
    values: dict | None = None,
) -> HTMLResponse:
    s = request.app.state.settings
    return render(
        request,
        "submit.html",
        status_code=status,
        errors=errors or [],
        problems=problems or [],
        values=values or {},
        file_names=FILE_NAMES,
        fields=FIELDS,
        max_size=human_size(s.max_file_bytes),
        per_hour=s.uploads_per_hour,
    )


@router.get("/submit", response_class=HTMLResponse)
def submit_page(request: Request):
    return _form_page(request)


async def _read_file(upload: object, split: Split, limit: int, errors: list[str]) -> UploadedFile | None:
    if not isinstance(upload, UploadFile) or not upload.filename:
        errors.append(f"The {split} file ({FILE_NAMES[split]}) is required.")
        return None
    data = await upload.read(limit + 1)
    if len(data) > limit:
        errors.append(f"The {split} file {upload.filename!r} is larger than the limit of {human_size(limit)} per file.")
        return None
    return UploadedFile(name=FILE_NAMES[split], content=data, split=split)


@router.post("/submit", response_class=HTMLResponse)
async def submit(request: Request, db: Session = Depends(get_db)):
    s = request.app.state.settings
    form = await checked_form(request)
    values = {k: form_text(form, k) for k in ("method", "organisation", "description", "email")}
    client = client_key(request.app.state.secret, request.client.host if request.client else "unknown")
    until = await run_in_threadpool(over_limit, db, "upload", client, s.uploads_per_hour, dt.timedelta(hours=1))
    if until is not None:
        page = _form_page(
            request,
            429,
            [
                f"Too many uploads from your address: at most {s.uploads_per_hour} per hour. "
                f"Try again after {until:%H:%M} UTC."
            ],
            values=values,
        )
        page.headers.update(retry_after(until))
        return page
    await run_in_threadpool(record_event, db, "upload", client)
    errors: list[str] = []
    try:
        meta = EntryMeta.model_validate(values)
    except ValidationError as e:
        meta = None
        errors += meta_errors(e)
    read = [await _read_file(form.get(FIELDS[sp]), sp, s.max_file_bytes, errors) for sp in FIELDS]
    if errors or meta is None:
        too_big = any("larger than the limit" in e for e in errors)
        return _form_page(request, 413 if too_big else 400, errors, values=values)
    files = [f for f in read if f is not None]  # all of them: a missing file adds an error
    entry, report, token = await run_in_threadpool(
        create_entry, db, request.app.state.dataset, meta, files, max_rows=s.max_rows
    )
    if entry is None:
        n = len(report.errors)
        return _form_page(
            request,
            400,
            [
                f"The files were refused: {n} error{'s' if n != 1 else ''} (first ones below). "
                "Fix them and upload again; `h2hmem submission validate` shows the same report."
            ],
            problems=[str(p) for p in report.errors[:50]],
            values=values,
        )
    await run_in_threadpool(request.app.state.scorer.submit, entry.id)
    status_url = str(request.url_for("status_page", token=token))
    resp = render(
        request,
        "submitted.html",
        entry=entry,
        status_url=status_url,
        state_text=STATE_TEXT["queued"],
        warnings=[str(p) for p in report.warnings[:50]],
        n_warnings=len(report.warnings),
    )
    resp.headers["Cache-Control"] = "no-store"
    return resp


STATE_TEXT = {
    "queued": "queued: waiting to be scored",
    "scoring": "scoring: being scored on the server",
    "scored": "scored: waiting for an administrator's review",
    "failed": "scoring failed: an administrator will look at it",
    "approved": "approved: shown on the public ranking",
    "rejected": "rejected",
    "withdrawn": "withdrawn from the ranking",
}
"""What each submitter state means, in words."""


def _receipt_or_404(db: Session, token: str) -> Entry:
    e = entry_by_receipt(db, token)
    if e is None:
        raise PageError(404, "No submission has this status link (check that the whole link was copied).")
    return e


def receipt_status(e: Entry) -> dict:
    """The status JSON a submitter sees: no e-mail, no review details beyond a rejection's reason."""
    state = submitter_state(e)
    scored = e.score_status == "scored"
    return {
        "id": e.id,
        "method": e.method,
        "state": state,
        "reason": e.reason if state in ("rejected", "withdrawn") else "",
        "submitted": e.created_at.isoformat(timespec="seconds") + "Z",
        "duplicate_of": e.duplicate_of,
        "judge_status": e.judge_status,
        "scores": {g: e.summary[g] for g in GROUP_ORDER if g in e.summary} if scored else None,
    }


@router.get("/status/{token}", response_class=HTMLResponse)
def status_page(request: Request, token: str, db: Session = Depends(get_db)):
    e = _receipt_or_404(db, token)
    state = submitter_state(e)
    resp = render(
        request,
        "status.html",
        entry=e,
        state=state,
        state_text=STATE_TEXT[state],
        scored=e.score_status == "scored",
        groups=[(g, group_label(g)) for g in GROUP_ORDER if g in e.summary],
        metrics=METRICS,
        metric_labels=METRIC_LABELS,
        refresh=state in ("queued", "scoring"),
    )
    resp.headers["Cache-Control"] = "no-store"
    return resp


@router.get("/api/status/{token}")
def status_api(token: str, db: Session = Depends(get_db)):
    """The submitter's view of their entry: ``{"id", "method", "state", "reason", "submitted",
    "duplicate_of", "judge_status", "scores"}`` (``scores`` null until scored)."""
    return JSONResponse(receipt_status(_receipt_or_404(db, token)), headers={"Cache-Control": "no-store"})
