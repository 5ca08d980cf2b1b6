"""The ``h2hmem`` command line. Each command is a thin wrapper over one public function."""

from __future__ import annotations

import signal

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
    honour_interrupts()
    app()


def honour_interrupts() -> None:
    """Let Ctrl-C and SIGTERM reach h2hmem even when its parent ignored or blocked them (a shell's
    background job starts with SIGINT ignored; a parent process may leave signals blocked, and both
    are inherited): a run stops cleanly on them, records what it has and says how to resume (exit
    130), and the mock server and the gateway shut down."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


__all__ = ["app", "main"]
