"""Step functions run in child processes (see :mod:`bench._procs`): one ``h2hmem`` run through
the real runner, against the out-of-process mock server."""

from __future__ import annotations

import asyncio
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
    the run dir / the request cache / the embedding cache first), transcripts (default true).

    Returns wall time of the ``run_benchmark`` call (dataset load, memory build, answers,
    recording), CPU seconds of this process in it, the run summary's counts and tokens, and the
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
