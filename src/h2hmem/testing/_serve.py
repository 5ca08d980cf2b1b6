"""Serving an ASGI app on 127.0.0.1 for browser tests, and the Debian Chromium they drive."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium (``playwright install`` cannot download its own browser on our machines)."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
"""Flags for headless runs as root in a container, with no background traffic."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 free at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(app: Any, *, timeout_s: float = 30.0, lifespan: Literal["auto", "on", "off"] = "auto") -> Iterator[str]:
    """Run ``app`` with uvicorn in a daemon thread on a free port of 127.0.0.1; yields its base URL.

    Raises:
        RuntimeError: the server did not start within ``timeout_s`` seconds.
    """
    import uvicorn

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + timeout_s
    while not srv.started:
        if time.monotonic() > deadline or not t.is_alive():
            raise RuntimeError(f"uvicorn did not start within {timeout_s:g} s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        t.join(timeout=10)
