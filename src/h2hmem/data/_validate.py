"""``h2hmem data validate``: every error and warning of a dataset, with counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._issues import IssueLog
from ._loader import load_dataset
from ._stats import dataset_stats


def validate_dataset(root: str | Path, split: str = "all") -> tuple[IssueLog, dict[str, Any]]:
    """Load ``root`` without stopping at errors; return the issue log and the dataset stats. Every
    file is read (never the parsed-dataset cache): checking the files is what validation is for.

    Errors (invalid JSON, wrong field types, unknown task types, unsafe image paths…) make the
    dataset unusable as is; warnings (absent sessions, missing images, odd dates, speaker-name
    variants, unvalidated questions…) are reported and tolerated.

    Raises:
        FileNotFoundError: ``root`` holds no split folder.
    """
    log = IssueLog()
    ds = load_dataset(root, split, strict=False, log=log, cache=False)
    counts = dataset_stats(ds)
    counts["unvalidated_questions"] = sum(1 for q in ds.questions if q.validated is False)
    return log, counts
