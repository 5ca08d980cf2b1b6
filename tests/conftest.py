from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests read every dataset from its files: many patch the reader to count its work or break a file,
# which a parsed dataset stored by an earlier test would skip. The cache has its own tests
# (tests/data/test_load_cache.py), which turn it on; child processes inherit this setting.
os.environ["H2HMEM_DATASET_CACHE"] = "0"

REPO = Path(__file__).resolve().parents[1]
SAMPLE = Path(os.environ.get("H2HMEM_SAMPLE", REPO.parent / "shared" / "data" / "h2hmem-sample"))
"""The real text-only sample: ``../shared/data/h2hmem-sample`` beside the checkout, or ``$H2HMEM_SAMPLE``."""


@pytest.fixture(scope="session")
def sample_root() -> Path:
    """The real H2HMem sample (text only), read-only."""
    if not SAMPLE.is_dir():
        pytest.skip(f"real sample not found at {SAMPLE} (set H2HMEM_SAMPLE to its folder)")
    return SAMPLE
