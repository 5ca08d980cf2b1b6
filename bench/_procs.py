"""Run a step function in a child process and measure its peak RSS.

Peak RSS is the child's own ``VmHWM`` (read by the child at the end, see :mod:`bench._step`);
where ``/proc`` is missing, ``os.wait4``'s ``ru_maxrss`` for that child (which on Linux also
counts the parent's RSS at fork time, and so is only an upper bound).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class StepError(RuntimeError):
    """A step's child process failed (its stderr tail is in the message)."""


def run_step(target: str, spec: dict[str, Any], *, timeout_s: float = 3600.0) -> dict[str, Any]:
    """Run ``target`` (``"bench.module:function"``) on ``spec`` in a child process.

    Returns the function's result dict with ``peak_rss_mb`` (MiB) and ``process_s`` (child
    wall time including interpreter start and imports) added.

    Raises:
        StepError: the child exited non-zero or did not finish within ``timeout_s``.
    """
    with tempfile.TemporaryDirectory(prefix="bench-step-") as tmp:
        spec_path, out_path, err_path = Path(tmp, "spec.json"), Path(tmp, "out.json"), Path(tmp, "stderr.txt")
        spec_path.write_text(json.dumps(spec, default=str), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        t0 = time.perf_counter()
        with open(err_path, "w", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bench._step", target, str(spec_path), str(out_path)],
                cwd=REPO,
                env=env,
                stdout=err,
                stderr=subprocess.STDOUT,
            )
            deadline = t0 + timeout_s
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() > deadline:
                    proc.kill()
                    pid, status, rusage = os.wait4(proc.pid, 0)
                    raise StepError(f"{target} did not finish within {timeout_s:g} s")
                time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4; keep Popen consistent
        if proc.returncode != 0 or not out_path.is_file():
            tail = err_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise StepError(f"{target} failed (exit {proc.returncode}):\n{tail}")
        result = json.loads(out_path.read_text(encoding="utf-8"))
    result.setdefault("peak_rss_mb", round(rusage.ru_maxrss / 1024, 1))  # ru_maxrss is in KiB on Linux
    result["process_s"] = round(elapsed, 2)
    return result
