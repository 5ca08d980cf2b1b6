"""Workload ``embed`` — what embeddings cost, cold and from the persistent embedding cache.

Rows:
1. ``index cold``: every turn's chunk text (as naive-rag embeds it) through the real embedder
   with an empty embedding cache (``bench.index:index_step``): turns/s of the model itself;
2. ``index warm``: the same build again in a new process with the cache filled by row 1;
3. ``naive-rag stand-in``: the harness at C = 32 with the near-free hashed embedder (the
   reference time: harness and model calls, no embedding cost);
4. ``naive-rag cold``: the same run with the real embedder and an empty embedding cache;
5. ``naive-rag warm embeddings``: a new run dir and a *fresh request cache* (every answer is a
   model call again), but the embedding cache of row 4: no turn or query is embedded again.

Targets: index ≥ 300 turns/s (cold), cold run ≤ 3× the stand-in, warm run: 0 texts computed and
≤ 1.2× the stand-in. Rows 3–5 share one mock server; every step is its own process.
"""

from __future__ import annotations

from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso, ratio
from ._mock import MockServerProcess
from .index import index_row
from .run import TARGET_C, harness_row

INDEX_GOAL = 300.0
"""turns/s of the cold index build (the brief)."""
COLD_GOAL = 3.0
WARM_GOAL = 1.2

COLUMNS = [
    ("what", "what"),
    ("turns", "turns"),
    ("questions", "questions"),
    ("wall_s", "wall s"),
    ("build_s", "build s"),
    ("turns_per_s", "turns/s"),
    ("cpu_s", "CPU s"),
    ("embed_texts", "texts asked"),
    ("embed_computed", "computed"),
    ("embed_cache_hits", "cache hits"),
    ("embed_memory_hits", "memory hits"),
    ("embed_model_calls", "model calls"),
    ("ratio_to_standin", "× stand-in"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    model = p.index_embedder if p.index_embedder != "hashed" else "hashed-cached"
    res = WorkloadResult("embed", f"embed: {model} cold vs from the embedding cache — {p.name}", COLUMNS)
    cache_dir = b.work_dir("embed-cache")
    index_cache = str(cache_dir / "index-embeddings.sqlite")
    run_cache = str(cache_dir / "run-embeddings.sqlite")
    res.settings = {
        "embedder": model,
        "turns": p.index_turns or "all",
        "questions": p.run_questions or "all",
        "concurrency": TARGET_C,
        "latency_s": p.latency_s,
        "embedding_cache": "SQLite (h2hmem.embed.EmbeddingCache), emptied before each cold row",
    }

    cold = _index(b, root, model, p.index_turns, index_cache, wipe=True, tag="cold")
    warm = _index(b, root, model, p.index_turns, index_cache, wipe=False, tag="warm")
    res.rows += [cold, warm]
    with MockServerProcess(p.latency_s) as srv:
        standin = harness_row(
            b, srv, root, "naive-rag", TARGET_C, p.run_questions, tag="cold", run_id=f"embed-{root.name}-standin"
        )
        common: dict[str, Any] = dict(embedder=model, embedding_cache=run_cache)
        mini_cold = harness_row(
            b,
            srv,
            root,
            "naive-rag",
            TARGET_C,
            p.run_questions,
            tag="cold (embed cache empty)",
            run_id=f"embed-{root.name}-cold",
            wipe=("run", "cache", "embeddings"),
            **common,
        )
        mini_warm = harness_row(
            b,
            srv,
            root,
            "naive-rag",
            TARGET_C,
            p.run_questions,
            tag="warm embeddings (new run dir, new request cache)",
            run_id=f"embed-{root.name}-warm",
            wipe=("run", "cache"),
            **common,
        )
    for row, what in (
        (standin, "naive-rag C=32, hashed stand-in"),
        (mini_cold, f"naive-rag C=32, {model}, cold"),
        (mini_warm, f"naive-rag C=32, {model}, warm embedding cache"),
    ):
        row["what"] = what
        row["ratio_to_standin"] = round(ratio(row["wall_s"], standin["wall_s"]) or 0, 2)
        res.rows.append(row)

    scaled = p.index_turns is not None
    res.targets.append(
        Target(
            f"index build, cold ({cold['turns']:,} turns)",
            f"≥ {INDEX_GOAL:g} turns/s",
            cold["turns_per_s"],
            "turns/s",
            cold["turns_per_s"] >= INDEX_GOAL,
        )
    )
    res.targets.append(
        Target(
            "index build, warm cache: turns computed",
            "0",
            warm.get("build_computed"),
            "",
            warm.get("build_computed") == 0,
        )
    )
    res.targets.append(
        Target(
            "naive-rag cold run vs stand-in",
            f"≤ {COLD_GOAL:g}×",
            mini_cold["ratio_to_standin"],
            "×",
            mini_cold["ratio_to_standin"] <= COLD_GOAL,
        )
    )
    res.targets.append(
        Target(
            "naive-rag warm-embedding run: texts computed",
            "0",
            mini_warm.get("embed_computed"),
            "",
            mini_warm.get("embed_computed") == 0,
        )
    )
    res.targets.append(
        Target(
            "naive-rag warm-embedding run vs stand-in",
            f"≤ {WARM_GOAL:g}×",
            mini_warm["ratio_to_standin"],
            "×",
            mini_warm["ratio_to_standin"] <= WARM_GOAL,
        )
    )
    if scaled:
        res.notes.append(
            f"reduced profile: {cold['turns']:,} turns in the index rows; the goals are stated for all "
            "7,078 turns and 2,236 questions"
        )
    res.notes.append(
        f"cold index: {cold['turns']:,} turns in {cold['build_s']:.1f} s, {cold.get('build_cpu_s')} CPU s "
        f"on {cold.get('torch_threads')} torch threads (load {cold['load_avg_1m']}); warm: "
        f"{warm['build_s']:.2f} s, {warm.get('build_cache_hits')} cache hits"
    )
    b.write(res, started)
    return res


def _index(b: Bench, root: Any, model: str, turns: int | None, cache: str, *, wipe: bool, tag: str) -> dict[str, Any]:
    extra = {"embedding_cache": cache, "wipe_cache": wipe, "load_model": model == "minilm"}
    row = index_row(b, root, turns, 0, embedder=model, extra=extra, tag=tag)
    row["what"] = f"index {tag}: {model} over {root.name}"
    row["embed_computed"], row["embed_cache_hits"] = row.get("build_computed"), row.get("build_cache_hits")
    row["embed_model_calls"] = row.get("build_model_calls")
    return row
