"""Workloads 1 and 2: ``run`` — the runner at concurrency C against a mock model of latency L,
compared with the bound N·L/C, and the sequential reference loop on the same questions.

Rows: one per (method, C) plus one reference row per method (and, in ``full``, one naive-rag
row with the real MiniLM embedder, to show the embedding cost apart from the harness).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso, ratio
from ._mock import MockServerProcess

TARGET_C = 32
OVERHEAD_GOAL = 0.10
SPEEDUP_GOAL = 20.0

COLUMNS = [
    ("method", "method"),
    ("step", "step"),
    ("C", "C"),
    ("questions", "questions"),
    ("calls", "calls"),
    ("wall_s", "wall s"),
    ("bound_s", "bound N·L/C s"),
    ("ratio_to_bound", "wall/bound"),
    ("ratio_to_floor", "wall/floor"),
    ("cpu_s", "CPU s"),
    ("mock_cpu_s", "mock CPU s"),
    ("prompt_tokens", "prompt tok"),
    ("completion_tokens", "compl. tok"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def harness_row(
    b: Bench,
    srv: MockServerProcess,
    root: Path,
    method: str,
    concurrency: int,
    limit: int | None,
    *,
    embedder: str = "hashed",
    tag: str = "cold",
    cache: bool = True,
    wipe: tuple[str, ...] = ("run", "cache"),
    run_id: str | None = None,
    cache_name: str | None = None,
    transcripts: bool = True,
    embedding_cache: str | None = None,
    preset: str = "paper",
) -> dict[str, Any]:
    """Run the harness once (child process) and return a table row with the bound and its ratio.

    ``wipe``: what to delete first — ``"run"`` (the run dir), ``"cache"`` (the request cache),
    ``"embeddings"`` (the embedding cache file ``embedding_cache``, used by cached embedders).
    The bound is calls·L/C with calls = chat requests the mock server received in this step.
    """
    scale = root.name
    run_id = run_id or f"{scale}-{method}-c{concurrency}-{embedder}-{limit or 'all'}" + (
        "" if preset == "paper" else f"-{preset}"
    )
    work = b.work_dir("runs")
    spec = {
        "data_root": str(root),
        "method": method,
        "concurrency": concurrency,
        "limit": limit,
        "base_url": srv.base_url,
        "embedder": embedder,
        "out_dir": str(work),
        "run_id": run_id,
        "cache_path": str(b.work_dir("cache") / f"{cache_name or run_id}.sqlite") if cache else None,
        "wipe": list(wipe),
        "transcripts": transcripts,
        "embedding_cache": embedding_cache,
        "preset": preset,
    }
    key = f"harness|{run_id}|{concurrency}|{limit}|{embedder}|{tag}|{wipe}|{transcripts}|{preset}"
    srv.reset()
    res = b.step(
        f"{method} C={concurrency} {tag} ({embedder}, {limit or 'all'} q)", "bench._harness:harness_step", spec, key=key
    )
    stats = srv.stats()
    if "calls" not in res:  # first time (not memoised): attach what the server saw
        res["calls"] = stats["chat_calls"]
        res["max_in_flight"] = stats["max_in_flight"]
        res["mock_cpu_s"] = stats["cpu_s"]
    bound = res["calls"] * b.profile.latency_s / concurrency
    return {
        "method": method,
        "step": f"harness {tag}" + ("" if embedder == "hashed" else f" ({embedder})"),
        "C": concurrency,
        **res,
        "bound_s": round(bound, 4),
        "ratio_to_bound": round(res["wall_s"] / bound, 3) if bound else None,
    }


def reference_row(b: Bench, srv: MockServerProcess, root: Path, method: str, limit: int | None) -> dict[str, Any]:
    out = b.work_dir("reference") / f"{root.name}-{method}-{limit or 'all'}.json"
    spec = {
        "data_root": str(root),
        "method": method,
        "limit": limit,
        "base_url": srv.base_url,
        "embedder": "hashed",
        "out_path": str(out),
    }
    srv.reset()
    res = b.step(
        f"{method} sequential reference ({limit or 'all'} q)",
        "bench.reference:reference_step",
        spec,
        key=f"reference|{root.name}|{method}|{limit}",
    )
    stats = srv.stats()
    res.setdefault("calls", stats["chat_calls"])
    res.setdefault("mock_cpu_s", stats["cpu_s"])
    bound = res["calls"] * b.profile.latency_s
    return {
        "method": method,
        "step": "sequential reference",
        "C": 1,
        **res,
        "bound_s": round(bound, 3),
        "ratio_to_bound": round(res["wall_s"] / bound, 3) if bound else None,
    }


def floor_row(b: Bench, srv: MockServerProcess, like: dict[str, Any], repeat: int = 0) -> dict[str, Any]:
    """The transport floor (bench/_floor.py) for the calls, C and mean prompt size of ``like``."""
    calls, c = like["calls"], like["C"]
    chars = 4 * like["prompt_tokens"] // max(calls, 1)  # ~4 characters per cl100k token of English
    spec = {"base_url": srv.base_url, "calls": calls, "concurrency": c, "prompt_chars": chars}
    srv.reset()
    res = b.step(
        f"{like['method']} transport floor C={c} ({calls} calls, ~{chars:,} chars)",
        "bench._floor:floor_step",
        spec,
        key=f"floor|{calls}|{c}|{chars}|{repeat}",
    )
    stats = srv.stats()
    res.setdefault("calls", stats["chat_calls"])
    res.setdefault("mock_cpu_s", stats["cpu_s"])
    bound = res["calls"] * b.profile.latency_s / c
    return {
        "method": like["method"],
        "step": "transport floor",
        "C": c,
        **res,
        "bound_s": round(bound, 3),
        "ratio_to_bound": round(res["wall_s"] / bound, 3) if bound else None,
    }


def median_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row with the median wall time (the lower middle for an even count), with every
    run's wall time in ``wall_s_runs``."""
    ordered = sorted(rows, key=lambda r: r["wall_s"])
    row = dict(ordered[(len(ordered) - 1) // 2])
    row["wall_s_runs"] = [r["wall_s"] for r in rows]
    return row


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    res = WorkloadResult(
        "run",
        f"run: harness vs bound N·L/C (L = {p.latency_s * 1000:.0f} ms) and sequential reference — {p.name}",
        COLUMNS,
    )
    res.settings = {
        "latency_s": p.latency_s,
        "methods": list(p.methods),
        "concurrencies": list(p.concurrencies),
        "repeats_at_c32": p.repeats,
        "questions_per_run": p.run_questions or "all",
        "c1_and_reference_questions": p.c1_questions,
        "dataset": f"synthesize_dataset(scale={p.data_scale!r}, seed=0)",
        "embedder": "hashed (bench)",
        "cache": "fresh SQLite request cache per run (written, never hit)",
    }
    with MockServerProcess(p.latency_s) as srv:
        for method in p.methods:
            for c in p.concurrencies:
                limit = p.c1_questions if c == 1 else p.run_questions
                if c != TARGET_C:
                    res.rows.append(harness_row(b, srv, root, method, c, limit))
                    continue
                runs = [
                    harness_row(b, srv, root, method, c, limit, tag=f"cold #{i + 1}" if i else "cold")
                    for i in range(p.repeats)
                ]
                row = median_of(runs)
                row["step"] = "harness cold"
                res.rows.append(row)
                res.rows.append(median_of([floor_row(b, srv, row, repeat=i) for i in range(p.repeats)]))
            res.rows.append(reference_row(b, srv, root, method, p.c1_questions))
        if p.minilm_run and "naive-rag" in p.methods:
            res.rows.append(harness_row(b, srv, root, "naive-rag", TARGET_C, p.run_questions, embedder="minilm"))

    for method in p.methods:
        at_c = _row(res.rows, method, "harness cold", TARGET_C)
        ref = _row(res.rows, method, "sequential reference", 1)
        c1 = _row(res.rows, method, "harness cold", 1)
        floor = _row(res.rows, method, "transport floor", TARGET_C)
        if at_c:
            over = at_c["ratio_to_bound"] - 1
            res.targets.append(
                Target(
                    f"{method}: harness overhead at C={TARGET_C}",
                    f"≤ {OVERHEAD_GOAL:.0%}",
                    round(over * 100, 1),
                    "%",
                    over <= OVERHEAD_GOAL,
                )
            )
        if at_c and floor:
            at_c["ratio_to_floor"] = round(at_c["wall_s"] / floor["wall_s"], 3)
            res.notes.append(
                f"{method} C={TARGET_C}: transport floor {floor['wall_s']:.1f} s "
                f"({(floor['ratio_to_bound'] - 1) * 100:.0f}% over the bound, without any harness); "
                f"harness {at_c['wall_s']:.1f} s = {at_c['ratio_to_floor']:.2f}× the floor"
            )
        if at_c and ref:
            speedup = ratio(ref["wall_s"] / ref["questions"], at_c["wall_s"] / at_c["questions"])
            res.targets.append(
                Target(
                    f"{method}: speed-up vs sequential reference at C={TARGET_C}",
                    f"≥ {SPEEDUP_GOAL:g}×",
                    round(speedup, 1) if speedup else None,
                    "×",
                    None if speedup is None else speedup >= SPEEDUP_GOAL,
                )
            )
        if c1 and ref:
            res.notes.append(
                f"{method}: harness at C=1 vs the reference on the same {ref['questions']} questions: "
                f"{c1['wall_s']:.1f} s vs {ref['wall_s']:.1f} s"
            )
    mini = _row(res.rows, "naive-rag", "harness cold (minilm)", TARGET_C)
    hashed = _row(res.rows, "naive-rag", "harness cold", TARGET_C)
    if mini and hashed:
        res.notes.append(
            f"naive-rag C={TARGET_C} with real MiniLM: {mini['wall_s']:.1f} s vs {hashed['wall_s']:.1f} s "
            f"with the hashed stand-in → ~{mini['wall_s'] - hashed['wall_s']:.1f} s is MiniLM "
            "(turn and query embeddings on the CPU, overlapping the model calls)"
        )
    res.notes.append(
        "speed-up = reference seconds per question ÷ harness seconds per question at "
        f"C={TARGET_C}; the reference runs the first {p.c1_questions} questions (at L per call it "
        "would take N·L for all N)"
    )
    b.write(res, started)
    return res


def _row(rows: list[dict[str, Any]], method: str, step: str, c: int) -> dict[str, Any] | None:
    return next((r for r in rows if r["method"] == method and r["step"] == step and r["C"] == c), None)
