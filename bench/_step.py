"""Child-process entry: ``python -m bench._step <module:function> <spec.json> <out.json>``.

Runs one measured step in a fresh interpreter so its peak RSS belongs to that step alone and no
state (caches, GC pressure, threads) leaks between steps.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path


def proc_status(field: str) -> int | None:
    """The first number of ``field`` in ``/proc/self/status`` (``VmHWM`` in KiB, ``Threads``…); None
    where that file or field is missing (not Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kib() -> int | None:
    """``VmHWM`` of this process (KiB): the high-water mark of its own address space since exec.

    Not ``getrusage``: Linux keeps the pre-exec maximum in ``ru_maxrss``, and before exec a
    forked child's RSS is its parent's, so a parent that once held a large dataset would show up
    in every child's figure.
    """
    return proc_status("VmHWM")


def main() -> None:
    target, spec_path, out_path = sys.argv[1:4]
    module_name, func_name = target.split(":")
    func = getattr(importlib.import_module(module_name), func_name)
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    result = func(spec)
    hwm = peak_rss_kib()
    if hwm is not None:
        result["peak_rss_mb"] = round(hwm / 1024, 1)
    Path(out_path).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
