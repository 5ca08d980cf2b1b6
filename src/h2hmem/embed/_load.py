"""``load_embedder``: embedder spec → an :class:`Embedder`."""

from __future__ import annotations

import os
from pathlib import Path

from ..llm._cache import RequestCache
from ..llm._load import _base_urls
from ._protocol import Embedder

SPEC_HELP = "embedder specs: 'minilm' (all-MiniLM-L6-v2, offline) or 'openai:<model>' (any /embeddings server)"


def load_embedder(spec: str = "minilm", *, base_url: str | None = None, api_key: str | None = None,
                  cache: RequestCache | str | Path | None = None, dim: int | None = None) -> Embedder:
    """Build an embedder.

    ``minilm``: all-MiniLM-L6-v2 (384-d), the paper's Naive RAG encoder; offline; in-memory LRU
    (``cache`` is not used). ``openai:<model>``: ``{base_url}/embeddings`` (``$OPENAI_BASE_URL`` /
    ``$OPENAI_API_KEY`` as for chat models); ``cache`` (RequestCache or SQLite path) stores vectors;
    ``dim`` asks the server for that many dimensions.
    Raises ``ValueError`` for an unknown spec.
    """
    kind, model = parse_embedder_spec(spec)
    if kind == "minilm":
        from ._minilm import MiniLMEmbedder

        return MiniLMEmbedder()
    from ._openai import OpenAIEmbedder

    if isinstance(cache, (str, Path)):
        cache = RequestCache(cache)
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    return OpenAIEmbedder(model, _base_urls(base_url)[0], key or None, dim=dim, cache=cache)


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
