"""The ``h2hmem`` command line. Each command is a thin wrapper over one public function."""

from __future__ import annotations

# Registration order is the order `h2hmem --help` lists: the pipeline first, then the groups.
from . import (  # noqa: F401  (registers the command groups)
    _caption,
    _data,
    _demo,
    _evaluate,
    _gateway,
    _leaderboard,
    _methods,
    _report,
    _run,
    _sweep,
    _testing,
    _view,
)
from ._app import app


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
