"""The ``sample_runs`` fixture: two real runs of the sample, built once per test session (view_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from view_helpers import SampleRuns, build_sample_runs


@pytest.fixture(scope="session")
def sample_runs(sample_root: Path, tmp_path_factory) -> SampleRuns:
    return build_sample_runs(sample_root, tmp_path_factory.mktemp("view"))
