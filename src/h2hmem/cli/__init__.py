"""The ``h2hmem`` command line. Each command is a thin wrapper over one public function."""

from __future__ import annotations

from ._app import app
from . import _data, _demo, _run  # noqa: F401  (register commands)
from . import _caption  # noqa: F401
from . import _leaderboard  # noqa: F401
from . import _evaluate  # noqa: F401
from . import _report  # noqa: F401


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
