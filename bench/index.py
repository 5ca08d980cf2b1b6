"""Workload 4: ``index`` — MiniLM over every turn (naive-rag's chunks) and retrieval latency.

- build: embed every turn's chunk text (``"(sessionK) " + render_turn(...)``, exactly what
  naive-rag embeds) in one call (MiniLM batches of 64 on the CPU), then add the vectors to one
  :class:`~h2hmem.embed.VectorIndex` per dialogue (as naive-rag keeps them);
- retrieval: per question, embed the question text and search its dialogue's index for the top 5
  (naive-rag's top-k); p50 / p95 of each part and of the sum.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso, percentile

BUILD_GOAL_S = 60.0
TOP_K = 5

COLUMNS = [
    ("what", "what"),
    ("turns", "turns"),
    ("queries", "queries"),
    ("embedder_load_s", "model load s"),
    ("embed_s", "embed turns s"),
    ("index_add_s", "index add s"),
    ("build_s", "build s"),
    ("turns_per_s", "turns/s"),
    ("query_p50_ms", "query p50 ms"),
    ("query_p95_ms", "query p95 ms"),
    ("search_p50_ms", "search p50 ms"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def index_step(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec``: data_root, embedder, turns (None = all), queries (None = all, 0 = none),
    embedding_cache (path, optional: the persistent cache; ``wipe_cache`` deletes it first)."""
    from h2hmem.caption import CaptionStore
    from h2hmem.data import load_dataset
    from h2hmem.embed import VectorIndex
    from h2hmem.memory import render_turn
    from h2hmem.run import select_questions

    from ._embedders import make_embedder

    cache = spec.get("embedding_cache")
    if cache and spec.get("wipe_cache"):
        for suffix in ("", "-wal", "-shm"):
            Path(cache + suffix).unlink(missing_ok=True)
    t = time.perf_counter()
    embedder = make_embedder(spec["embedder"], cache)
    asyncio.run(embedder.embed(["warm-up"]))
    if spec.get("load_model"):  # a warm cache serves the warm-up: load the weights before timing anyway
        from h2hmem.embed._minilm import _load

        _load()
    load_s = time.perf_counter() - t
    root = Path(spec["data_root"])
    ds = load_dataset(root, "all")
    captions = CaptionStore(root).for_dialogue
    chunks: list[tuple[str, str, str]] = []  # (dialogue id, chunk id, text)
    for d in ds.dialogues:
        cap = captions(d.split, d.name)
        for s in d.sessions:
            if s.absent:
                continue
            for turn in s.turns:
                chunks.append((d.id, f"{s.name}/t{turn.index}", f"({s.name}) " + render_turn(s, turn, cap)))
    if spec.get("turns") is not None:
        chunks = chunks[: spec["turns"]]

    async def build() -> tuple[dict[str, Any], float, float]:
        t0 = time.perf_counter()
        vectors = await embedder.embed([c[2] for c in chunks])
        t1 = time.perf_counter()
        indexes: dict[str, Any] = {}
        by_dialogue: dict[str, list[int]] = {}
        for i, (did, _, _) in enumerate(chunks):
            by_dialogue.setdefault(did, []).append(i)
        for did, rows in by_dialogue.items():
            indexes[did] = VectorIndex()
            indexes[did].add([chunks[i][1] for i in rows], vectors[rows])
        return indexes, t1 - t0, time.perf_counter() - t1

    async def retrieve(indexes: dict[str, Any], questions: list[Any]) -> tuple[list[float], list[float]]:
        embed_ms, search_ms = [], []
        for q in questions:
            t0 = time.perf_counter()
            qvec = (await embedder.embed([q.text.strip()]))[0]
            t1 = time.perf_counter()
            indexes[f"{q.split}/{q.dialogue}"].search(qvec, TOP_K)
            t2 = time.perf_counter()
            embed_ms.append((t1 - t0) * 1000)
            search_ms.append((t2 - t1) * 1000)
        return embed_ms, search_ms

    stats0 = getattr(embedder, "stats", None)
    stats0 = stats0.model_copy() if stats0 is not None else None
    cpu0 = time.process_time()
    indexes, embed_s, add_s = asyncio.run(build())
    build_cpu = time.process_time() - cpu0
    build_stats = (embedder.stats - stats0).as_dict() if stats0 is not None else {}
    n_queries = spec.get("queries")
    questions = [q for q in select_questions(ds, None) if f"{q.split}/{q.dialogue}" in indexes]
    questions = questions if n_queries is None else questions[:n_queries]
    embed_ms, search_ms = asyncio.run(retrieve(indexes, questions)) if questions else ([], [])
    total_ms = [a + b for a, b in zip(embed_ms, search_ms)]
    out: dict[str, Any] = {
        "turns": len(chunks),
        "queries": len(questions),
        "embedder": getattr(embedder, "name", spec["embedder"]),
        "embedder_load_s": round(load_s, 2),
        "embed_s": round(embed_s, 3),
        "index_add_s": round(add_s, 4),
        "build_s": round(embed_s + add_s, 3),
        "build_cpu_s": round(build_cpu, 2),
        "turns_per_s": round(len(chunks) / (embed_s + add_s), 1) if chunks else None,
        "torch_threads": _torch_threads(),
    }
    # the build's own counts: turns read from the persistent cache vs computed by the model
    out.update({f"build_{k}": v for k, v in build_stats.items() if k in ("cache_hits", "computed", "model_calls")})
    if total_ms:
        for name, xs in (("query", total_ms), ("embed", embed_ms), ("search", search_ms)):
            out[f"{name}_p50_ms"] = round(percentile(xs, 50), 3)
            out[f"{name}_p95_ms"] = round(percentile(xs, 95), 3)
    return out


def index_row(
    b: Bench,
    root: Path,
    turns: int | None,
    queries: int | None,
    *,
    embedder: str | None = None,
    extra: dict[str, Any] | None = None,
    tag: str = "",
) -> dict[str, Any]:
    """One ``index_step`` (child process). ``embedder`` defaults to the profile's; ``extra`` adds
    spec keys (embedding_cache, wipe_cache, load_model); ``tag`` names the step (and its memo key)."""
    spec = {
        "data_root": str(root),
        "embedder": embedder or b.profile.index_embedder,
        "turns": turns,
        "queries": queries,
        **(extra or {}),
    }
    res = b.step(
        f"index build {root.name} ({turns or 'all'} turns, {queries if queries is not None else 'all'} "
        f"queries, {spec['embedder']}{', ' + tag if tag else ''})",
        "bench.index:index_step",
        spec,
        key=f"index|{root.name}|{turns}|{queries}|{spec['embedder']}|{tag}",
    )
    return {"what": f"{spec['embedder']} over {root.name}", **res}


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    res = WorkloadResult("index", f"index: {p.index_embedder} index build and retrieval latency — {p.name}", COLUMNS)
    res.settings = {
        "embedder": p.index_embedder,
        "turns": p.index_turns or "all",
        "queries": p.index_queries if p.index_queries is not None else "all",
        "top_k": TOP_K,
        "torch_threads": "h2hmem.embed._minilm.torch_threads() (= CPUs this process may use)",
    }
    row = index_row(b, root, p.index_turns, p.index_queries)
    res.rows.append(row)
    goal = BUILD_GOAL_S * row["turns"] / 7078  # the goal is stated for all 7,078 turns
    res.targets.append(
        Target(f"index build of {row['turns']:,} turns", f"< {goal:.0f} s", row["build_s"], "s", row["build_s"] < goal)
    )
    b.write(res, started)
    return res


def _torch_threads() -> int | None:
    import sys

    if "torch" not in sys.modules:
        return None
    return int(sys.modules["torch"].get_num_threads())
