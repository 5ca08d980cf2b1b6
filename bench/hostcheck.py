"""``python -m bench.hostcheck``: what a host does to the harness, for comparing machines (a lent GPU host against the
development VM, issue 26).

Two measurements, each step in a child process of its own (``bench/_procs.py``):

1. **calibration**: a fixed pure-Python workload (:func:`calibration_work`: dict, string, list and JSON operations
   like the harness's, no I/O), best of 5 — CPU milliseconds; the host's speed for interpreted code, which moves
   the harness's CPU per question and not the transport floor's (mostly C and the kernel);
2. **naive-rag at C = 32** (preset ``paper``, the full-scale synthetic dataset, the hashed stand-in embedder,
   L = 200 ms), a cold run and then a cached rerun (a new run dir, the cold run's request cache), alternated
   ``--repeats`` times between two ways of importing ``bm25s`` before the run: ``h2hmem`` (through
   ``h2hmem.memory._bm25s_import``, what h2hmem does) and ``plain`` (``import bm25s`` first: JAX and numba come in
   where they are installed, and on a GPU host JAX starts its CUDA back-end). Per step: CPU s, CPU ms per question
   without retrieval, wall s, peak RSS, the collector's seconds and collections per generation, OS threads at the
   end, and whether ``jax`` / ``numba`` were imported.

Results: ``--out`` (default ``bench/results/hostcheck.json``: machine, settings, rows), and each row as a JSON line on
stdout. About 1.5 minutes with ``--repeats 2`` on the 2-core development VM. On a GPU host the ``plain`` arm's JAX
takes 75% of the GPU's memory for its child process (JAX's default preallocation): run it where no model server
shares the card; a step that fails stops the check with its error (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ._core import now_iso
from ._data import ensure_dataset
from ._env import machine_info
from ._mock import MockServerProcess
from ._procs import REPO, StepError, run_step
from ._step import proc_status
from .cpu import per_question

IMPORTS = ("h2hmem", "plain")
"""How ``bm25s`` is imported before the run (see the module's notes)."""
LATENCY_S = 0.2
CONCURRENCY = 32
COLUMNS = (
    "imports",
    "step",
    "cpu_s",
    "cpu_ms_per_q_excl",
    "wall_s",
    "peak_rss_mb",
    "gc_s",
    "gc_collections",
    "os_threads",
    "jax",
    "numba",
)


def calibration_work(n: int = 20_000) -> int:
    """A fixed amount of mostly interpreted work, no I/O: ``n`` small records built, formatted, encoded to JSON and
    parsed back (the standard library's C encoder and decoder, as the harness uses), sorted in batches of 64. Returns
    the words of the sorted batches (5 per record of a full batch), so nothing is optimised away."""
    total = 0
    records: list[dict[str, Any]] = []
    for i in range(n):
        rec = {"id": f"q{i:05d}", "turns": [i % 7, i % 11, i % 13], "text": f"turn {i} of session {i % 29}"}
        rec["words"] = rec["text"].split()
        records.append(json.loads(json.dumps(rec)))
        if len(records) == 64:
            records.sort(key=lambda r: (r["turns"][1], r["id"]))
            total += sum(len(r["words"]) for r in records)
            records.clear()
    return total


def calibrate(spec: dict[str, Any]) -> dict[str, Any]:
    """Step: :func:`calibration_work` ``spec["rounds"]`` times; the best and median CPU milliseconds."""
    times = []
    for _ in range(int(spec.get("rounds", 5))):
        c0 = time.process_time()
        calibration_work()
        times.append(1000 * (time.process_time() - c0))
    times.sort()
    return {"best_ms": round(times[0], 1), "median_ms": round(times[len(times) // 2], 1)}


def harness_with_imports(spec: dict[str, Any]) -> dict[str, Any]:
    """Step: ``bm25s`` imported as ``spec["imports"]`` says, then :func:`bench._harness.harness_step` on ``spec``;
    its result with the OS threads of this process at the end and whether jax / numba were imported."""
    if spec["imports"] == "plain":
        import bm25s  # noqa: F401 — the point: JAX and numba come in where installed

    from ._harness import harness_step

    result = harness_step(spec)
    result["os_threads"] = proc_status("Threads")
    result["jax"] = "jax" in sys.modules
    result["numba"] = "numba" in sys.modules
    return result


def measure(repeats: int, work_dir: Path, *, scale: str = "full", latency_s: float = LATENCY_S) -> dict[str, Any]:
    """Calibration, then ``repeats`` × (cold run, cached rerun) per import mode, alternating modes, on the synthetic
    dataset of ``scale`` (``h2hmem.data.synthesize_dataset``'s) with a mock of ``latency_s`` per call. Rows as
    described in the module's notes."""
    started = now_iso()
    root, _ = ensure_dataset(scale)
    rows: list[dict[str, Any]] = [{"imports": "-", "step": "calibration", **run_step("bench.hostcheck:calibrate", {})}]
    with MockServerProcess(latency_s=latency_s) as srv:
        for i in range(repeats):
            for mode in IMPORTS:
                cache = work_dir / f"cache-{mode}.sqlite"
                for step, wipe in (("cold", ["run", "cache"]), ("cached rerun", ["run"])):
                    spec = {
                        "data_root": str(root),
                        "method": "naive-rag",
                        "concurrency": CONCURRENCY,
                        "limit": None,
                        "base_url": srv.base_url,
                        "embedder": "hashed",
                        "out_dir": str(work_dir / "runs"),
                        "run_id": f"{mode}-{i}-{step.replace(' ', '-')}",
                        "cache_path": str(cache),
                        "wipe": wipe,
                        "transcripts": True,
                        "embedding_cache": None,
                        "preset": "paper",
                        "imports": mode,
                    }
                    r = per_question(run_step("bench.hostcheck:harness_with_imports", spec))
                    rows.append({"imports": mode, "step": step, "repeat": i + 1, **r})
                    print(json.dumps({k: rows[-1].get(k) for k in COLUMNS}), flush=True)
    return {
        "workload": "hostcheck",
        "started_at": started,
        "finished_at": now_iso(),
        "machine": machine_info(),
        "settings": {
            "dataset": scale,
            "method": "naive-rag",
            "preset": "paper",
            "C": CONCURRENCY,
            "latency_s": latency_s,
            "repeats": repeats,
            "imports": list(IMPORTS),
        },
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2, help="cold run + cached rerun per import mode, alternated (≥ 1)")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "hostcheck.json")
    p.add_argument("--work-dir", type=Path, default=REPO / "bench" / ".data" / "hostcheck")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be ≥ 1")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(args.repeats, args.work_dir)
    except StepError as e:  # e.g. the plain arm's JAX failing to take GPU memory on a busy card
        sys.exit(f"error: a hostcheck step failed: {e}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
