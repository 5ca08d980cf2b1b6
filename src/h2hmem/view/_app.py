"""``h2hmem view``: a local, read-only web viewer over run folders (FastAPI + Jinja2).

Pages (links are stable: run id and question id are all they hold, so they can be pasted into
notes and opened again as long as the viewer is started on the same folders):

- ``/`` — the runs: method, model, preset, protocol, counts, headline score;
- ``/runs/<run>`` — the question table, with filters and sorting (:mod:`._table`);
- ``/runs/<run>/q/<question id>`` — one question: text and image, gold, answer, judge score and
  reasoning, lexical scores, the evidence as the actual turns (gold-session turns marked), and
  every model call behind it (full prompt, raw reply, usage, latency, cache hit);
- ``/compare/<question id>?run=a&run=b`` — the same question in two or more runs, side by side;
- ``/runs/<run>/report`` — the run's ``report.html`` with its worst-question links live.

Safety: Jinja2 autoescaping on every template (everything shown comes from data files and model
replies), a strict Content-Security-Policy with no script at all, images served only when they are
files of the run's dataset, and the server binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from .._asgi import HeadAsGet
from ..records import JUDGE_TRANSCRIPTS, TRANSCRIPTS
from ._calls import CallIndex
from ._runs import ViewRun, load_view_run, unique_keys
from ._table import SORTS, Filters, choices, filter_rows, sort_rows
from ._turns import Lookups

_PKG = Path(str(resources.files(__package__)))
PAGE_ROWS = 500
"""Question-table rows per page."""
JUDGE_LEVELS = ("0", "0.25", "0.5", "0.75", "1")
_CSP = (
    "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'"
)
VIEWER_STYLE = "<style>.viewer-link{display:inline}</style>"
"""Injected into a served report.html: its viewer links (hidden in the static file) appear."""


class _Viewer:
    def __init__(self, run_dirs: list[Path], data_root: Path | None):
        self.lookups = Lookups(data_root)
        self.runs: dict[str, ViewRun] = {}
        self.calls: dict[str, CallIndex] = {}
        self.judge_calls: dict[str, CallIndex] = {}
        for key, d in zip(unique_keys(run_dirs), run_dirs):
            run = load_view_run(Path(d), key)
            self.runs[key] = run
            self.calls[key] = CallIndex(run.dir / TRANSCRIPTS)
            self.judge_calls[key] = CallIndex(run.dir / JUDGE_TRANSCRIPTS)

    def run(self, key: str) -> ViewRun:
        if key not in self.runs:
            raise HTTPException(404, f"No run {key!r} in this viewer (runs: {', '.join(self.runs)}).")
        return self.runs[key]


def _inside(path: Path, root: Path | None) -> bool:
    """Whether ``path``, every symlink resolved, lies inside ``root`` (also resolved)."""
    if root is None:
        return False
    try:
        return path.resolve(strict=True).is_relative_to(Path(root).resolve(strict=True))
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return False


def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _unit(name: str, text: str) -> float | None:
    """A filter bound in [0, 1] from the query (empty: none); 422 otherwise (the form sends empty fields)."""
    if not text.strip():
        return None
    try:
        x = float(text)
    except ValueError:
        x = -1.0
    if not 0.0 <= x <= 1.0:
        raise HTTPException(422, f"{name} must be a number from 0 to 1, got {text!r}.")
    return x


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def create_viewer_app(run_dirs: Sequence[str | Path], *, data_root: str | Path | None = None) -> FastAPI:
    """Build the viewer over ``run_dirs`` (each holds ``predictions.jsonl``).

    Args:
        run_dirs: run folders, in display order.
        data_root: dataset root for the evidence turns and images; default each run's manifest
            ``data_root``.

    Raises:
        FileNotFoundError: a folder without ``predictions.jsonl``.
        ValueError: no folder given, or a damaged run file (the message names it).
    """
    if not run_dirs:
        raise ValueError("give at least one run directory")
    viewer = _Viewer([Path(d) for d in run_dirs], Path(data_root) if data_root else None)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_PKG / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = _fmt
    env.filters["pretty"] = _pretty
    app = FastAPI(title="h2hmem viewer", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.viewer = viewer
    app.add_middleware(HeadAsGet)  # `curl -I` and link checkers: every page answers HEAD as GET, bodiless
    app.mount("/static", StaticFiles(directory=_PKG / "static"), name="static")

    def page(template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("runs", list(viewer.runs.values()))
        ctx.setdefault("title", "Error")
        return HTMLResponse(env.get_template(template).render(**ctx), status_code=status_code)

    @app.middleware("http")
    async def headers(request: Request, call_next):
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        message = exc.detail if isinstance(exc.detail, str) and exc.detail != "Not Found" else "Page not found."
        return page("error.html", status_code=exc.status_code, message=message, status=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError):
        # a query parameter of the wrong type or range (``?page=0``): the HTML error page, like the others
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e.get('loc', ())[1:]) or 'parameter'}: {e.get('msg', 'invalid')}"
            for e in exc.errors()
        )
        return page("error.html", status_code=422, message=f"Bad parameter ({problems}).", status=422)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page("runs.html", title="Runs")

    @app.get("/runs/{key}", response_class=HTMLResponse)
    def questions(
        key: str,
        split: str = "",
        dialogue: str = "",
        task_type: str = "",
        difficulty: str = "",
        judge: str = "",
        f1_min: str = "",
        f1_max: str = "",
        failed: str = "",
        evidence: str = "",
        q: str = "",
        sort: str = "worst",
        page_no: int = Query(1, alias="page", ge=1),
    ) -> HTMLResponse:
        run = viewer.run(key)
        if sort not in SORTS:
            raise HTTPException(422, f"Unknown sort {sort!r}; choose from {', '.join(SORTS)}.")
        f = Filters(
            split=split,
            dialogue=dialogue,
            task_type=task_type,
            difficulty=difficulty,
            judge=judge,
            f1_min=_unit("f1_min", f1_min),
            f1_max=_unit("f1_max", f1_max),
            failed=failed,
            evidence=evidence,
            q=q,
            sort=sort,
        )
        rows = sort_rows(filter_rows(run.rows.values(), f), sort)
        pages = max(1, -(-len(rows) // PAGE_ROWS))
        shown = rows[(page_no - 1) * PAGE_ROWS : page_no * PAGE_ROWS]
        return page(
            "questions.html",
            title=f"{run.info.method} · {run.key}",
            run=run,
            rows=shown,
            total=len(rows),
            f=f,
            choices=choices(run.rows.values()),
            sorts=SORTS,
            levels=JUDGE_LEVELS,
            page_no=page_no,
            pages=pages,
        )

    def question_context(run: ViewRun, qid: str) -> dict[str, Any]:
        row = run.rows.get(qid)
        if row is None:
            raise HTTPException(404, f"Run {run.key} has no answer to question {qid!r}.")
        p = row.pred
        lookup = viewer.lookups.for_root(run.data_root)
        gold = p.answer_sessions or []
        question = lookup.question(qid)
        if question is not None:
            gold = list(question.answer_sessions)
        evidence = lookup.evidence(p.split, p.dialogue, list(p.evidence), gold)
        calls = viewer.calls[run.key].for_question(qid) + viewer.judge_calls[run.key].for_question(qid)
        return {
            "run": run,
            "row": row,
            "p": p,
            "gold_sessions": gold,
            "evidence": evidence,
            "question_images": list(question.images) if question is not None else [],
            "dataset_error": lookup.error,
            "calls": calls,
            "build_calls": viewer.calls[run.key].build_calls(f"{p.split}/{p.dialogue}"),
            "others": [k for k, r in viewer.runs.items() if qid in r.rows and k != run.key],
        }

    @app.get("/runs/{key}/q/{qid:path}", response_class=HTMLResponse)
    def question(key: str, qid: str) -> HTMLResponse:
        ctx = question_context(viewer.run(key), qid)
        return page("question.html", title=f"{qid} · {key}", **ctx)

    @app.get("/compare/{qid:path}", response_class=HTMLResponse)
    def compare(qid: str, run: list[str] = Query(default=[])) -> HTMLResponse:
        keys = run or [k for k, r in viewer.runs.items() if qid in r.rows]
        if not keys:
            raise HTTPException(404, f"No run has an answer to question {qid!r}.")
        cols = [question_context(viewer.run(k), qid) for k in keys]
        return page("compare.html", title=f"{qid} · compare", qid=qid, cols=cols, first=cols[0])

    @app.get("/runs/{key}/image/{split}/{dialogue}/{session}/{file}")
    def image(key: str, split: str, dialogue: str, session: str, file: str) -> FileResponse:
        run = viewer.run(key)
        lookup = viewer.lookups.for_root(run.data_root)
        path = lookup.image_path(split, dialogue, session, file)
        if path is None or not Path(path).is_file() or not _inside(Path(path), lookup.root):
            raise HTTPException(404, f"No image {session}/{file} in {split}/{dialogue} of the run's dataset.")
        return FileResponse(path)

    @app.get("/runs/{key}/report", response_class=HTMLResponse)
    def report(key: str) -> HTMLResponse:
        run = viewer.run(key)
        path = run.dir / "report.html"
        if not path.is_file():
            raise HTTPException(404, f"Run {key} has no report.html (write it with `h2hmem report {run.dir}`).")
        if path.is_symlink() or not _inside(path, run.dir):  # a link to /etc/passwd is not the run's report
            raise HTTPException(403, f"Run {key}'s report.html is a link or lies outside the run folder; not served.")
        html = path.read_text(encoding="utf-8")
        # the report's figures are data: URIs and its CSS inline; its hidden viewer links are shown
        html = re.sub(r"</head>", VIEWER_STYLE + "</head>", html, count=1)
        resp = HTMLResponse(html)
        resp.headers["Content-Security-Policy"] = _CSP.replace("img-src 'self'", "img-src 'self' data:").replace(
            "style-src 'self'", "style-src 'self' 'unsafe-inline'"
        )
        return resp

    return app
