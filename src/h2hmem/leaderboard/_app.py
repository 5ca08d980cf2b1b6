"""The leaderboard web service: :func:`create_app` wires settings, database, templates, workers and routes.

Safety rules kept here once: Jinja2 autoescaping for every template, a CSRF token on every form
(checked on every POST), a request-body limit counted while the body streams in, server-side
admin sessions, security headers, HTML error pages (never a traceback) and JSON errors under
``/api/``. Shared page helpers live in ``_web`` (imported by this module and every route module).
"""

from __future__ import annotations

import contextlib
import logging
from importlib import resources
from pathlib import Path

import jinja2
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import Scope

from .._asgi import HeadAsGet
from ..data import load_dataset
from ..llm import default_cache_path, load_chat_model
from . import _accounts, _admin, _public, _submit
from ._db import make_engine, make_sessionmaker
from ._judge import JudgeWorker, MetricsJudge
from ._middleware import BodyLimit, BodyTooLarge, SecurityHeaders, too_large_message
from ._scorer import ScoreWorker
from ._security import session_secret
from ._settings import LeaderboardSettings
from ._web import LoginRequired, error_page, is_api, render

_PKG = Path(str(resources.files(__package__)))
log = logging.getLogger(__name__)

_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


def body_limit(settings: LeaderboardSettings) -> int:
    """Bytes a request body may have: both files at their limit plus 256 kB of form fields."""
    return 2 * settings.max_file_bytes + 256 * 1024


def create_app(settings: LeaderboardSettings) -> FastAPI:
    """Build the service.

    Loads the gold dataset from ``settings.data_root``, connects the database (tables and
    missing columns created), resolves the session secret, and starts the background scorer
    (and the judge worker when a judge is configured) with the app's lifespan.

    Raises:
        FileNotFoundError / h2hmem.data.DatasetError: the dataset cannot be loaded.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
        ValueError: ``judge_model`` given but no judge can be built from it.
    """
    dataset = load_dataset(settings.data_root)
    engine = make_engine(settings.db_url)
    sessions = make_sessionmaker(engine)
    with sessions() as db:
        secret = session_secret(db, settings.secret)
    chat = settings.judge_chat
    if chat is None and settings.judge_model:
        chat = load_chat_model(settings.judge_model, base_url=settings.judge_base_url, cache=default_cache_path())
    judge = None
    if chat is not None:
        preset = settings.judge_preset
        judge = JudgeWorker(sessions, dataset, MetricsJudge(chat, preset), chat.spec, preset)
    scorer = ScoreWorker(sessions, dataset, settings.scorer, max_rows=settings.max_rows)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        scorer.resume()
        if judge is not None:
            judge.resume()
        yield
        scorer.shutdown()
        if judge is not None:
            judge.shutdown()
        engine.dispose()

    app = FastAPI(
        title=settings.title, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url="/api/openapi.json"
    )
    app.state.settings = settings
    app.state.dataset = dataset
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.secret = secret
    app.state.judge = judge
    app.state.scorer = scorer
    app.state.templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_PKG / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def refuse_too_large(scope: Scope, limit: int) -> Response:
        if is_api(scope["path"]):
            return JSONResponse({"detail": too_large_message(limit)}, status_code=413, headers={"Connection": "close"})
        page = error_page(app, 413, too_large_message(limit), scope["path"])
        page.headers["Connection"] = "close"
        return page

    # Each one added wraps the previous: HEAD → security headers → body limit → cookie session → the app.
    app.add_middleware(
        SessionMiddleware,
        secret_key=secret,
        session_cookie="h2hmem_session",
        max_age=int(settings.session_hours * 3600),
        same_site="lax",
        https_only=settings.https_only_cookies,
    )
    app.add_middleware(BodyLimit, limit=body_limit(settings), refuse=refuse_too_large)
    app.add_middleware(SecurityHeaders, headers=_HEADERS)
    app.add_middleware(HeadAsGet)

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge):
        return refuse_too_large(request.scope, exc.limit)

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired):
        if is_api(request.url.path):
            return JSONResponse({"detail": "Administrators only: log in first."}, status_code=401)
        return RedirectResponse("/admin/login", status_code=303)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "Request refused."
        if exc.status_code == 404 and message == "Not Found":
            message = "Page not found."
        if is_api(request.url.path):
            return JSONResponse({"detail": message}, status_code=exc.status_code)
        return render(request, "error.html", status_code=exc.status_code, message=message, status=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: {e['msg']}" for e in exc.errors()]
        message = "Invalid request: " + "; ".join(parts)
        if is_api(request.url.path):
            return JSONResponse({"detail": message}, status_code=422)
        return render(request, "error.html", status_code=422, message=message, status=422)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        message = "Internal error: the request could not be completed (it is logged on the server)."
        if is_api(request.url.path):
            return JSONResponse({"detail": message}, status_code=500)
        return error_page(app, 500, message, request.url.path)

    app.mount("/static", StaticFiles(directory=_PKG / "static"), name="static")
    app.include_router(_public.router)
    app.include_router(_submit.router)
    app.include_router(_admin.router)
    app.include_router(_accounts.router)
    return app
