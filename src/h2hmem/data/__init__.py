"""The H2HMem data layer: typed schema, loader, validator, statistics, download, synthetic data."""

from ._issues import DatasetError, Issue, IssueLog
from ._loader import find_root, load_dataset, parse_date, resolve_image
from ._schema import SPLITS, Dataset, Dialogue, ImageRef, Question, Session, Split, Turn
from ._taxonomy import (
    DIFFICULTIES,
    MainCategory,
    TaskType,
    UnknownLabelError,
    parse_difficulty,
    parse_main_category,
)

__all__ = [
    "DIFFICULTIES", "SPLITS", "Dataset", "DatasetError", "Dialogue", "ImageRef", "Issue", "IssueLog",
    "MainCategory", "Question", "Session", "Split", "TaskType", "Turn", "UnknownLabelError",
    "find_root", "load_dataset", "parse_date", "parse_difficulty", "parse_main_category", "resolve_image",
]
