"""Transcript files: one gzip member per model call, appended and flushed the moment the call returns.

``runs/<run-id>/transcripts.jsonl.gz`` holds the run's calls (answer and memory construction);
``transcripts-judge.jsonl.gz`` beside it the judge's (``h2hmem evaluate``). Each member holds one
JSON line, a record of :mod:`h2hmem.llm._calllog` (schema there). Concatenated gzip members are one
valid gzip file, so the standard library reads it::

    import gzip, json
    calls = [json.loads(line) for line in gzip.open("runs/x/transcripts.jsonl.gz", "rt", encoding="utf-8")]

(:func:`read_transcripts` does the same and also tolerates a torn last member.)

Why one member per call: a process killed mid-run loses at most the member being written (cut off
when the run resumes, like a torn ``predictions.jsonl`` line), every member is independently
decodable (the viewer seeks to a question's calls without decompressing the rest), and the
compressor's 32 KiB window gains little across calls anyway. Measured size: ``bench/README.md``.

Resume rule (what "one transcript per paid call" means): a paid call's record is written before
its reply enters the request cache. So after any interruption every paid call whose reply the run
could still use has exactly one record with ``cached: false``; re-running the same command serves
those replies from the cache, and each such call is recorded again as ``cached: true`` (not paid).
The only paid call without a record is one whose record was being written when the process died;
its reply was not cached either, so the resumed run pays for it again and records that call.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .._atomic import close_durably
from .._json import dumps_bytes
from .._localio import local_io

TRANSCRIPTS = "transcripts.jsonl.gz"
"""The run's model calls (answer, memory construction)."""
JUDGE_TRANSCRIPTS = "transcripts-judge.jsonl.gz"
"""The judge's model calls."""
_isal: Any
try:  # ISA-L's deflate: ~4× zlib's speed at level 1, same format (wheels for x86-64 and ARM64)
    from isal import isal_zlib as _isal
except ImportError:  # another platform: the standard library's zlib
    _isal = None

ENGINE = "isal" if _isal is not None else "zlib"
"""The deflate engine :func:`encode_record` uses by default: ``"isal"`` (the ``isal`` package, ISA-L)
when it is installed, else ``"zlib"``. Both write standard gzip members that any reader decodes."""
COMPRESS_LEVEL = 1
"""Level of each member (ISA-L's levels are 0–3, zlib's 0–9). On full-text's ~14 kB records
ISA-L level 1 takes ~28 µs a record against zlib level 1's ~115 µs, and its files are ~4% smaller;
measured by ``python -m bench transcripts`` (bench/README.md)."""
_CHUNK = 1 << 16


def encode_record(record: dict[str, Any], level: int = COMPRESS_LEVEL, engine: str = ENGINE) -> bytes:
    """One gzip member holding ``record`` as one UTF-8 JSON line (a lone surrogate is kept as a JSON escape),
    deflated by ``engine`` (``"isal"``, levels 0–3, or ``"zlib"``, levels 0–9).

    Raises:
        ValueError: an unknown or unavailable engine, or a level it does not have.
    """
    data = dumps_bytes(record) + b"\n"
    if engine == "zlib":
        z = zlib.compressobj(level, zlib.DEFLATED, 31)  # wbits 31: a gzip header and trailer
        return z.compress(data) + z.flush()
    if engine != "isal" or _isal is None:
        raise ValueError(f"transcript engine {engine!r} is not available (have: {ENGINE}, zlib)")
    if not 0 <= level <= 3:
        raise ValueError(f"ISA-L has levels 0-3, not {level}")
    member: bytes = _isal.compress(data, level, 31)
    return member


def iter_members(data: bytes, *, name: str = "transcripts") -> Iterator[tuple[int, int, bytes]]:
    """``(start, end, payload)`` of each complete gzip member of ``data``, in order; stops at a torn
    (incomplete) last member.

    Raises:
        ValueError: bytes that are not gzip data before the end (names ``name`` and the offset).
    """
    view = memoryview(data)
    pos, n = 0, len(data)
    while pos < n:
        d = zlib.decompressobj(31)
        out: list[bytes] = []
        feed = pos
        try:
            while not d.eof and feed < n:
                chunk = view[feed : feed + _CHUNK]
                feed += len(chunk)
                out.append(d.decompress(chunk))
        except zlib.error as e:
            raise ValueError(f"{name}: damaged gzip member at byte {pos} ({e})") from None
        if not d.eof:
            return
        end = feed - len(d.unused_data)
        yield pos, end, b"".join(out)
        pos = end


def complete_length(path: Path) -> int:
    """Bytes of ``path`` up to the end of its last complete member (the file size when none is torn)."""
    data = path.read_bytes()
    end = 0
    for _, end, _ in iter_members(data, name=str(path)):  # noqa: B007 — the last member's end is wanted
        pass
    return end


def decode_member(payload: bytes, *, name: str, offset: int) -> dict[str, Any]:
    """The record in one member's payload.

    Raises:
        ValueError: the payload is not one JSON object (names the file and byte offset).
    """
    try:
        rec = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{name}: the member at byte {offset} is not a JSON record ({e})") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{name}: the member at byte {offset} is not a JSON object")
    return rec


def read_transcripts(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a transcript file (or of ``transcripts.jsonl.gz`` in a run directory), in
    write order; ``[]`` when the file does not exist; a torn last member is ignored.

    Raises:
        ValueError: a damaged member before the end (names file and offset).
    """
    p = Path(path)
    if p.is_dir():
        p = p / TRANSCRIPTS
    if not p.is_file():
        return []
    data = p.read_bytes()
    return [decode_member(payload, name=str(p), offset=start) for start, _, payload in iter_members(data, name=str(p))]


class TranscriptWriter:
    """Appends records to one transcript file; :meth:`write` is a :data:`~h2hmem.llm.CallSink`.

    :meth:`open` first cuts a torn last member off (``torn_bytes_removed``), then appends.
    Each record is written as a single ``write`` and flushed to the OS (a killed process loses
    nothing already written); :meth:`close` also fsyncs.
    """

    def __init__(self, path: Path, *, level: int = COMPRESS_LEVEL):
        self.path = Path(path)
        self.level = level
        self.torn_bytes_removed = 0
        self.written = 0
        """Records written since :meth:`open`."""
        self._fh: IO[bytes] | None = None

    def open(self) -> TranscriptWriter:
        """Open the file for appending, cutting a torn last member off first.

        Raises:
            LocalIOError: the file or its folder cannot be made, read or written (names the file).
        """
        with local_io(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_file():
                size = self.path.stat().st_size
                keep = complete_length(self.path)
                if keep < size:
                    with open(self.path, "r+b") as f:
                        f.truncate(keep)
                    self.torn_bytes_removed = size - keep
            self._fh = open(self.path, "ab")
        return self

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one gzip member, flushed to the OS.

        Raises:
            LocalIOError: the write failed (a full disk, a file-size limit: names the file).
        """
        if self._fh is None:
            raise RuntimeError(f"{self.path}: TranscriptWriter.open() first")
        data = encode_record(record, self.level)
        with local_io(self.path):
            self._fh.write(data)
            self._fh.flush()
        self.written += 1

    def close(self) -> None:
        """Flush to disk and close (idempotent). Raises :class:`LocalIOError` naming the file."""
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                with local_io(self.path):
                    close_durably(fh)
            except BaseException:
                with contextlib.suppress(OSError):  # the descriptor is not leaked; the error above names the file
                    fh.close()
                raise

    def __enter__(self) -> TranscriptWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
