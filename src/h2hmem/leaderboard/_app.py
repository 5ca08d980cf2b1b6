"""The leaderboard web service: :func:`create_app` wires settings, database, templates and routes.

Safety rules kept here once: Jinja2 autoescaping for every template, a CSRF token on every form
(checked on every POST), a request-body limit, security headers, HTML error pages (never a
traceback) and JSON errors under ``/api/``.
"""

from __future__ import annotations

import contextlib
import logging
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..data import load_dataset
from ..llm import default_cache_path, load_chat_model
from ._db import make_engine, make_sessionmaker
from ._judge import JudgeWorker, MetricsJudge
from ._security import csrf_ok, csrf_token, session_secret
from ._settings import LeaderboardSettings

_PKG = Path(str(resources.files(__package__)))
log = logging.getLogger(__name__)
SESSION_MAX_AGE_S = 8 * 3600
"""Admin sessions last one working day."""


class PageError(HTTPException):
    """An error shown to the user as a page (or JSON under /api/) with a plain message."""


def render(request: Request, template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    """Render ``template`` with the common context (site title, admin name, CSRF token)."""
    env: jinja2.Environment = request.app.state.templates
    ctx.setdefault("site_title", request.app.state.settings.title)
    ctx["admin"] = request.session.get("admin")
    ctx["csrf"] = csrf_token(request.session)
    ctx["request_path"] = request.url.path
    return HTMLResponse(env.get_template(template).render(**ctx), status_code=status_code)


async def checked_form(request: Request) -> Any:
    """The POSTed form after its CSRF token was checked.

    Raises:
        PageError: 403 when the token is missing or wrong.
    """
    form = await request.form(max_files=4, max_fields=20)
    if not csrf_ok(request.session, form.get("csrf_token")):
        raise PageError(403, "This form has no valid security token (CSRF). Reload the page and submit again; "
                             "cookies must be enabled.")
    return form


class _BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes with 413 (Content-Length or counted while reading)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._refuse(scope, send)
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        text = f"The upload is too large: requests are limited to {self.limit / 1e6:.3g} MB."
        resp = (JSONResponse({"detail": text}, status_code=413) if scope["path"].startswith("/api/")
                else HTMLResponse(f"<!doctype html><title>Too large</title><p>{text}</p>", status_code=413))
        await resp(scope, _drain, send)


async def _drain() -> Message:
    return {"type": "http.disconnect"}


_CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def create_app(settings: LeaderboardSettings) -> FastAPI:
    """Build the service.

    Loads the gold dataset from ``settings.data_root``, connects the database (tables created),
    resolves the session secret and, when a judge is configured, starts its worker.

    Raises:
        FileNotFoundError / h2hmem.data.DatasetError: the dataset cannot be loaded.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
        ValueError: ``judge_model`` given but no judge can be built from it.
    """
    from . import _admin, _public, _submit  # routes

    dataset = load_dataset(settings.data_root)
    engine = make_engine(settings.db_url)
    sessions = make_sessionmaker(engine)
    with sessions() as db:
        secret = session_secret(db, settings.secret)
    chat = settings.judge_chat
    if chat is None and settings.judge_model:
        chat = load_chat_model(settings.judge_model, base_url=settings.judge_base_url, cache=default_cache_path())
    worker = JudgeWorker(sessions, dataset, MetricsJudge(chat), chat.spec) if chat is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if worker is not None:
            worker.resume()
        yield
        if worker is not None:
            worker.shutdown()
        engine.dispose()

    app = FastAPI(title=settings.title, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url="/api/openapi.json")
    app.state.settings = settings
    app.state.dataset = dataset
    app.state.engine = engine
    app.state.sessions = sessions
    app.state.secret = secret
    app.state.judge = worker
    app.state.templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_PKG / "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", _CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    app.add_middleware(SessionMiddleware, secret_key=secret, session_cookie="h2hmem_session", max_age=SESSION_MAX_AGE_S,
                       same_site="lax", https_only=settings.https_only_cookies)
    app.add_middleware(BodyLimit, limit=2 * settings.max_file_bytes + 256 * 1024)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "Request refused."
        if exc.status_code == 404 and message == "Not Found":
            message = "Page not found."
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=exc.status_code)
        return render(request, "error.html", status_code=exc.status_code, message=message, status=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: {e['msg']}" for e in exc.errors()]
        message = "Invalid request: " + "; ".join(parts)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=422)
        return render(request, "error.html", status_code=422, message=message, status=422)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        message = "Internal error: the request could not be completed (it is logged on the server)."
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=500)
        return HTMLResponse(request.app.state.templates.get_template("error.html").render(
            site_title=settings.title, admin=None, csrf="", request_path=request.url.path, message=message, status=500),
            status_code=500)

    app.mount("/static", StaticFiles(directory=_PKG / "static"), name="static")
    app.include_router(_public.router)
    app.include_router(_submit.router)
    app.include_router(_admin.router)
    return app
