"""Client side of the out-of-process mock server (see :mod:`bench._mockserve`)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


class MockServerProcess:
    """``with MockServerProcess(latency_s=0.2) as srv: srv.base_url; srv.stats()``."""

    def __init__(self, latency_s: float, tokens_per_s: float | None = None):
        self.latency_s = latency_s
        self.tokens_per_s = tokens_per_s
        self._proc: subprocess.Popen[str] | None = None
        self.port: int | None = None

    def __enter__(self) -> MockServerProcess:
        cmd = [sys.executable, "-m", "bench._mockserve", "--latency", str(self.latency_s)]
        if self.tokens_per_s:
            cmd += ["--tokens-per-s", str(self.tokens_per_s)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            self._proc.kill()
            raise RuntimeError("mock server process exited before printing its port")
        self.port = int(json.loads(line)["port"])
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _ask(self, cmd: str) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(cmd + "\n")
        self._proc.stdin.flush()
        return json.loads(self._proc.stdout.readline())

    def stats(self) -> dict[str, Any]:
        """``{"calls", "chat_calls", "max_in_flight"}`` since start or the last :meth:`reset`."""
        return self._ask("stats")

    def reset(self) -> None:
        self._ask("reset")

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
