"""Random access to a run's transcripts: which gzip members hold the calls of a question.

The index (question id → byte ranges of its members, dialogue → memory-construction calls) is
built on first use by one pass over the file and rebuilt when the file has grown (a run still in
progress); a question page then decompresses only its own members.
"""

from __future__ import annotations

import gzip
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..records import decode_member, iter_members


class CallIndex:
    """Index over one transcript file (which may not exist yet)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._size = -1
        self._by_question: dict[str, list[tuple[int, int]]] = {}
        self._build_by_dialogue: dict[str, int] = {}
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        size = self.path.stat().st_size if self.path.is_file() else 0
        if size == self._size:
            return
        by_q: dict[str, list[tuple[int, int]]] = defaultdict(list)
        builds: dict[str, int] = defaultdict(int)
        if size:
            data = self.path.read_bytes()
            for start, end, payload in iter_members(data, name=str(self.path)):
                rec = decode_member(payload, name=str(self.path), offset=start)
                for qid in rec.get("question_ids") or []:
                    by_q[str(qid)].append((start, end))
                if not rec.get("question_ids") and rec.get("dialogue"):
                    builds[str(rec["dialogue"])] += 1
        self._by_question, self._build_by_dialogue, self._size = dict(by_q), dict(builds), size

    def for_question(self, question_id: str) -> list[dict[str, Any]]:
        """The records tagged with ``question_id``, in write order (each with its ``offset``)."""
        with self._lock:
            self._refresh()
            spans = list(self._by_question.get(question_id, []))
        out: list[dict[str, Any]] = []
        if not spans:
            return out
        with self.path.open("rb") as f:
            for start, end in spans:
                f.seek(start)
                rec = decode_member(gzip.decompress(f.read(end - start)), name=str(self.path), offset=start)
                rec["offset"] = start
                out.append(rec)
        return out

    def build_calls(self, dialogue: str) -> int:
        """Memory-construction calls recorded for ``dialogue`` (``"dyadic/dialogue5"``)."""
        with self._lock:
            self._refresh()
            return self._build_by_dialogue.get(dialogue, 0)
