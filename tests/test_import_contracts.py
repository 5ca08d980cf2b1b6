"""The import-linter contracts in pyproject.toml: the real tree keeps them, and a copy of the package
with one deliberately wrong import breaks the contract that forbids it (and names it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import h2hmem

pytest.importorskip("importlinter")

CONFIG = Path(__file__).resolve().parents[1] / "pyproject.toml"
PACKAGE = Path(h2hmem.__file__).resolve().parent
CONTRACTS = (
    "Package layers (top to bottom)",
    "Memory methods are independent of each other",
    "Readers of a run directory use records, not the runner",
    "No private imports across packages",
    "No import cycles between sibling modules",
    "bm25s only through memory._bm25s_import",
)
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(src: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's config over the package found in ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--config", str(CONFIG), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the h2hmem sources under ``tmp_path/src`` (the ``src`` folder is returned)."""
    shutil.copytree(PACKAGE, tmp_path / "src" / "h2hmem", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "src"


def contract_lines(output: str) -> dict[str, str]:
    """``{contract name: "KEPT" | "BROKEN"}`` from the report's summary lines."""
    out = {}
    for line in output.splitlines():
        for verdict in ("KEPT", "BROKEN"):
            head, sep, _ = line.partition(f" {verdict}")
            if sep and head and not head.startswith("Contracts"):
                out[head.strip()] = verdict
    return out


def test_the_real_tree_keeps_every_contract(tmp_path: Path) -> None:
    res = lint_imports(PACKAGE.parent, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert contract_lines(res.stdout) == dict.fromkeys(CONTRACTS, "KEPT")


BROKEN_BY = [
    # data is a bottom layer: it may not use the runner, even through a module nobody imports (and
    # as run imports data, the import also closes a cycle between the two sibling packages)
    pytest.param(
        "data/_x.py",
        "from h2hmem.run import RunConfig",
        {"Package layers (top to bottom)", "No import cycles between sibling modules"},
        ["h2hmem.data is not allowed to import h2hmem.run", "h2hmem.data._x -> h2hmem.run"],
        id="upward-import",
    ),
    # report sits above metrics (allowed), but must use metrics' public face, not its _evaluate module
    pytest.param(
        "report/_y.py",
        "from h2hmem.metrics._evaluate import evaluate_run",
        {"No private imports across packages"},
        ["h2hmem.report._y -> h2hmem.metrics._evaluate (l.1)"],
        id="private-import",
    ),
    # NGM shares MuRAG's units through memory/_mm_units.py, never through MuRAG itself (issue 25)
    pytest.param(
        "memory/ngm/_x.py",
        "from h2hmem.memory.murag import MuRAGMemory",
        {"Memory methods are independent of each other"},
        ["h2hmem.memory.ngm._x -> h2hmem.memory.murag"],
        id="method-imports-method",
    ),
    # the viewer reads run directories: through records, never through the runner (issue 25)
    pytest.param(
        "view/_z.py",
        "from h2hmem.run import RunConfig",
        {"Readers of a run directory use records, not the runner"},
        ["h2hmem.view._z -> h2hmem.run"],
        id="reader-imports-runner",
    ),
    # bm25s's stopwords imported directly: the import of bm25s that brings JAX in (issue 26)
    pytest.param(
        "memory/_retrieval.py",
        "from bm25s.stopwords import STOPWORDS_EN  # noqa: E402",
        {"bm25s only through memory._bm25s_import"},
        ["h2hmem.memory._retrieval -> bm25s"],
        id="bm25s-imported-directly",
    ),
    # the cycle issue 14 names: _app imports the route modules; a route module importing _app again
    pytest.param(
        "leaderboard/_admin.py",
        "from ._app import create_app  # noqa: E402",
        {"No import cycles between sibling modules"},
        ["No cycles are allowed in h2hmem.leaderboard"],
        id="leaderboard-cycle",
    ),
]


@pytest.mark.parametrize(("module", "line", "broken", "expected"), BROKEN_BY)
def test_a_wrong_import_breaks_its_contract(
    package_copy: Path, tmp_path: Path, module: str, line: str, broken: set[str], expected: list[str]
) -> None:
    path = package_copy / "h2hmem" / module
    path.write_text((path.read_text() + "\n" if path.exists() else "") + line + "\n")
    res = lint_imports(package_copy, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    verdicts = contract_lines(res.stdout)
    assert verdicts == {name: "BROKEN" if name in broken else "KEPT" for name in CONTRACTS}
    for text in expected:
        assert text in res.stdout
