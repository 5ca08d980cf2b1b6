"""The OpenAI-compatible endpoint a product is pointed at — the one place that decides it.

A product makes its own HTTP calls with its own OpenAI client; it is configured with a base URL, a
key and model names. :func:`product_endpoint` gives them:

1. ``ctx.extras["product_endpoint"]``, an :class:`Endpoint` the caller built (tests, notebooks);
2. otherwise h2hmem's model gateway (:class:`~h2hmem.gateway.ModelGateway`) on a loopback port,
   serving the run's build model (``ctx.build_chat``, else ``ctx.chat``) and the run's text
   embedder: every call the product makes goes through the run's request cache, retries,
   concurrency limit, usage and cost accounting, spend guard and transcripts, and ``local:``
   models serve products too.

Products never see any other URL: their telemetry is switched off by each adapter and no default
hosted endpoint is left configured.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx

from ...gateway import ModelGateway
from .._protocol import MemoryContext

DEFAULT_EMBEDDING_DIMS = 384
"""Dimensions of all-MiniLM-L6-v2, the run's default embedder."""


def _no_check() -> None:
    return None


@dataclass(frozen=True)
class Endpoint:
    """Where a product sends its chat and embedding requests."""

    base_url: str
    """``http://127.0.0.1:PORT/v1`` (with the ``/v1``)."""
    api_key: str
    """The key the product sends (a loopback endpoint accepts any)."""
    chat_model: str
    """Model name for ``/chat/completions``."""
    embedding_model: str
    """Model name for ``/embeddings``."""
    embedding_dims: int = DEFAULT_EMBEDDING_DIMS
    """Length of the vectors ``/embeddings`` returns (products size their vector stores by it)."""
    embedding_base_url: str | None = None
    """Where ``/embeddings`` is served when not at ``base_url`` (a chat server without pooled embeddings)."""
    http_client: Callable[[], httpx.Client] | None = field(default=None, compare=False)
    """Builds the HTTP client a product's sync OpenAI client should use (the gateway's: it tags each
    request with the dialogue, session and stage that caused it); None = the product's own."""
    async_http_client: Callable[[], httpx.AsyncClient] | None = field(default=None, compare=False)
    """The same for async OpenAI clients."""
    check: Callable[[], None] = field(default=_no_check, compare=False)
    """Called after each product operation: re-raises a stop of the run's spend guard (``--max-cost``)
    that the product saw only as an HTTP 429."""

    @property
    def embeddings_url(self) -> str:
        """The base URL of the embeddings endpoint."""
        return self.embedding_base_url or self.base_url

    def describe(self) -> dict[str, Any]:
        """What the manifest records (the key and the port are left out: neither changes results)."""
        return {"chat_model": self.chat_model, "embedding_model": self.embedding_model, "dims": self.embedding_dims}


class EndpointUnavailableError(RuntimeError):
    """No OpenAI-compatible endpoint can be given to the product."""


async def product_endpoint(ctx: MemoryContext, stack: AsyncExitStack) -> Endpoint:
    """The endpoint the product of ``ctx``'s dialogue sends its requests to; a gateway started for it
    stops when ``stack`` closes.

    Raises:
        EndpointUnavailableError: the run has no text embedder to serve the product's embeddings.
        OSError: the gateway cannot listen on a loopback port.
    """
    given = ctx.product_endpoint
    if isinstance(given, Endpoint):
        return given
    if ctx.embedder_factory is None:
        raise EndpointUnavailableError(
            "a memory product needs the run's text embedder (MemoryContext.embedder_factory)"
        )
    model = ctx.build_chat or ctx.chat
    embedder = ctx.embedder_factory()
    # images a product sends stay beside the run's transcripts, which refer to them
    image_dir = ctx.state_dir / "gateway-images" if ctx.state_dir is not None else None
    gateway = await stack.enter_async_context(
        ModelGateway(model, embedder, default_stage="memory_build", image_dir=image_dir)
    )
    return Endpoint(
        base_url=gateway.base_url,
        api_key="h2hmem",
        chat_model=str(getattr(model, "spec", "model")),
        embedding_model=str(getattr(embedder, "name", "embedder")),
        embedding_dims=int(getattr(embedder, "dim", DEFAULT_EMBEDDING_DIMS)),
        http_client=gateway.http_client,
        async_http_client=gateway.async_http_client,
        check=gateway.raise_if_stopped,
    )
