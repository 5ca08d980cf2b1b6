"""Reading and writing one JSON record file (a manifest, a scores summary) through its model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from .._atomic import atomic_write_text
from ._versioned import describe_error, error_type

M = TypeVar("M", bound=BaseModel)


def read_record(path: Path, model: type[M], what: str, *, bad_json: str = "") -> M:
    """Parse and validate ``path`` as ``model`` (``bad_json``: what to say of a file that is not
    JSON, default "not a valid <what>").

    Raises:
        FileNotFoundError: no such file.
        ValueError: not valid JSON, not an object, a field of the wrong type, or a newer schema
            version (then :class:`RecordVersionError`) — the message names the file (``what``: "manifest", "scores summary") and the field.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: {bad_json or f'not a valid {what}'} ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a valid {what} (a JSON object expected, got {type(data).__name__})")
    try:
        return model.model_validate(data)
    except ValueError as e:
        raise error_type(e)(f"{path}: not a valid {what}: {describe_error(e)}") from None


def record_text(record: BaseModel) -> str:
    """The JSON text a record file holds (indented, UTF-8 characters kept)."""
    return json.dumps(record.model_dump(mode="json", fallback=str), ensure_ascii=False, indent=1)


def write_record(path: Path, record: BaseModel, *, fsync: bool = True) -> None:
    """Atomic replace (temporary file, fsync, rename): readers never see half a file."""
    atomic_write_text(path, record_text(record), fsync=fsync)
