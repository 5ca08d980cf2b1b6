"""Fixtures for the leaderboard tests: a run directory of predictions for the real sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from lb_helpers import mixed_predictions, write_run

from h2hmem.data import Dataset, load_dataset
from h2hmem.leaderboard import export_submission


@pytest.fixture(scope="session")
def sample_dataset(sample_root: Path) -> Dataset:
    return load_dataset(sample_root)


@pytest.fixture
def mixed_run(tmp_path: Path, sample_dataset: Dataset) -> Path:
    return write_run(tmp_path / "run", mixed_predictions(sample_dataset))


@pytest.fixture
def files(tmp_path: Path, sample_dataset: Dataset) -> list[Path]:
    """The two exported submission files of :func:`mixed_predictions`."""
    return export_submission(write_run(tmp_path / "run", mixed_predictions(sample_dataset)))
