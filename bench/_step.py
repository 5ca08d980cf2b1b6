"""Child-process entry: ``python -m bench._step <module:function> <spec.json> <out.json>``.

Runs one measured step in a fresh interpreter so its peak RSS (read by the parent with
``os.wait4``) belongs to that step alone and no state (caches, GC pressure, threads) leaks
between steps.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path


def main() -> None:
    target, spec_path, out_path = sys.argv[1:4]
    module_name, func_name = target.split(":")
    func = getattr(importlib.import_module(module_name), func_name)
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    result = func(spec)
    Path(out_path).write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
