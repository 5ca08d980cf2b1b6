"""Workload 3: ``warm`` — rerunning a finished run costs no model calls.

Per method, at C = 32 over the run's questions:
1. ``cold``: a fresh run dir and a fresh request cache (every answer is a model call);
2. ``warm cache``: a new run dir with the same cache — every call is a cache hit (the cache path);
3. ``resume``: the cold run's own dir again — every question is already recorded and skipped.
"""

from __future__ import annotations

from ._core import Bench, Target, WorkloadResult, now_iso
from ._mock import MockServerProcess
from .run import TARGET_C, harness_row

WARM_GOAL_S = 10.0

COLUMNS = [
    ("method", "method"),
    ("step", "step"),
    ("questions", "questions"),
    ("calls", "model calls"),
    ("cached_calls", "cache hits"),
    ("skipped", "skipped (resume)"),
    ("wall_s", "wall s"),
    ("cpu_s", "CPU s"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    res = WorkloadResult("warm", f"warm: rerun through the request cache and resume (C={TARGET_C}) — {p.name}", COLUMNS)
    res.settings = {"latency_s": p.latency_s, "concurrency": TARGET_C, "questions": p.run_questions or "all"}
    with MockServerProcess(p.latency_s) as srv:
        for method in p.methods:
            cold_id = f"warm-{root.name}-{method}"
            common = dict(embedder="hashed", cache=True, cache_name=cold_id)
            rows = [
                harness_row(
                    b,
                    srv,
                    root,
                    method,
                    TARGET_C,
                    p.run_questions,
                    tag="cold",
                    run_id=cold_id,
                    wipe=("run", "cache"),
                    **common,
                ),
                harness_row(
                    b,
                    srv,
                    root,
                    method,
                    TARGET_C,
                    p.run_questions,
                    tag="warm cache",
                    run_id=f"{cold_id}-cache",
                    wipe=("run",),
                    **common,
                ),
                harness_row(
                    b, srv, root, method, TARGET_C, p.run_questions, tag="resume", run_id=cold_id, wipe=(), **common
                ),
            ]
            res.rows.extend(rows)
    for r in res.rows:
        r["step"] = r["step"].removeprefix("harness ")
    n = max((r["questions"] for r in res.rows), default=0)
    for r in res.rows:
        if r["step"] == "cold":
            continue
        res.targets.append(Target(f"{r['method']} {r['step']}: model calls", "0", r["calls"], "", r["calls"] == 0))
        # the goal is stated for the full 2,236 questions; a rerun has fixed costs (dataset load,
        # tokenizer load), so a smaller run is reported but not judged against a scaled-down goal
        res.targets.append(
            Target(
                f"{r['method']} {r['step']}: wall time ({n} q)",
                f"< {WARM_GOAL_S:g} s for 2,236 q",
                r["wall_s"],
                "s",
                r["wall_s"] < WARM_GOAL_S if n >= 2236 else None,
            )
        )
    b.write(res, started)
    return res
