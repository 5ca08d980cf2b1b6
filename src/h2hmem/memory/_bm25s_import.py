"""``bm25s`` imported without the accelerator libraries it imports on its own.

``import bm25s`` (0.2–0.3) imports JAX when it is installed and runs ``jax.lax.top_k`` once, at import
(``bm25s/selection.py``: to silence JAX's "no GPU" message); that starts JAX's default backend. On a
machine with a GPU and ``jax[cuda]`` — where open models are served with vLLM or SGLang, next to the
harness — this creates a CUDA context in the harness process and, by JAX's default
(``XLA_PYTHON_CLIENT_PREALLOCATE``), takes 75% of the GPU's memory. It also imports numba when that
is installed. h2hmem scores with ``bm25s``'s NumPy back-end and uses neither.

Measured (issue 26, 2026-12-04, the ``cpu`` benchmark on a lent H200 host whose Python holds JAX 0.11.2
with its CUDA plugin and numba): the harness process of every method peaked at 4.2 GB resident
memory, against 0.16 GB on a machine without JAX, and the garbage collector made 2 full collections
per 2,236-question run (0.25–0.34 s) against none; the run imports ``bm25s`` before its first question
(``bench/_harness.py`` does so before the clock, as h2h and A-Mem do at their first BM25 query).

:func:`import_bm25s` imports ``bm25s`` with ``jax`` and ``numba`` made unimportable for that one
import (a ``None`` entry in ``sys.modules``: the import system's documented way to make ``import x``
raise ``ModuleNotFoundError``), which ``bm25s`` catches and then uses NumPy alone; the entries are
removed afterwards, so the rest of the process imports JAX and numba as usual. A process that has
imported JAX (or numba) *before* is left as it is: ``bm25s`` then sees the module it already has. The window is
the one ``bm25s`` import (under a second; 0.6 s with h2hmem's memory package): another thread
that imports JAX for the first time in that window sees it missing; h2hmem's own threads (the embedder's
worker) import neither.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

SKIPPED = ("jax", "numba")
"""Top-level packages ``bm25s`` imports when installed and h2hmem's use of it does not need."""

_lock = threading.Lock()


def import_bm25s() -> ModuleType:
    """The ``bm25s`` module, imported (once per process) without :data:`SKIPPED` when they are not
    imported yet (module docstring). Raises ``ImportError`` when ``bm25s`` is not installed."""
    module = sys.modules.get("bm25s")
    if module is not None:
        return module
    with _lock:
        blocked = [name for name in SKIPPED if name not in sys.modules]
        for name in blocked:
            sys.modules[name] = None  # type: ignore[assignment]  # documented: `import name` raises
        try:
            import bm25s  # noqa: F401 - the module is returned from sys.modules, typed
        finally:
            for name in blocked:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
    return sys.modules["bm25s"]
