"""Where h2hmem keeps its caches (request replies, embeddings, model files, parsed datasets)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "H2HMEM_CACHE_DIR"


def cache_dir() -> Path:
    """``$H2HMEM_CACHE_DIR`` if that variable is set (``~`` expanded), else ``~/.cache/h2hmem``.
    The folder may not exist yet."""
    base = os.environ.get(CACHE_DIR_ENV)
    return Path(base).expanduser() if base else Path.home() / ".cache" / "h2hmem"
