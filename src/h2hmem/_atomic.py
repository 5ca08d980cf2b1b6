"""Atomic file replacement: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO

TMP_SUFFIX = ".tmp"
"""Suffix of the hidden temporary files ``.<name>.<random>.tmp`` written beside their destination."""


def write_beside(path: str | Path, text: str | bytes, *, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8; bytes as they are) to a new hidden temporary file in ``path``'s folder
    (``.<name>.<random>.tmp``) and return its path; the caller renames it onto ``path`` (or removes it).

    Args:
        path: the destination the file is for; its folder is created when missing.
        text: the whole content.
        fsync: flush the data to disk before returning (files a crash must not lose).

    Raises:
        OSError: the folder cannot be written (the temporary file is removed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _mkstemp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _process_umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: once, at import, then put back
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_process_umask()
"""The mode ``open()`` gives a new file under the process's umask (``-rw-r--r--`` under 022)."""


def mkstemp_shared(folder: str | Path, prefix: str, suffix: str = TMP_SUFFIX) -> tuple[int, str]:
    """:func:`tempfile.mkstemp` in ``folder``, with the file's mode set as ``open()`` would set it
    under the umask: ``mkstemp`` makes it owner-only (0600), and a rename onto the destination keeps
    that mode, so manifests, scores and reports would be unreadable to a group or a web server.

    Returns:
        ``(fd, path)`` as ``mkstemp``; the caller closes the descriptor.

    Raises:
        OSError: the folder cannot be written.
    """
    fd, name = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    try:
        os.fchmod(fd, _NEW_FILE_MODE)
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    return fd, name


def _mkstemp(path: Path) -> tuple[int, str]:
    return mkstemp_shared(path.parent, f".{path.name}.")


def atomic_write_text(path: str | Path, text: str | bytes, *, fsync: bool = False) -> None:
    """Write ``text`` (UTF-8; bytes as they are) to ``path`` through a temporary file in the same
    folder and a rename.

    Args:
        path: destination; its folder is created when missing.
        text: the whole new content.
        fsync: flush the data to disk before the rename (files a crash must not lose, such as a run
            manifest; costs a disk sync).

    Raises:
        OSError: the folder cannot be written (the temporary file is removed).
    """
    tmp = write_beside(path, text, fsync=fsync)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def close_durably(fh: IO[bytes]) -> None:
    """Flush, fsync and close an append-only file (predictions, transcripts): what was written
    survives a crash of the process and of the machine."""
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()
