"""The machine a result was measured on (stored in every results file)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict[str, Any]:
    """CPU model and count (usable by this process), RAM, Python, OS, git commit, load average."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 0
    return {
        "cpu_model": _cpu_model(),
        "cpus": cpus,
        "ram_gib": _mem_total_gib(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "os": f"{platform.system()} {platform.release()}",
        "git_commit": _git_commit(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
