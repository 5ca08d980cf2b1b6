"""Errors as OpenAI's API reports them: ``{"error": {"message", "type", "param", "code"}}`` and a status.

Bad input is the caller's fault (400, naming the field); a failure of the model behind the
gateway is an upstream failure (429 when it was rate limited or the budget is spent, 502/504
otherwise), so a client's own retry logic does the right thing. Nothing maps to 500 but a bug.
"""

from __future__ import annotations

from typing import Any

from ..llm import (
    BadRequestError,
    ContentFilterError,
    ImageFileError,
    ImageNotSupportedError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
)


class GatewayError(Exception):
    """An error answered as OpenAI error JSON with HTTP ``status``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid(message: str, param: str | None = None) -> GatewayError:
    """HTTP 400 for a request the gateway cannot serve (``param``: the offending field)."""
    return GatewayError(400, message, param=param)


def from_model_error(exc: BaseException) -> GatewayError:
    """The HTTP answer to an exception raised by the model or embedder behind the gateway.

    ``RateLimitError`` → 429 (``Retry-After`` passed on); ``BadRequestError`` (the upstream said
    4xx), ``ImageNotSupportedError``, ``ContentFilterError``, ``ImageFileError`` and other
    ``ValueError`` (e.g. the spend guard's "cannot bound a call without max_tokens") → 400;
    ``ModelTimeoutError`` → 504; any other ``ModelError`` (server errors, connection failures,
    malformed replies, all after h2hmem's retries) → 502; a ``BaseException`` that is not an
    ``Exception`` (the spend guard's ``BudgetExhausted``) → 429 ``insufficient_quota``; anything
    else → 502. The message names the exception's class, except for the two the caller can act on
    from the text alone (a ``ValueError`` about the request, the spend guard's refusal).
    """
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, RateLimitError):
        headers = {"retry-after": f"{exc.retry_after:g}"} if exc.retry_after is not None else None
        return GatewayError(429, text, type="rate_limit_error", code="rate_limit_exceeded", headers=headers)
    if isinstance(exc, ContentFilterError):
        return GatewayError(400, text, code="content_filter")
    if isinstance(exc, (BadRequestError, ImageNotSupportedError, ImageFileError)):
        return GatewayError(400, text, code="upstream_bad_request")
    if isinstance(exc, ModelTimeoutError):
        return GatewayError(504, text, type="server_error", code="upstream_timeout")
    if isinstance(exc, ModelError):
        return GatewayError(502, text, type="server_error", code="upstream_error")
    if isinstance(exc, ValueError):
        return GatewayError(400, str(exc))
    if not isinstance(exc, Exception):
        return GatewayError(429, str(exc), type="insufficient_quota", code="insufficient_quota")
    return GatewayError(502, text, type="server_error", code="upstream_error")
