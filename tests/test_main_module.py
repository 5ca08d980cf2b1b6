"""``python -m h2hmem`` is the ``h2hmem`` command (for environments without the console script on PATH)."""

from __future__ import annotations

import subprocess
import sys


def test_python_dash_m_runs_the_cli():
    out = subprocess.run(
        [sys.executable, "-m", "h2hmem", "run", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "Usage: python -m h2hmem run" in " ".join(out.stdout.split())
    assert "--answer-max-tokens" in out.stdout
