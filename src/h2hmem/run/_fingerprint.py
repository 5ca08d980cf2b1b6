"""Facts the runner records about a run's inputs: the dataset fingerprint and the command line."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path


def dataset_fingerprint(root: Path, splits: list[str]) -> str:
    """SHA-256 over the relative paths and bytes of every JSON file of ``splits`` under ``root``."""
    h = hashlib.sha256()
    for sp in splits:
        base = root / sp
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*.json")):
            if "caption" in p.parent.name:
                continue  # captions are an input of their own, not the dataset
            # surrogateescape: a file name that is not UTF-8 hashes as its raw bytes
            h.update(p.relative_to(root).as_posix().encode("utf-8", "surrogateescape") + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def command_line() -> str:
    return " ".join(sys.argv)
