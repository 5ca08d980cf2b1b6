from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = Path(os.environ.get("H2HMEM_SAMPLE", REPO.parent / "shared" / "data" / "h2hmem-sample"))
"""The real text-only sample: ``../shared/data/h2hmem-sample`` beside the checkout, or ``$H2HMEM_SAMPLE``."""


@pytest.fixture(scope="session")
def sample_root() -> Path:
    """The real H2HMem sample (text only), read-only."""
    if not SAMPLE.is_dir():
        pytest.skip(f"real sample not found at {SAMPLE} (set H2HMEM_SAMPLE to its folder)")
    return SAMPLE
