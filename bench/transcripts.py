"""Workload ``transcripts``: what keeping every model call costs — file size and harness overhead.

Per method at C = 32 (L as in ``run``), on the full-scale synthetic data: the harness with
transcripts off and on, alternating (off, on, then on, off, …) so both see the same machine load,
``repeats`` times each; the rows are the median runs. For the "on" runs: the size of
``transcripts.jsonl.gz``, bytes per question and per call, and the compression ratio (JSON text ÷
file). Then, on the full-text transcript: the encoder alone (``encode_record``) with ISA-L at level 1
(the writer's, when ``isal`` is installed) and zlib at levels 1, 6 and 9 — µs per record and bytes —
to show what the engine and level trade.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ._core import Bench, Target, WorkloadResult, now_iso
from ._mock import MockServerProcess
from .run import TARGET_C, harness_row, median_of

SIZE_GOAL_MB = 300.0
"""The brief: a Full (Text) run of the whole dataset must not grow beyond a few hundred MB."""
OVERHEAD_GOAL = 0.05
"""Our goal: transcripts add at most 5% wall time at C = 32."""
CPU_GOAL_MS = 1.0
"""Our goal: at most 1 ms of harness CPU per call (robust to the load of a shared machine, unlike wall time)."""
FULL_QUESTIONS = 2236
"""Questions of the published dataset (extrapolation when a profile answers fewer)."""
ENCODINGS = (("isal", 1), ("zlib", 1), ("zlib", 6), ("zlib", 9))
"""(engine, level) pairs of the encoder rows; ISA-L's row only where ``isal`` is installed."""

COLUMNS = [
    ("method", "method"),
    ("step", "step"),
    ("questions", "questions"),
    ("calls", "calls"),
    ("wall_s", "wall s"),
    ("cpu_s", "CPU s"),
    ("file_mb", "file MB"),
    ("bytes_per_question", "bytes/question"),
    ("bytes_per_call", "bytes/call"),
    ("compression", "JSON ÷ file"),
    ("us_per_record", "µs/record"),
    ("peak_rss_mb", "peak RSS MiB"),
    ("load_avg_1m", "load"),
]


def _file_stats(run_dir: Path) -> dict[str, Any]:
    from h2hmem.records import TRANSCRIPTS, read_transcripts

    path = run_dir / TRANSCRIPTS
    records = read_transcripts(path)
    size = path.stat().st_size
    raw = sum(len(json.dumps(r, ensure_ascii=False).encode("utf-8")) + 1 for r in records)
    return {"records": len(records), "file_bytes": size, "json_bytes": raw}


def _encode_rows(method: str, run_dir: Path) -> list[dict[str, Any]]:
    """The encoder alone on every record of one transcript, per (engine, level) (in this process)."""
    from h2hmem.records import ENGINE, encode_record, read_transcripts
    from h2hmem.records._transcripts import COMPRESS_LEVEL

    records = read_transcripts(run_dir)
    rows = []
    for engine, level in ENCODINGS:
        if engine == "isal" and ENGINE != "isal":
            continue
        t0 = time.process_time()
        size = sum(len(encode_record(r, level, engine)) for r in records)
        cpu = time.process_time() - t0
        rows.append(
            {
                "method": method,
                "step": f"encoder, {engine} level {level}"
                + (" (the writer's)" if engine == ENGINE and level == COMPRESS_LEVEL else ""),
                "calls": len(records),
                "cpu_s": round(cpu, 3),
                "file_mb": round(size / 1e6, 2),
                "bytes_per_call": round(size / max(len(records), 1)),
                "us_per_record": round(cpu / max(len(records), 1) * 1e6, 1),
            }
        )
    return rows


def measure(b: Bench) -> WorkloadResult:
    p = b.profile
    started = now_iso()
    root = b.dataset(p.data_scale)
    repeats = max(p.repeats, 1)
    res = WorkloadResult("transcripts", f"transcripts: size and harness overhead at C={TARGET_C} — {p.name}", COLUMNS)
    res.settings = {
        "latency_s": p.latency_s,
        "concurrency": TARGET_C,
        "questions_per_run": p.run_questions or "all",
        "repeats": repeats,
        "dataset": f"synthesize_dataset(scale={p.data_scale!r}, seed=0)",
        "embedder": "hashed (bench)",
        "order": "off/on alternating, median of each",
    }
    with MockServerProcess(p.latency_s) as srv:
        for method in p.methods:
            on, off = [], []
            for i in range(repeats):
                for flag in (False, True) if i % 2 == 0 else (True, False):
                    row = harness_row(
                        b,
                        srv,
                        root,
                        method,
                        TARGET_C,
                        p.run_questions,
                        transcripts=flag,
                        tag=f"transcripts {'on' if flag else 'off'} #{i + 1}",
                        run_id=f"tr-{root.name}-{method}-{'on' if flag else 'off'}",
                    )
                    if flag:
                        row.update(_file_stats(Path(row["run_dir"])))
                    (on if flag else off).append(row)
            row_off, row_on = median_of(off), median_of(on)
            row_off["step"], row_on["step"] = "transcripts off", "transcripts on"
            q = row_on["questions"]
            row_on.update(
                {
                    "file_mb": round(row_on["file_bytes"] / 1e6, 2),
                    "bytes_per_question": round(row_on["file_bytes"] / max(q, 1)),
                    "bytes_per_call": round(row_on["file_bytes"] / max(row_on["records"], 1)),
                    "compression": round(row_on["json_bytes"] / max(row_on["file_bytes"], 1), 2),
                }
            )
            res.rows += [row_off, row_on]
            over = row_on["wall_s"] / row_off["wall_s"] - 1
            cpu_ms = (row_on["cpu_s"] - row_off["cpu_s"]) / max(row_on["records"], 1) * 1000
            res.targets.append(
                Target(
                    f"{method}: wall-time overhead of transcripts at C={TARGET_C}",
                    f"≤ {OVERHEAD_GOAL:.0%}",
                    round(over * 100, 1),
                    "%",
                    over <= OVERHEAD_GOAL,
                )
            )
            res.targets.append(
                Target(
                    f"{method}: harness CPU added by transcripts",
                    f"≤ {CPU_GOAL_MS:g} ms per call",
                    round(cpu_ms, 3),
                    "ms",
                    cpu_ms <= CPU_GOAL_MS,
                )
            )
            full_mb = row_on["file_bytes"] * FULL_QUESTIONS / max(q, 1) / 1e6
            if method == "full-text":
                res.targets.append(
                    Target(
                        "full-text: transcripts of the whole dataset (2,236 questions)",
                        f"≤ {SIZE_GOAL_MB:g} MB",
                        round(full_mb, 1),
                        "MB",
                        full_mb <= SIZE_GOAL_MB,
                    )
                )
            res.notes.append(
                f"{method}: {row_on['records']:,} records, {row_on['bytes_per_question']:,} bytes per "
                f"question ({row_on['compression']}× smaller than the JSON); wall {row_off['wall_s']:.2f} s"
                f" off → {row_on['wall_s']:.2f} s on ({over * 100:+.1f}%), CPU {cpu_ms:+.2f} ms per call "
                f"(runs off {[r['wall_s'] for r in off]}, on {[r['wall_s'] for r in on]})"
            )
            if method == "full-text":
                res.rows += _encode_rows(method, Path(row_on["run_dir"]))
    b.write(res, started)
    return res
