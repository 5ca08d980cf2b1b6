"""Typed model errors. Every error names the request it belongs to (model, base URL, a short
description), so a failure deep in a run can be traced to one call.

Classification (which errors are retried) follows inspect_ai's provider pattern: each error
class carries ``transient``; the central wrapper retries transient errors only and never turns
an error into an answer or caches it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestInfo:
    """What a failed request was: shown in every :class:`ModelError` message."""

    model: str
    base_url: str | None = None
    """Base URL the attempt went to (``None`` for in-process models)."""
    description: str = ""
    """Short summary, e.g. ``"stage=answer, 3 messages, 1 image, last user text: 'What…'"``."""

    def __str__(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        desc = f" ({self.description})" if self.description else ""
        return f"model {self.model!r}{where}{desc}"


class ModelError(Exception):
    """Base class of model-call failures. ``request`` names the call; ``status`` is the HTTP
    status when there was one."""

    transient = False
    """Whether retrying the same request may succeed."""

    def __init__(
        self,
        message: str,
        request: RequestInfo | None = None,
        *,
        status: int | None = None,
        body: str | None = None,
        retry_after: float | None = None,
    ):
        self.reason = message
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``), if it did."""
        self.request = request
        self.status = status
        self.body = body
        super().__init__(self._format())

    def _format(self) -> str:
        text = self.reason
        if self.status is not None:
            text = f"HTTP {self.status}: {text}"
        if self.request is not None:
            text = f"{text} [request: {self.request}]"
        return text

    def with_request(self, request: RequestInfo) -> ModelError:
        """Attach ``request`` (when the raiser did not know it) and return self."""
        if self.request is None:
            self.request = request
            self.args = (self._format(),)
        return self

    def __str__(self) -> str:
        return self._format()


class RateLimitError(ModelError):
    """HTTP 429. ``retry_after`` (seconds) is the server's ``Retry-After`` when given."""

    transient = True


class ServerError(ModelError):
    """HTTP 5xx (``retry_after`` set when a 503 carried ``Retry-After``)."""

    transient = True


class ModelTimeoutError(ModelError):
    """No complete reply within the per-call timeout."""

    transient = True


class ConnectionFailure(ModelError):
    """Connection refused, reset or closed before a complete reply."""

    transient = True


class BadResponseError(ModelError):
    """A reply that is not a usable completion: malformed or truncated JSON, empty or missing
    ``choices``, missing message content. Retried (proxies and overloaded servers produce
    these), and raised when retries are exhausted."""

    transient = True


class BadRequestError(ModelError):
    """HTTP 4xx other than 429 (bad parameters, unknown model, authentication): not retried."""


class ContentFilterError(ModelError):
    """The provider withheld the answer (``finish_reason == "content_filter"``): not retried."""


class OutputTruncatedError(ModelError):
    """The answer hit ``max_tokens`` (``finish_reason == "length"``). Raised only by models built
    with ``on_truncation="raise"``; by default the text is returned with
    ``ChatResult.finish_reason == "length"`` and the caller decides."""


class ImageNotSupportedError(ModelError):
    """The server refused a request because it holds image parts (text-only model). Not retried;
    use a text-only model (``load_chat_model(..., text_only=True)``) so images become captions."""


class ImageFileError(ValueError):
    """An image file exists but cannot be read or decoded; the message names the file."""
