"""The typer application; command modules attach their commands to ``app`` and its sub-apps."""

from __future__ import annotations

import os
import signal
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from .._localio import LOCAL_IO_EXIT_CODE, disk_error

app = typer.Typer(
    name="h2hmem",
    help="H2HMem benchmark: data, captions, memory methods, runs, metrics, reports, leaderboard.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """h2hmem's own warnings as one ``warning: …`` line on stderr (no file and line of our code)."""
    if getattr(category, "__module__", "").startswith("h2hmem"):
        err_console.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning
warnings.showwarning = _show_warning


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` as an error (no traceback) and return the Exit to raise.

    ``message`` is plain text: brackets in it (``[questions[3].difficulty]``) are shown, not read
    as rich markup, and long file paths are not wrapped.
    """
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code)


def fail_os(e: OSError, where: str | os.PathLike[str], message: str) -> typer.Exit:
    """The Exit for an OS error ``e``: a local disk failure (:func:`~h2hmem._localio.disk_error`: a
    full or read-only disk, a file-size limit, an I/O error; the file is ``e.filename``, else
    ``where``) as a local I/O error with exit code 4, any other as ``message`` with exit code 2."""
    local = disk_error(e, where)
    return fail(str(local), LOCAL_IO_EXIT_CODE) if local is not None else fail(message)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM (a scheduler's stop, ``timeout``, ``docker stop``) ends it like
    Ctrl-C: re-sent as SIGINT, which ``asyncio.run`` turns into a clean cancellation, so the command's
    own ``KeyboardInterrupt`` handling finalises its files and exits 130. Outside the main thread
    (where signal handlers cannot be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
