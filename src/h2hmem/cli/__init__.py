"""The ``h2hmem`` command line. Each command is a thin wrapper over one public function."""

from __future__ import annotations

# Registration order is the order `h2hmem --help` lists: the pipeline first, then the groups.
from . import _caption, _data, _demo, _evaluate, _leaderboard, _methods, _report, _run, _sweep, _testing, _view  # noqa: F401  (registers the command groups)
from ._app import app


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
