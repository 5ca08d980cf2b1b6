"""``bm25s`` is imported without JAX and numba (``h2hmem.memory._bm25s_import``): where they are
installed, a plain ``import bm25s`` imports both and runs ``jax.lax.top_k``, which starts JAX's
GPU back-end in the harness process. Each case runs in a fresh interpreter (``bm25s`` is imported
once per process) with stand-in ``jax`` and ``numba`` packages first on ``sys.path`` that count their
imports and ``top_k`` calls in a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FAKE_JAX = """\
from pathlib import Path
import os
Path(os.environ["IMPORT_LOG"]).open("a").write("jax\\n")
"""
FAKE_JAX_LAX = """\
from pathlib import Path
import os
Path(os.environ["IMPORT_LOG"]).open("a").write("jax.lax\\n")
def top_k(x, k):
    Path(os.environ["IMPORT_LOG"]).open("a").write("top_k\\n")
    return None, None
"""
FAKE_NUMBA = """\
from pathlib import Path
import os
Path(os.environ["IMPORT_LOG"]).open("a").write("numba\\n")
def njit(*args, **kwargs):
    return args[0] if args and callable(args[0]) else (lambda f: f)
"""


@pytest.fixture()
def fakes(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "jax").mkdir(parents=True)
    (site / "jax" / "__init__.py").write_text(FAKE_JAX)
    (site / "jax" / "lax.py").write_text(FAKE_JAX_LAX)
    (site / "numba").mkdir()
    (site / "numba" / "__init__.py").write_text(FAKE_NUMBA)
    return site


def _run(site: Path, code: str) -> tuple[list[str], dict]:
    log = site.parent / "imports.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "IMPORT_LOG": str(log), "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = log.read_text().split() if log.exists() else []
    return lines, json.loads(out.stdout.strip().splitlines()[-1])


def test_a_plain_import_of_bm25s_imports_the_stand_ins(fakes: Path):
    # the control: bm25s itself imports both and runs top_k at import, so the stand-ins are seen
    lines, _ = _run(fakes, "import bm25s, json; print(json.dumps({}))")
    assert "jax.lax" in lines and "top_k" in lines and "numba" in lines


def test_h2hmem_bm25_imports_neither_and_leaves_them_importable(fakes: Path):
    lines, seen = _run(
        fakes,
        """
        import json, sys
        from h2hmem.memory._retrieval import BM25Scorer, query_words
        scores = BM25Scorer(["the red kite", "a blue boat", "red paint"]).scores("red kite")
        seen = {"jax": "jax" in sys.modules, "numba": "numba" in sys.modules, "scores": [round(float(s), 4) for s in scores],
                "words": query_words("The red kite"), "finders": sum(type(f).__name__ == "_RefuseInThread" for f in sys.meta_path)}
        import jax.lax  # the rest of the process imports them as usual
        import numba
        seen["later"] = [jax.lax.__name__, numba.__name__]
        print(json.dumps(seen))
        """,
    )
    assert seen["jax"] is False and seen["numba"] is False and seen["finders"] == 0
    assert seen["words"] == ["red", "kite"]
    # Lucene BM25 (k1 1.5, b 0.75), N = 3 documents of 2 words each: idf(w) = ln(1 + (N − df + 0.5) / (df + 0.5)),
    # a word once in a document of average length scores idf / (1.5 + 1): "red" (df 2) ln 1.6 / 2.5 = 0.1880,
    # "kite" (df 1) ln(8/3) / 2.5 = 0.3923
    assert seen["scores"] == pytest.approx([0.1880 + 0.3923, 0.0, 0.1880], abs=2e-4)
    assert seen["later"] == ["jax.lax", "numba"]
    assert lines == ["jax", "jax.lax", "numba"]  # only the explicit imports after it, and no top_k call


def test_query_words_alone_imports_neither(fakes: Path):
    # the stopword list is the first thing a query needs: it too comes through import_bm25s
    lines, seen = _run(
        fakes,
        """
        import json, sys
        from h2hmem.memory._retrieval import query_words
        print(json.dumps({"words": query_words("The red kite and a boat"), "jax": "jax" in sys.modules}))
        """,
    )
    assert seen == {"words": ["red", "kite", "boat"], "jax": False}
    assert lines == []


def test_a_process_that_imported_jax_first_keeps_it(fakes: Path):
    lines, seen = _run(
        fakes,
        """
        import json, sys
        import jax
        from h2hmem.memory._bm25s_import import import_bm25s
        bm25s = import_bm25s()
        print(json.dumps({"same": sys.modules["jax"] is jax, "lax": "jax.lax" in sys.modules,
                          "jax_used": bm25s.selection.JAX_IS_AVAILABLE, "numba": "numba" in sys.modules}))
        """,
    )
    assert seen == {"same": True, "lax": True, "jax_used": True, "numba": False}  # bm25s saw the process's own jax
    assert lines == ["jax", "jax.lax", "top_k"]


SLOW_IMPORT = """
import json, sys, threading, time
class Slow:  # holds bm25s's import open for a second, so another thread acts inside it
    def find_spec(self, name, path=None, target=None):
        if name == "bm25s.utils":
            time.sleep(1.0)
        return None
sys.meta_path.insert(0, Slow())
import importlib.util
from h2hmem.memory._bm25s_import import import_bm25s
from h2hmem.memory._retrieval import query_words
t = threading.Thread(target=import_bm25s)
t.start()
time.sleep(0.3)
seen = {"during": {"jax_in_modules": "jax" in sys.modules, "numba_found": importlib.util.find_spec("numba") is not None},
        "words": query_words("the red kite")}  # waits for the other thread's import to finish
t.join()
seen["after"] = {"jax": "jax" in sys.modules, "numba": "numba" in sys.modules}
print(json.dumps(seen))
"""


def test_another_thread_waits_for_the_import_and_is_not_refused(fakes: Path):
    lines, seen = _run(fakes, SLOW_IMPORT)
    # during the import, the other thread sees no stand-in entry and may still find (import) numba itself
    assert seen["during"] == {"jax_in_modules": False, "numba_found": True}
    assert seen["words"] == ["red", "kite"]  # not a half-imported bm25s
    assert seen["after"] == {"jax": False, "numba": False}
    assert lines == []


def test_the_benchmarks_import_bm25s_only_through_h2hmem():
    # bench/ is outside the import contracts (pyproject.toml covers the package): its harness imports
    # bm25s before the clock for every method, so a plain import there would measure a run with JAX in it
    bench = Path(__file__).resolve().parents[2] / "bench"
    direct = [
        f"{path.name}:{n}"
        for path in sorted(bench.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip().startswith(("import bm25s", "from bm25s"))
    ]
    # bench/hostcheck.py's "plain" arm imports bm25s directly on purpose: the A/B's control, in its own child process
    assert [d for d in direct if not d.startswith("hostcheck.py:")] == []
    assert len([d for d in direct if d.startswith("hostcheck.py:")]) == 1
    assert "import_bm25s()" in (bench / "_harness.py").read_text(encoding="utf-8")
