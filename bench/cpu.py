"""Workload ``cpu`` — the harness's own CPU per question, against the transport floor.

Per method (naive-rag, full-text, h2h) and preset (``paper``, ``harmonized``), at L per call:

1. ``harness cold`` at C = 32 (and C = 64 for ``paper``): a fresh run dir and request cache;
   CPU seconds of the harness process, per question, and the CPU seconds of the method's
   retrieval (its retrieval step — query embedding with the hashed stand-in, scoring, search — and
   the stand-in's embedding of the turns at ``observe``, the index build: ``bench/_harness.py``
   ``_RetrievalCPU``) reported apart — ``CPU ms/q excl. retrieval`` = (CPU s − retrieval CPU s) ÷ questions;
2. ``transport floor`` (``paper``): the same calls, C and prompt size sent by a bare aiohttp
   loop (``bench/_floor.py``); harness ÷ floor is what the harness adds to the calls, and the
   harness's CPU without retrieval ÷ the floor's CPU (``CPU excl. retrieval ÷ floor CPU``) is its
   CPU in units of the bare loop's, a figure the host's speed moves less than CPU seconds (the
   same code's CPU per question varies up to 2× with this VM's state: ``bench/README.md``, finding 11);
   For ``h2h`` at the first C, a third row runs it with a remote embedder (20 ms a request, the
   retrieval waits): harness ÷ the same floor, with the runner's look-ahead hiding the wait;
3. ``cached rerun``: a new run dir with the cold run's request cache (every reply is a cache
   hit, nothing is sent): wall and CPU of a whole rerun, dataset load included;
4. the sequential reference (``bench/reference.py``, naive-rag and full-text, ``paper``) on the
   first questions, for the speed-up at C = 32.

Under ``paper`` the cold run and the floor alternate ``repeats`` times (3 in ``full``) and each row is
the median run (its runs in ``wall_s_runs``); other steps are single runs. On a shared machine
compare CPU seconds, which the load moves less than wall time, and read each row with its ``load``.
"""

from __future__ import annotations

from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso, ratio
from ._mock import MockServerProcess
from .run import floor_row, harness_row, median_of, reference_row

METHODS = ("naive-rag", "full-text", "h2h")
PRESETS = ("paper", "harmonized")
REFERENCE_METHODS = ("naive-rag", "full-text")
FLOOR_GOALS = {32: 1.05, 64: 1.10}
"""Harness ÷ transport floor, per C, for the ``paper`` preset."""
CPU_GOAL_MS = 1.5
"""Harness CPU per question, retrieval excluded (ms)."""
RERUN_GOAL_S = 10.0
SPEEDUP_GOAL = 25.0
FULL_QUESTIONS = 2236

COLUMNS = [
    ("method", "method"),
    ("preset", "preset"),
    ("step", "step"),
    ("C", "C"),
    ("questions", "questions"),
    ("calls", "model calls"),
    ("cached_calls", "cache hits"),
    ("wall_s", "wall s"),
    ("floor_s", "floor s"),
    ("ratio_to_floor", "harness ÷ floor"),
    ("cpu_s", "CPU s"),
    ("cpu_ms_per_q", "CPU ms/q"),
    ("retrieval_s", "retrieval CPU s"),
    ("cpu_ms_per_q_excl", "CPU ms/q excl. retrieval"),
    ("floor_cpu_s", "floor CPU s"),
    ("cpu_excl_per_floor_cpu", "CPU excl. retrieval ÷ floor CPU"),
    ("gc_s", "collector s"),
    ("gc_full", "full collections"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def _cpu_excl(row: dict[str, Any]) -> float:
    """The run's CPU seconds without its retrieval's (a row without ``retrieval_s`` has none apart)."""
    return float(row["cpu_s"] - (row.get("retrieval_s") or 0.0))


def per_question(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (a harness step's result) with its CPU ms per question, with and without retrieval, and its full
    collections (``gc_full``) added where the step reported them."""
    n = row.get("questions") or 0
    if n and row.get("cpu_s") is not None:
        row["cpu_ms_per_q"] = round(1000 * row["cpu_s"] / n, 3)
        row["cpu_ms_per_q_excl"] = round(1000 * _cpu_excl(row) / n, 3)
    if row.get("gc_collections"):
        row["gc_full"] = row["gc_collections"][2]
    return row


def _per_floor_cpu(row: dict[str, Any], floor: dict[str, Any]) -> None:
    """The harness's CPU without retrieval in units of the transport floor's CPU for the same calls
    (each the run of median wall time among the alternating runs): what the harness costs beside a
    bare aiohttp loop, read apart from how fast the host ran that hour."""
    row["floor_cpu_s"] = floor.get("cpu_s")
    if row.get("cpu_s") is not None and floor.get("cpu_s"):
        row["cpu_excl_per_floor_cpu"] = round(_cpu_excl(row) / floor["cpu_s"], 2)


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    concurrencies = [c for c in FLOOR_GOALS if c in p.concurrencies] or [max(p.concurrencies)]
    res = WorkloadResult(
        "cpu",
        f"cpu: harness CPU per question, harness ÷ transport floor, cached rerun (L = {p.latency_s * 1000:.0f} ms) — "
        f"{p.name}",
        COLUMNS,
    )
    res.settings = {
        "latency_s": p.latency_s,
        "methods": list(METHODS),
        "presets": list(PRESETS),
        "concurrencies": concurrencies,
        "questions_per_run": p.run_questions or "all",
        "reference_questions": p.c1_questions,
        "embedder": "hashed (bench stand-in; its query embedding is part of retrieval CPU s)",
        "runs": f"paper harness cold and floor: median of {p.repeats} alternating runs; other steps single runs",
    }
    with MockServerProcess(p.latency_s) as srv:
        for preset in PRESETS:
            for method in METHODS:
                for c in concurrencies if preset == "paper" else concurrencies[:1]:
                    run_id = f"cpu-{root.name}-{method}-{preset}-c{c}"
                    # paper: harness and floor alternate `repeats` times; each row is the median run
                    runs, floors = [], []
                    for i in range(p.repeats if preset == "paper" else 1):
                        one = harness_row(
                            b,
                            srv,
                            root,
                            method,
                            c,
                            p.run_questions,
                            preset=preset,
                            run_id=run_id,
                            tag=f"cold #{i + 1}" if i else "cold",
                        )
                        runs.append(one)
                        if preset == "paper":
                            floors.append(floor_row(b, srv, one, repeat=i))
                    row = median_of(runs)
                    row["step"] = "harness cold"
                    row["preset"] = preset
                    res.rows.append(per_question(row))
                    if floors:
                        floor = median_of(floors)
                        floor["preset"] = preset
                        row["floor_s"] = floor["wall_s"]
                        row["ratio_to_floor"] = round(row["wall_s"] / floor["wall_s"], 3)
                        _per_floor_cpu(row, floor)
                        res.rows.append(floor)
                        if method == "h2h" and c == concurrencies[0]:
                            res.rows.append(_remote_row(b, srv, root, c, row))
                    if c == concurrencies[0]:  # the cached rerun: new run dir, the cold run's cache
                        rerun = harness_row(
                            b,
                            srv,
                            root,
                            method,
                            c,
                            p.run_questions,
                            preset=preset,
                            tag="cached rerun",
                            run_id=f"{run_id}-rerun",
                            cache_name=run_id,
                            wipe=("run",),
                        )
                        rerun["preset"] = preset
                        res.rows.append(per_question(rerun))
        for method in REFERENCE_METHODS:
            ref = reference_row(b, srv, root, method, p.c1_questions)
            ref["preset"] = "paper"
            res.rows.append(ref)
    _targets(res, concurrencies)
    b.write(res, started)
    return res


def _remote_row(b: Bench, srv: MockServerProcess, root: Any, c: int, like: dict[str, Any]) -> dict[str, Any]:
    """``h2h`` (paper) with the remote stand-in embedder (``bench/_embedders.py``: 20 ms a request, on
    the loop): its retrieval waits for the query's embedding, and the runner's look-ahead
    (``run/_slots.py``) prepares questions while calls are in flight, so a freed slot sends at once.
    Median of ``repeats`` runs against the floor of ``like`` (the same calls). Its retrieval CPU is not
    separated: a suspending embedder lets other tasks run inside the retrieval step."""
    p = b.profile
    runs = [
        harness_row(
            b,
            srv,
            root,
            "h2h",
            c,
            p.run_questions,
            embedder="hashed-remote",
            run_id=f"cpu-{root.name}-h2h-paper-c{c}-remote",
            tag=f"cold #{i + 1}" if i else "cold",
        )
        for i in range(p.repeats)
    ]
    row = per_question(median_of(runs))
    row.update(
        step="harness cold, remote embedder",
        preset="paper",
        retrieval_s=None,
        cpu_ms_per_q_excl=None,
        floor_s=like["floor_s"],
        ratio_to_floor=round(row["wall_s"] / like["floor_s"], 3),
    )
    return row


def _find(
    rows: list[dict[str, Any]], method: str, preset: str, step: str, c: int | None = None
) -> dict[str, Any] | None:
    return next(
        (
            r
            for r in rows
            if r["method"] == method and r.get("preset") == preset and r["step"] == step and (c is None or r["C"] == c)
        ),
        None,
    )


def _targets(res: WorkloadResult, concurrencies: list[int]) -> None:
    for preset in PRESETS:
        for method in METHODS:
            for c in concurrencies:
                row = _find(res.rows, method, preset, "harness cold", c)
                if row is None:
                    continue
                full = row["questions"] >= FULL_QUESTIONS
                if preset == "paper" and c in FLOOR_GOALS and row.get("ratio_to_floor") is not None:
                    res.targets.append(
                        Target(
                            f"{method} ({preset}): harness ÷ floor at C={c}",
                            f"≤ {FLOOR_GOALS[c]:.2f}",
                            row["ratio_to_floor"],
                            "×",
                            row["ratio_to_floor"] <= FLOOR_GOALS[c] if full else None,
                        )
                    )
                if c == concurrencies[0] and row.get("cpu_ms_per_q_excl") is not None:
                    res.targets.append(
                        Target(
                            f"{method} ({preset}): harness CPU per question excl. retrieval at C={c}",
                            f"≤ {CPU_GOAL_MS:g} ms",
                            row["cpu_ms_per_q_excl"],
                            "ms",
                            row["cpu_ms_per_q_excl"] <= CPU_GOAL_MS if full else None,
                        )
                    )
            rerun = _find(res.rows, method, preset, "harness cached rerun")
            if rerun is not None:
                res.targets.append(
                    Target(
                        f"{method} ({preset}) cached rerun: model calls", "0", rerun["calls"], "", rerun["calls"] == 0
                    )
                )
                res.targets.append(
                    Target(
                        f"{method} ({preset}) cached rerun: wall time ({rerun['questions']} q)",
                        f"≤ {RERUN_GOAL_S:g} s for 2,236 q",
                        rerun["wall_s"],
                        "s",
                        rerun["wall_s"] <= RERUN_GOAL_S if rerun["questions"] >= FULL_QUESTIONS else None,
                    )
                )
    for method in REFERENCE_METHODS:
        ref = _find(res.rows, method, "paper", "sequential reference")
        at_c = _find(res.rows, method, "paper", "harness cold", concurrencies[0])
        if ref and at_c:
            speedup = ratio(ref["wall_s"] / ref["questions"], at_c["wall_s"] / at_c["questions"])
            res.targets.append(
                Target(
                    f"{method}: speed-up vs sequential reference at C={concurrencies[0]}",
                    f"≥ {SPEEDUP_GOAL:g}×",
                    round(speedup, 1) if speedup else None,
                    "×",
                    None if speedup is None else speedup >= SPEEDUP_GOAL,
                )
            )
    res.notes.append(
        "CPU s = process CPU time of the harness during the run (dataset load, memory build, answers, "
        "recording; interpreter start and imports excluded); retrieval CPU s = process CPU time inside the "
        "method's retrieval coroutine (naive-rag: query embedding with the hashed stand-in and top-k search; "
        "h2h: query embeddings, dense + BM25 scoring, boosts, sub-queries); collector s = the garbage "
        "collector's CPU time during the run (part of CPU s, on the event loop's thread), full collections = "
        "its oldest-generation collections (each walks every live object the run has not frozen)"
    )
