from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO.parent / "shared" / "data" / "h2hmem-sample"


@pytest.fixture(scope="session")
def sample_root() -> Path:
    """The real H2HMem sample (text only), read-only."""
    if not SAMPLE.is_dir():
        pytest.skip(f"real sample not found at {SAMPLE}")
    return SAMPLE
