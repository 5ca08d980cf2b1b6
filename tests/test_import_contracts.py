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
    assert contract_lines(res.stdout) == {
        "Package layers (top to bottom)": "KEPT",
        "No private imports across packages": "KEPT",
        "No import cycles between sibling modules": "KEPT",
    }


def test_an_upward_import_breaks_the_layers_contract(package_copy: Path, tmp_path: Path) -> None:
    # data is a bottom layer: it may not use the runner, even through a module nobody imports
    (package_copy / "h2hmem" / "data" / "_x.py").write_text("from h2hmem.run import RunConfig\n")
    res = lint_imports(package_copy, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    verdicts = contract_lines(res.stdout)
    assert verdicts["Package layers (top to bottom)"] == "BROKEN"
    assert verdicts["No private imports across packages"] == "KEPT"
    assert "h2hmem.data is not allowed to import h2hmem.run" in res.stdout
    assert "h2hmem.data._x -> h2hmem.run" in res.stdout


def test_a_private_import_across_packages_breaks_its_contract(package_copy: Path, tmp_path: Path) -> None:
    # report sits above metrics (allowed), but must use metrics' public face, not its _evaluate module
    (package_copy / "h2hmem" / "report" / "_y.py").write_text("from h2hmem.metrics._evaluate import evaluate_run\n")
    res = lint_imports(package_copy, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    verdicts = contract_lines(res.stdout)
    assert verdicts["No private imports across packages"] == "BROKEN"
    assert verdicts["Package layers (top to bottom)"] == "KEPT"
    assert "h2hmem.report._y -> h2hmem.metrics._evaluate (l.1)" in res.stdout


def test_a_cycle_between_leaderboard_modules_breaks_its_contract(package_copy: Path, tmp_path: Path) -> None:
    # the cycle issue 14 removed: _app imports the route modules, a route module importing _app again
    admin = package_copy / "h2hmem" / "leaderboard" / "_admin.py"
    admin.write_text(admin.read_text() + "\nfrom ._app import create_app  # noqa: E402\n")
    res = lint_imports(package_copy, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert contract_lines(res.stdout)["No import cycles between sibling modules"] == "BROKEN"
    assert "No cycles are allowed in h2hmem.leaderboard" in res.stdout
