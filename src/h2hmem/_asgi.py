"""ASGI middleware shared by h2hmem's web apps (the leaderboard service and the run viewer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    """Serve ``HEAD`` like ``GET`` without the body (same status and headers, RFC 9110 §9.3.2)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            return await self.app(scope, receive, send)
        done = False

        async def bodiless_send(msg: Message) -> None:
            nonlocal done
            if msg["type"] == "http.response.body":
                if done:
                    return
                done = True
                msg = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(msg)

        await self.app({**scope, "method": "GET"}, receive, bodiless_send)
