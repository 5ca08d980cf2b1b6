"""The ``schema`` field every record file carries: ``"h2hmem.<kind>/<version>"``.

A reader accepts a record without the field (version 1, written before records were versioned),
reads an older version through the record's :meth:`Versioned.upgrade` (the old shape → the
current one), and refuses one of an unknown kind or a newer version with a
:class:`RecordVersionError` that names the tag it found, so an old h2hmem never misreads a file a
newer one wrote.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import ConfigDict, ValidationError, model_validator

from ._base import Record

_TAG = re.compile(r"^h2hmem[./](?P<kind>[a-z0-9-]+)/(?P<version>\d+)$")


class RecordVersionError(ValueError):
    """A record names another kind, or a version this h2hmem does not read (written by a newer one)."""


def schema_tag(kind: str, version: int = 1) -> str:
    """``("manifest", 1)`` → ``"h2hmem.manifest/1"``."""
    return f"h2hmem.{kind}/{version}"


class Versioned(Record):
    """Base of a record written to a file. Subclasses set ``KIND`` and declare
    ``schema_: Literal["h2hmem.<KIND>/<VERSION>"] = Field(..., alias="schema")`` (serialised as
    ``schema``). A record whose shape changed bumps ``VERSION`` and overrides :meth:`upgrade`."""

    model_config = ConfigDict(serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)
    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1

    @classmethod
    def upgrade(cls, data: dict[str, Any], version: int) -> dict[str, Any]:
        """The fields of a record written as ``version`` (older than ``VERSION``) in the current
        shape. Default: unchanged (versions that only added optional fields)."""
        return data

    @model_validator(mode="before")
    @classmethod
    def _check_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if data.get("schema") is None and data.get("schema_") is None:
            # no tag: version 1, written before records were versioned
            return cls.upgrade(dict(data), 1) if cls.VERSION > 1 else data
        tag = data.get("schema", data.get("schema_"))
        m = _TAG.match(str(tag))
        if m is None or m["kind"] != cls.KIND:
            raise RecordVersionError(f"schema {tag!r} is not a {schema_tag(cls.KIND, cls.VERSION)} record")
        if int(m["version"]) < cls.VERSION:
            data = cls.upgrade(dict(data), int(m["version"]))
        elif int(m["version"]) > cls.VERSION:
            raise RecordVersionError(
                f"schema {tag!r}: this h2hmem reads {schema_tag(cls.KIND, cls.VERSION)} "
                "(the file was written by a newer h2hmem; upgrade h2hmem to read it)"
            )
        data = dict(data)
        data.pop("schema_", None)
        data["schema"] = schema_tag(cls.KIND, cls.VERSION)  # "h2hmem/<kind>/1" (older spelling) → current
        return data


def error_type(error: ValueError) -> type[ValueError]:
    """:class:`RecordVersionError` when a validation failed on the ``schema`` tag, else ``ValueError``
    (what a reader raises, with the file named, for this validation error)."""
    if isinstance(error, RecordVersionError):
        return RecordVersionError
    if isinstance(error, ValidationError):
        if any(isinstance((e.get("ctx") or {}).get("error"), RecordVersionError) for e in error.errors()):
            return RecordVersionError
    return ValueError


def describe_error(error: ValueError) -> str:
    """``"question_id: Input should be a valid string (got 5)"`` per field, without pydantic's boilerplate."""
    if not isinstance(error, ValidationError):
        return str(error)
    parts = []
    for err in error.errors():
        field = ".".join(map(str, err["loc"]))
        got = "" if err["type"] in ("missing", "json_invalid", "value_error") else f" (got {err.get('input')!r:.60})"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{field + ': ' if field else ''}{msg}{got}")
    return "; ".join(parts)
