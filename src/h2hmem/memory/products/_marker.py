"""The build marker of a product store: reuse a store that was built completely, rebuild any other.

A product writes its store itself (SQLite, Qdrant, Kuzu files…), so a run killed while a session was
going in leaves a store holding part of that session, which no product can tell apart from a whole
one. The marker, ``build.json`` beside the store, records which sessions went in and whether the
store is *clean* (every session listed went in whole) under which configuration fingerprint:

- before a session goes in, the marker is set dirty (``clean: false``);
- when the memory is first asked a question, it is set clean with the sessions fed so far;
- a new instance reuses the store only when the marker is clean and its fingerprint is the same;
  otherwise it deletes the store and feeds every session again (with a warm request cache this
  costs no model call).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._atomic import atomic_write_text

MARKER = "build.json"


@dataclass
class BuildMarker:
    """State of one dialogue's product store in ``folder`` (the store itself lives in ``folder/store``).

    Args:
        folder: the dialogue's state folder (``MemoryContext.state_dir``).
        fingerprint: what the store depends on (product, version, configuration); a marker written
            under another fingerprint is never reused.
    """

    folder: Path
    fingerprint: dict[str, Any]
    sessions: list[str] = field(default_factory=list)
    clean: bool = False
    reused: bool = False
    """True when :meth:`open` found a clean store with the same fingerprint."""

    @property
    def store_dir(self) -> Path:
        return self.folder / "store"

    @property
    def path(self) -> Path:
        return self.folder / MARKER

    def open(self) -> BuildMarker:
        """Reuse the store if its marker is clean and matches; else delete it and start empty.

        Raises:
            OSError: the folder cannot be read or written.
        """
        data = self._read()
        if data is not None and data.get("clean") and data.get("fingerprint") == _plain(self.fingerprint):
            self.sessions = list(data.get("sessions", []))
            self.clean = self.reused = True
            return self
        if self.store_dir.exists():
            shutil.rmtree(self.store_dir)
        self.path.unlink(missing_ok=True)
        self.sessions, self.clean, self.reused = [], False, False
        self.store_dir.mkdir(parents=True, exist_ok=True)
        return self

    def has(self, session: str) -> bool:
        """Whether ``session`` went in whole already (a reused store skips it)."""
        return self.clean and session in self.sessions

    def begin(self, session: str) -> None:
        """Before ``session`` goes in: the store is dirty until :meth:`seal`."""
        if session not in self.sessions:
            self.sessions.append(session)
        self.clean = False
        self._write()

    def seal(self) -> None:
        """Every session fed so far went in whole: the store may be reused."""
        if not self.clean:
            self.clean = True
            self._write()

    def _read(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:  # a torn or hand-edited marker: the store is not trusted
            return None
        return data if isinstance(data, dict) else None

    def _write(self) -> None:
        payload = {"clean": self.clean, "sessions": self.sessions, "fingerprint": _plain(self.fingerprint)}
        atomic_write_text(self.path, json.dumps(payload, indent=1, sort_keys=True), fsync=True)


def _plain(value: dict[str, Any]) -> Any:
    """``value`` as JSON would give it back (tuples as lists), so a read marker compares equal."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))
