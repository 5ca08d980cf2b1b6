"""``load_embedder``: embedder spec → an :class:`Embedder`."""

from __future__ import annotations

import os
from pathlib import Path

from .. import defaults
from ..llm import base_urls
from ._cache import EmbeddingCache
from ._protocol import Embedder

SPEC_HELP = "embedder specs: 'minilm' (all-MiniLM-L6-v2, offline) or 'openai:<model>' (any /embeddings server)"


def load_embedder(
    spec: str = "minilm",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    cache: EmbeddingCache | str | Path | None = None,
    refresh: bool = False,
    dim: int | None = None,
    timeout_s: float = defaults.TIMEOUT_S,
) -> Embedder:
    """Build an embedder.

    ``minilm``: all-MiniLM-L6-v2 (384-d), the paper's Naive RAG encoder; offline.
    ``openai:<model>``: ``{base_url}/embeddings`` (``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY`` as
    for chat models); ``dim`` asks the server for that many dimensions.

    Both keep an in-memory LRU and join concurrent calls into one model call; ``cache`` (an
    :class:`EmbeddingCache` or its SQLite path, e.g. :func:`default_embedding_cache_path`)
    adds the persistent cache keyed by (model, SHA-256 of the text), None = memory only;
    ``refresh`` recomputes and overwrites stored vectors. Counts: the embedder's ``stats``.
    ``timeout_s``: seconds one embedding request may take (``openai:``; a run passes its ``--timeout``).

    Raises ``ValueError`` for an unknown spec.
    """
    kind, model = parse_embedder_spec(spec)
    if kind == "minilm":
        from ._minilm import MiniLMEmbedder

        return MiniLMEmbedder(cache, refresh=refresh)
    from ._openai import OpenAIEmbedder

    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    return OpenAIEmbedder(
        model,
        base_urls(base_url)[0],
        key or None,
        dim=dim,
        cache=cache,
        refresh=refresh,
        timeout_s=timeout_s,
    )


def parse_embedder_spec(spec: str) -> tuple[str, str]:
    """``("minilm", "all-MiniLM-L6-v2")`` or ``("openai", "<model>")``; checks a spec without loading anything.

    Raises:
        ValueError: unknown spec.
    """
    if spec in ("minilm", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        return "minilm", "all-MiniLM-L6-v2"
    backend, sep, model = spec.partition(":")
    if backend == "openai" and sep and model:
        return "openai", model
    raise ValueError(f"unknown embedder spec {spec!r}; {SPEC_HELP}")
