"""The H2HMem data layer: typed schema, loader, validator, statistics, download, synthetic data."""

from ._download import DownloadError, download_dataset
from ._files import loc_to_path, replace_surrogates
from ._issues import DatasetError, Issue, IssueLog
from ._loader import find_root, image_field, load_dataset, parse_date, resolve_image
from ._schema import SPLITS, Dataset, Dialogue, ImageRef, Question, Session, Split, Turn
from ._synth import synthesize_dataset
from ._taxonomy import (
    DIFFICULTIES,
    MainCategory,
    TaskType,
    UnknownLabelError,
    parse_difficulty,
    parse_main_category,
)
from ._validate import validate_dataset

__all__ = [
    "DIFFICULTIES",
    "SPLITS",
    "Dataset",
    "DatasetError",
    "Dialogue",
    "DownloadError",
    "ImageRef",
    "Issue",
    "IssueLog",
    "MainCategory",
    "Question",
    "Session",
    "Split",
    "TaskType",
    "Turn",
    "UnknownLabelError",
    "download_dataset",
    "find_root",
    "load_dataset",
    "loc_to_path",
    "image_field",
    "parse_date",
    "parse_difficulty",
    "parse_main_category",
    "replace_surrogates",
    "resolve_image",
    "synthesize_dataset",
    "validate_dataset",
]
