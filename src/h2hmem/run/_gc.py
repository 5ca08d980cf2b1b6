"""Garbage-collector settings while a run answers its questions (issue 26).

A run keeps the dataset, its memories and the modules alive throughout, and allocates short-lived
containers for every question (parsed replies, records, HTTP objects). With CPython's default
settings that means a young-generation collection every 700 net allocations, and a full collection,
which walks every live object (the whole dataset: 60–105 ms on the full-scale synthetic one), each
time the long-lived objects grow by a quarter; no reply is read and no request is sent meanwhile.
While :func:`quiet_gc` is active (from the start of the answering phase, before the memories are
built, to the end of the run):

- everything alive when it starts (the dataset, imports) is moved to the permanent generation
  (:func:`gc.freeze`), so a full collection walks only what the run itself allocated;
- the young generation is collected every :data:`YOUNG_THRESHOLD` net allocations instead of 700
  (the two older thresholds are kept).

Both are undone when the last active run ends: the frozen objects return to the oldest generation
(:func:`gc.unfreeze`) and the thresholds are restored. What the process set itself is left as it
was: a process that had already frozen objects (e.g. a server before forking) is not frozen or
unfrozen by a run, and one with automatic collection off (threshold 0) keeps it off. Runs can
overlap in one process (a sweep, a notebook): only the first one to start freezes, so the objects
a later one loads while the first is active are not frozen. Cyclic garbage that exists when the
run starts stays frozen (alive) until the run ends, then is collected as usual; no full
collection is forced at the start, which would cost the pause this avoids. Measured on the
full-scale synthetic dataset (2,236 questions, ``h2h``, C = 64, ``bench/_harness.py``'s collector
counter): 300 young, 28 middle and 2 full collections, 0.36–0.47 s of collector time, without; 79,
7 and 0, 0.16 s, with.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections while a run is active (CPython's default: 700)."""

_lock = threading.Lock()
_active = 0
_saved: tuple[int, ...] | None = None
_froze = False


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """Freeze what is alive and raise the young generation's threshold until the last active run
    ends (see the module's notes for what is left as the process set it)."""
    global _active, _saved, _froze
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
            if _saved[0] > 0:  # 0: automatic collection is off, and stays off
                gc.set_threshold(max(YOUNG_THRESHOLD, _saved[0]), *_saved[1:])
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                if _froze:
                    gc.unfreeze()
                gc.set_threshold(*_saved)
                _saved, _froze = None, False
