"""Public pages, downloads and the JSON API. Only approved entries exist here."""

from __future__ import annotations

import math

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from sqlalchemy.orm import Session

from ..data import SPLITS, TaskType
from ._scoring import GROUP_ORDER, METRICS, group_label
from ._store import public_entries, public_entry
from ._views import (
    INFO_COLUMNS,
    METRIC_LABELS,
    column_titles,
    entry_public,
    questions_csv,
    ranking,
    ranking_columns,
    ranking_csv,
    subtype_chart,
)
from ._web import EntryId, PageError, get_db, render

router = APIRouter()
QUESTIONS_PER_PAGE = 100


def _entry_or_404(db: Session, entry_id: int, with_questions: bool = False):
    e = public_entry(db, entry_id, with_questions=with_questions)
    if e is None:
        raise PageError(404, f"No public entry #{entry_id}.")
    return e


@router.get("/", response_class=HTMLResponse)
def ranking_page(
    request: Request, metric: str = "f1", sort: str = "all", dir: str = "desc", db: Session = Depends(get_db)
):
    try:
        rows = ranking(public_entries(db), metric, sort, dir != "asc")
    except ValueError as e:
        raise PageError(400, str(e)) from None
    return render(
        request,
        "index.html",
        rows=rows,
        metric=metric,
        metric_labels=METRIC_LABELS,
        sort=sort,
        dir=dir,
        columns=ranking_columns(),
        info_columns=INFO_COLUMNS,
        column_titles=column_titles(),
    )


@router.get("/entries/{entry_id}", response_class=HTMLResponse)
def entry_page(request: Request, entry_id: EntryId, db: Session = Depends(get_db)):
    e = _entry_or_404(db, entry_id)
    public_dup = e.duplicate_of is not None and public_entry(db, e.duplicate_of) is not None
    return render(
        request,
        "entry.html",
        entry=e,
        groups=[(g, group_label(g)) for g in GROUP_ORDER if g in e.summary],
        metrics=METRICS,
        metric_labels=METRIC_LABELS,
        chart=subtype_chart(e.summary),
        admin_view=False,
        public_ids={e.duplicate_of} if public_dup else set(),
    )


@router.get("/entries/{entry_id}/questions", response_class=HTMLResponse)
def questions_page(
    request: Request,
    entry_id: EntryId,
    split: str = "",
    task: str = "",
    page: int = Query(1, ge=1),
    db: Session = Depends(get_db),
):
    e = _entry_or_404(db, entry_id, with_questions=True)
    if split and split not in SPLITS:
        raise PageError(400, f"unknown split {split!r}")
    if task and task not in TaskType.__members__:
        raise PageError(400, f"unknown task type {task!r}")
    rows = [q for q in e.questions if (not split or q.split == split) and (not task or q.task_type == task)]
    pages = max(1, math.ceil(len(rows) / QUESTIONS_PER_PAGE))
    page = min(page, pages)
    gold = {q.id: q for q in request.app.state.dataset.questions}
    shown = rows[(page - 1) * QUESTIONS_PER_PAGE : page * QUESTIONS_PER_PAGE]
    return render(
        request,
        "questions.html",
        entry=e,
        rows=shown,
        gold=gold,
        split=split,
        task=task,
        page=page,
        pages=pages,
        total=len(rows),
        splits=SPLITS,
        tasks=list(TaskType),
        metrics=METRICS,
        metric_labels=METRIC_LABELS,
    )


@router.get("/entries/{entry_id}/questions.csv")
def questions_download(entry_id: EntryId, db: Session = Depends(get_db)):
    e = _entry_or_404(db, entry_id, with_questions=True)
    return Response(
        questions_csv(e),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="h2hmem-entry-{e.id}-questions.csv"'},
    )


@router.get("/leaderboard.csv")
def leaderboard_csv(db: Session = Depends(get_db)):
    return Response(
        ranking_csv(public_entries(db)),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="h2hmem-leaderboard.csv"'},
    )


@router.get("/leaderboard.json")
def leaderboard_json(db: Session = Depends(get_db)):
    return JSONResponse(
        {"entries": [entry_public(e) for e in public_entries(db)]},
        headers={"Content-Disposition": 'attachment; filename="h2hmem-leaderboard.json"'},
    )


@router.get("/api/entries")
def api_entries(db: Session = Depends(get_db)):
    """Approved entries with their aggregated scores per group (``all``, ``split:…``, ``main:…``, ``sub:…``)."""
    return {"entries": [entry_public(e) for e in public_entries(db)]}


@router.get("/api/entries/{entry_id}")
def api_entry(entry_id: EntryId, db: Session = Depends(get_db)):
    return entry_public(_entry_or_404(db, entry_id))


@router.get("/api/entries/{entry_id}/questions")
def api_entry_questions(entry_id: EntryId, db: Session = Depends(get_db)):
    e = _entry_or_404(db, entry_id, with_questions=True)
    cols = ["question_id", "split", "task_type", "main_category", "answered", "system_answer", *METRICS, "judge_score"]
    return {"id": e.id, "questions": [{c: getattr(q, c) for c in cols} for q in e.questions]}
