"""The ``h2hmem`` command line. Each command is a thin wrapper over one public function."""

from __future__ import annotations

from ._app import app
# Registration order is the order `h2hmem --help` lists: the pipeline first, then the groups.
from . import _caption, _run, _evaluate, _report, _view, _demo  # noqa: F401,E402  (register commands)
from . import _data, _leaderboard  # noqa: F401,E402  (register command groups)

def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
