"""The OpenAI-compatible endpoint a product is pointed at — the one place that decides it.

A product makes its own HTTP calls with its own OpenAI client; it is configured with a base URL, a
key and model names. :func:`product_endpoint` gives them:

1. ``ctx.extras["product_endpoint"]``, an :class:`Endpoint` the caller built (tests, notebooks);
2. otherwise the run's build model (``ctx.build_chat``, else ``ctx.chat``) when it is an
   OpenAI-compatible backend: its own base URL, key and model name.

Products never see any other URL: their telemetry is switched off by each adapter and no default
hosted endpoint is left configured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._protocol import MemoryContext

EXTRAS_KEY = "product_endpoint"
DEFAULT_EMBEDDING_DIMS = 384
"""Dimensions asked of the endpoint's embeddings (all-MiniLM-L6-v2's, the run's default embedder)."""


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

    @property
    def embeddings_url(self) -> str:
        """The base URL of the embeddings endpoint."""
        return self.embedding_base_url or self.base_url

    def describe(self) -> dict[str, Any]:
        """What the manifest records (the key and the port are left out: neither changes results)."""
        return {"chat_model": self.chat_model, "embedding_model": self.embedding_model, "dims": self.embedding_dims}


class EndpointUnavailableError(RuntimeError):
    """No OpenAI-compatible endpoint can be given to the product."""


async def product_endpoint(ctx: MemoryContext) -> Endpoint:
    """The endpoint the product of ``ctx``'s dialogue sends its requests to.

    Raises:
        EndpointUnavailableError: the run's model is not reachable over an OpenAI-compatible URL.
    """
    given = ctx.extras.get(EXTRAS_KEY)
    if isinstance(given, Endpoint):
        return given
    model = ctx.build_chat or ctx.chat
    backend = getattr(model, "backend", None)
    urls = getattr(backend, "base_urls", None)
    name = getattr(backend, "model", None)
    if not urls or not isinstance(name, str):
        raise EndpointUnavailableError(
            f"the memory product needs an OpenAI-compatible endpoint; model {getattr(model, 'spec', model)!r} "
            "has none (use an openai:… model with its base URL)"
        )
    return Endpoint(
        base_url=str(urls[0]),
        api_key=str(getattr(backend, "api_key", None) or "h2hmem"),
        chat_model=name,
        embedding_model="text-embedding-3-small",
    )
