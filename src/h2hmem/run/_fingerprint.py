"""Facts the runner records about a run's inputs: the dataset fingerprint and the command line."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path


def dataset_fingerprint(root: Path, splits: list[str]) -> str:
    """SHA-256 over the relative paths and bytes of every JSON file of ``splits`` under ``root``.

    The files are those of ``sorted((root / split).rglob("*.json"))`` (links to folders are not
    descended, caption folders are left out), found with :func:`os.scandir` instead of
    :mod:`pathlib`, which costs the run's start ~25 ms on the full-scale dataset. On a readable POSIX
    tree the value is the one earlier versions recorded, so a run started by them resumes (where a
    link's target cannot be read, Python ≤ 3.12's ``rglob`` stopped listing that folder; this walk
    skips only the link).
    """
    h = hashlib.sha256()
    for sp in splits:
        base = root / sp
        if not base.is_dir():
            continue
        for rel in sorted(_json_files(str(base), ())):
            parent = rel[-2] if len(rel) > 1 else sp
            if "caption" in parent:
                continue  # captions are an input of their own, not the dataset
            path = "/".join((sp, *rel))
            # surrogateescape: a file name that is not UTF-8 hashes as its raw bytes
            h.update(path.encode("utf-8", "surrogateescape") + b"\0")
            h.update((root / path).read_bytes() + b"\0")
    return h.hexdigest()


def _json_files(folder: str, rel: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Relative parts of every entry named ``*.json`` under ``folder``, as ``Path.rglob`` finds
    them: folders entered unless they are links, a folder that cannot be listed skipped."""
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except PermissionError:
        return
    for e in entries:
        if e.name.endswith(".json"):
            yield (*rel, e.name)
        try:
            descend = e.is_dir() and not e.is_symlink()
        except OSError:
            descend = False
        if descend:
            yield from _json_files(e.path, (*rel, e.name))


def command_line() -> str:
    return " ".join(sys.argv)
