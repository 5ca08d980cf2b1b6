"""``bm25s`` imported without the accelerator libraries it imports on its own.

``import bm25s`` (0.2–0.3) imports JAX when it is installed and runs ``jax.lax.top_k`` once, at import
(``bm25s/selection.py``: to silence JAX's "no GPU" message); that starts JAX's default back-end. On a
machine with a GPU and ``jax[cuda]`` — where open models are served with vLLM or SGLang, next to the
harness — this creates a CUDA context in the process and, by JAX's default
(``XLA_PYTHON_CLIENT_PREALLOCATE``), takes 75% of the GPU's memory. It also imports numba when that
is installed. h2hmem scores with ``bm25s``'s NumPy back-end and uses neither. Who imports ``bm25s``:
``h2h`` (and A-Mem with the h2hmem retrieval of the preset ``harmonized``) at its first BM25 query;
``bench/_harness.py`` for every method, before the clock.

Measured (issue 26, 2026-12-04, the ``cpu`` benchmark on a lent H200 host whose Python holds JAX 0.11.2
with its CUDA plugin and numba, before this module): the bench's harness process peaked at 4.2 GB
resident, against 0.16 GB on a machine without JAX (with JAX's CPU build: 0.33 GB). Not re-measured on
a GPU host since.

:func:`import_bm25s` imports ``bm25s`` while a finder first on ``sys.meta_path`` refuses ``jax`` and
``numba`` (and their submodules) to the importing thread only, and only those not imported yet:
``bm25s`` catches the ``ModuleNotFoundError`` and uses NumPy alone. The finder is removed afterwards;
``sys.modules`` is not touched, so other threads, and the rest of the process, import JAX and numba as
usual. A process that has imported JAX (or numba) *before* is left as it is: ``bm25s`` then sees the
module it already has.

One effect lasts for the process: ``bm25s`` records at import that JAX and numba are missing, so its
numba back-end (``BM25(backend="numba")``) and its JAX top-k (``retrieve(backend_selection="jax")``) are
unavailable to other code of the process that uses ``bm25s`` after h2hmem did. Importing ``bm25s``
directly before h2hmem does keeps them (and brings JAX in).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

SKIPPED = ("jax", "numba")
"""Top-level packages ``bm25s`` imports when installed and h2hmem's use of it does not need."""

_lock = threading.Lock()


class _RefuseInThread(importlib.abc.MetaPathFinder):
    """Makes ``import name`` (and its submodules) raise ``ModuleNotFoundError`` in one thread."""

    def __init__(self, names: set[str]):
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if threading.get_ident() == self.thread and fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (skipped by h2hmem for bm25s)", name=fullname)
        return None


def import_bm25s() -> ModuleType:
    """The ``bm25s`` module, imported (once per process) without :data:`SKIPPED` when they are not
    imported yet (module docstring). A call while another thread is importing it waits for that
    import to finish. Raises ``ImportError`` when ``bm25s`` is not installed (or its import fails)."""
    with _lock:
        if "bm25s" not in sys.modules:
            finder = _RefuseInThread({name for name in SKIPPED if name not in sys.modules})
            sys.meta_path.insert(0, finder)
            try:
                import bm25s  # the module is returned from sys.modules, typed
            finally:
                sys.meta_path.remove(finder)
    import bm25s  # noqa: F401 - imported above or earlier; waits while another thread's import of it runs

    return sys.modules["bm25s"]
