"""Step functions run in child processes (see :mod:`bench._procs`): one ``h2hmem`` run through
the real runner, against the out-of-process mock server."""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
import time
from pathlib import Path
from typing import Any

MOCK_MODEL = "openai:mock"


def harness_step(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``arun_benchmark`` call (what ``run_benchmark`` runs). ``spec``: data_root, method, concurrency, limit, base_url,
    embedder ("hashed"/"hashed-cached"/"minilm"), out_dir, run_id, cache_path (None = no cache),
    embedding_cache (None = memory only), wipe (subset of ["run", "cache", "embeddings"]: delete
    the run dir / the request cache / the embedding cache first), transcripts (default true),
    preset (default "paper").

    Returns wall time of the ``run_benchmark`` call (dataset load, memory build, answers,
    recording), CPU seconds of this process in it, the CPU seconds of the method's retrieval step in it
    (:class:`_RetrievalCPU`; None for a method without one), the run summary's counts and tokens, and the
    manifest's embedding counts (``embed_*``) when the embedder keeps them.
    """
    from h2hmem.llm import load_chat_model
    from h2hmem.run import RunConfig, arun_benchmark

    from ._embedders import make_embedder

    out_dir, run_id = Path(spec["out_dir"]), spec["run_id"]
    cache_path = Path(spec["cache_path"]) if spec.get("cache_path") else None
    wipe = spec.get("wipe", ["run", "cache"])
    if "run" in wipe:
        shutil.rmtree(out_dir / run_id, ignore_errors=True)
    embedding_cache = spec.get("embedding_cache")
    for what, path in (("cache", cache_path), ("embeddings", embedding_cache)):
        if what in wipe and path is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
    config = RunConfig(
        data_root=spec["data_root"],
        method=spec["method"],
        preset=spec.get("preset", "paper"),
        models={"model": MOCK_MODEL, "base_url": [spec["base_url"]], "embedder": f"bench-{spec['embedder']}"},
        out_dir=out_dir,
        run_id=run_id,
        limit=spec.get("limit"),
        execution={
            "concurrency": spec["concurrency"],
            "cache_path": cache_path,
            "use_cache": cache_path is not None,
            "transcripts": spec.get("transcripts", True),
        },
    )
    _import_run_modules(spec["method"])
    _warm_dataset_cache(spec["data_root"])
    t_embed = time.perf_counter()
    embedder = make_embedder(spec["embedder"], embedding_cache)
    # MiniLM loads its weights on first use: not part of the run (from a warm cache it never loads them)
    asyncio.run(embedder.embed(["warm-up"]))
    embedder_load_s = time.perf_counter() - t_embed
    chat = load_chat_model(
        MOCK_MODEL,
        base_url=spec["base_url"],
        cache=cache_path,
        concurrency=spec["concurrency"],
        timeout_s=config.execution.timeout_s,
        max_retries=config.execution.max_retries,
    )

    async def run() -> tuple[Any, float, float]:
        cpu0, t0 = time.process_time(), time.perf_counter()
        try:
            summary = await arun_benchmark(config, chat_model=chat, embedder=embedder, progress=False)
            return summary, time.perf_counter() - t0, time.process_time() - cpu0
        finally:
            await chat.aclose()  # the runner closes only models it built itself

    retrieval = _RetrievalCPU(spec["method"], embedder)
    collector = _CollectorTime()
    with retrieval, collector:
        summary, wall, cpu = asyncio.run(run())
    answer = summary.usage.get("answer")
    manifest = json.loads((Path(summary.run_dir) / "manifest.json").read_text(encoding="utf-8"))
    embedding = {
        f"embed_{k}": v
        for k, v in (manifest.get("embedding") or {}).items()
        if k in ("texts", "memory_hits", "cache_hits", "computed", "model_calls", "compute_s")
    }
    return {
        **embedding,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "gc_s": round(collector.seconds, 3),
        "gc_collections": collector.collections,
        "retrieval_s": round(retrieval.total_s(), 3) if retrieval.wrapped or retrieval.embed_s() else None,
        "embedder_load_s": round(embedder_load_s, 3),
        "questions": summary.questions,
        "answered": summary.answered_now,
        "skipped": summary.skipped,
        "failed": summary.failed,
        "client_calls": answer.calls if answer else 0,
        "cached_calls": answer.cached_calls if answer else 0,
        "prompt_tokens": answer.prompt_tokens if answer else 0,
        "completion_tokens": answer.completion_tokens if answer else 0,
        "run_dir": str(summary.run_dir),
    }


def _import_run_modules(method: str) -> None:
    """Import what a run imports on first use (the method's module, captions, embeddings, Pillow's
    image plugins) before the clock starts: a step's time excludes imports (bench/README.md), and
    a CLI run pays them once per process, not per question."""
    from PIL import Image

    import h2hmem.caption
    import h2hmem.embed  # noqa: F401
    from h2hmem.memory import resolve_method
    from h2hmem.memory._bm25s_import import import_bm25s

    import_bm25s()  # h2h and A-Mem import it at their first BM25 query (without JAX: that module's docstring)

    resolve_method(method)
    Image.init()
    # the tokenizer's BPE ranks, like a model's weights, are loaded before the clock (bench/README.md)
    from h2hmem.llm._tokens import get_encoding

    get_encoding("cl100k_base")


def _warm_dataset_cache(root: str) -> None:
    """Read the dataset once before the clock, so the run finds it in the parsed-dataset cache as
    every run after the first on a machine does (``h2hmem.data._load_cache``; the first read of
    the full dataset costs ~0.5 s more, reported apart by ``python -m bench cpu``'s notes). A
    dataset written less than 10 s ago is not stored, and the run then reads its files."""
    from h2hmem.data import load_dataset

    load_dataset(root)


RETRIEVAL_STEPS = {
    "naive-rag": ("h2hmem.memory.naive_rag._memory", "NaiveRAGMemory", "_hits"),
    "h2h": ("h2hmem.memory.h2h._memory", "H2HMemory", "_ranked"),
}
"""Method → (module, class, coroutine method) of its retrieval step: query embedding, scoring, top-k."""


class _CollectorTime:
    """While active, the garbage collector's CPU time (``seconds``, the thread CPU time of the thread
    that collects: the event loop's, so also time no reply is read) and its collections per
    generation (``collections``, [young, middle, full]), from :data:`gc.callbacks`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._start = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._start
            self.collections[info["generation"]] += 1

    def __enter__(self) -> _CollectorTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


class _RetrievalCPU:
    """While active, adds the process CPU time spent inside the method's retrieval coroutine to
    ``cpu_s``. Exact with the bench's embedders: the hashed stand-in never suspends, so the coroutine
    runs from start to end without another task in between (a suspending embedder would add the
    CPU of the tasks run meanwhile). ``wrapped`` is False for a method without a retrieval step
    (full-text) or whose step is not found under its known name.

    :meth:`total_s` adds the stand-in embedder's CPU spent outside the retrieval step (embedding the
    turns at ``observe``: the index build), which its ``cpu_s`` counter gives; that work is the
    embedding model's, which the workload excludes with the rest of retrieval."""

    def __init__(self, method: str, embedder: Any = None):
        self.cpu_s = 0.0
        self.wrapped = False
        self._embedder = embedder
        self._embed_inside = 0.0
        self._embed_start = self._embed_cpu()
        self._target: tuple[Any, str, Any] | None = None
        where = RETRIEVAL_STEPS.get(method)
        if where is None:
            return
        import importlib

        cls = getattr(importlib.import_module(where[0]), where[1], None)
        original = getattr(cls, where[2], None)
        if cls is None or original is None:
            return
        self._target = (cls, where[2], original)

    def _embed_cpu(self) -> float:
        return float(getattr(self._embedder, "cpu_s", 0.0))

    def embed_s(self) -> float:
        """The stand-in embedder's CPU outside the retrieval step since this object was made."""
        return self._embed_cpu() - self._embed_start - self._embed_inside

    def total_s(self) -> float:
        return self.cpu_s + self.embed_s()

    def __enter__(self) -> _RetrievalCPU:
        if self._target is None:
            return self
        cls, name, original = self._target
        meter = self

        async def timed(*args: Any, **kwargs: Any) -> Any:
            cpu0, embed0 = time.process_time(), meter._embed_cpu()
            try:
                return await original(*args, **kwargs)
            finally:
                meter.cpu_s += time.process_time() - cpu0
                meter._embed_inside += meter._embed_cpu() - embed0

        setattr(cls, name, timed)
        self.wrapped = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._target is not None and self.wrapped:
            cls, name, original = self._target
            setattr(cls, name, original)
