"""Pure ASGI middleware of the service: the request-body limit and security headers (HEAD as GET is
:class:`h2hmem._asgi.HeadAsGet`, shared with the viewer).

Pure ASGI (no ``BaseHTTPMiddleware``) so that an exception raised while the body streams in is
never wrapped in a task group's exception group, and the body is counted as it arrives, whatever
the transfer encoding (``Content-Length`` or ``chunked``).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    """Raised by the counting ``receive`` when a request body passes the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"request body above {limit} bytes")
        self.limit = limit


def too_large_message(limit: int) -> str:
    return (
        f"The upload is too large: requests are limited to {limit / 1e6:.3g} MB in all. "
        "Nothing was stored; check the files and upload again."
    )


def _contains(exc: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(exc, kind):
        return True
    inner = getattr(exc, "exceptions", None)  # an exception group (Python 3.11, or the 3.10 backport)
    return isinstance(inner, (list, tuple)) and any(_contains(e, kind) for e in inner if isinstance(e, BaseException))


class BodyLimit:
    """Refuse request bodies above ``limit`` bytes with a 413 made by ``refuse(scope, limit)``.

    A declared ``Content-Length`` above the limit is refused before the app runs; otherwise every
    ``http.request`` message is counted, and the first byte past the limit raises
    :class:`BodyTooLarge` inside the app (the app's handler for it answers 413; if it escapes,
    this middleware answers instead, provided no response has started).
    """

    def __init__(self, app: ASGIApp, limit: int, refuse: Callable[[Scope, int], Response]) -> None:
        self.app, self.limit, self.refuse = app, limit, refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self.refuse(scope, self.limit)(scope, _disconnected, send)
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BaseException as e:
            if not _contains(e, BodyTooLarge):
                raise
            if not started:
                await self.refuse(scope, self.limit)(scope, _disconnected, send)


async def _disconnected() -> Message:
    return {"type": "http.disconnect"}


class SecurityHeaders:
    """Adds ``headers`` to every HTTP response that does not set them itself."""

    def __init__(self, app: ASGIApp, headers: dict[str, str]) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(msg: Message) -> None:
            if msg["type"] == "http.response.start":
                have = {k.lower() for k, _ in msg.get("headers", [])}
                msg = {**msg, "headers": [*msg.get("headers", []), *((k, v) for k, v in self.headers if k not in have)]}
            await send(msg)

        await self.app(scope, receive, with_headers)
