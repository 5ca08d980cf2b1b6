"""Safe reading of dataset files: UTF-8 JSON with errors that name the file, line and column."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_core import ErrorDetails

from ._issues import IssueLog

MAX_JSON_BYTES = 64 * 1024 * 1024
"""Refuse JSON files above 64 MiB: no genuine H2HMem file comes close (largest ≈ 200 kB)."""


def rel(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as a POSIX string (the path itself when outside).

    Bytes of a file name that are not UTF-8 (Python holds them as surrogates) are shown as
    ``\\xff`` escapes, so the name can always be printed and stored.
    """
    try:
        out = path.relative_to(root).as_posix()
    except ValueError:
        out = str(path)
    return out.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_json(path: Path, root: Path, log: IssueLog) -> Any | None:
    """Parse ``path``; on failure log an error naming file (and line/column) and return None."""
    name = rel(path, root)
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            log.error("file-too-large", name, f"{size} bytes exceeds the {MAX_JSON_BYTES}-byte limit")
            return None
        data = path.read_bytes()
    except OSError as e:
        log.error("unreadable-file", name, f"cannot read file: {e.strerror or e}")
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        log.error("not-utf8", name, f"not valid UTF-8 (byte {e.start}: {data[e.start : e.start + 1]!r})")
        return None
    if not text.strip():
        log.error("invalid-json", name, "file is empty")
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        log.error("invalid-json", name, f"invalid JSON: {e.msg}", field=f"line {e.lineno}, column {e.colno}")
        return None
    except RecursionError:
        log.error("invalid-json", name, "invalid JSON: nesting too deep")
        return None
    if _SURROGATE_ESCAPE.search(text):
        data, bad = replace_surrogates(data)
        for where in bad[:5]:
            log.warning(
                "invalid-unicode",
                name,
                "text holds an unpaired UTF-16 surrogate escape (\\udXXX); replaced by U+FFFD",
                field=where or None,
            )
        if len(bad) > 5:
            log.warning("invalid-unicode", name, f"… and {len(bad) - 5} more strings with unpaired surrogates")
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(data: Any) -> tuple[Any, list[str]]:
    """Replace unpaired surrogates (valid JSON escapes such as ``"\\ud800"``, but not Unicode: they
    cannot be printed, encoded as UTF-8 or stored) by U+FFFD in every string and key of ``data``.

    Returns the cleaned value and the JSON paths of the strings that changed. Iterative, so any
    depth ``json.loads`` accepted is fine.
    """
    bad: list[str] = []

    def fix(value: str, path: str) -> str:
        if _SURROGATE.search(value):
            bad.append(path)
            return _SURROGATE.sub("\ufffd", value)
        return value

    root: list[Any] = [data]
    stack: list[tuple[Any, Any, str]] = [(root, 0, "")]
    while stack:
        parent, key, path = stack.pop()
        value = parent[key]
        if isinstance(value, str):
            parent[key] = fix(value, path)
        elif isinstance(value, list):
            for i in range(len(value)):
                stack.append((value, i, f"{path}[{i}]"))
        elif isinstance(value, dict):
            if any(_SURROGATE.search(k) for k in value):
                value = {fix(k, f"{path}.{k!r}" if path else repr(k)): v for k, v in value.items()}
                parent[key] = value
            for k in value:
                stack.append((value, k, f"{path}.{k}" if path else k))
    return root[0], sorted(bad)


def loc_to_path(prefix: str, loc: tuple[Any, ...]) -> str:
    """Turn a pydantic error location into a JSON path: ``("dialogue", 3, "role")`` → ``dialogue[3].role``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_UNION_TAG = re.compile(r"^(str|int|float|bool|none|list\[.*\]|dict\[.*\])$")
"""Pydantic puts the tried member type of a union (``"list[str]"``, ``"str"``) in error locations;
no field of the raw models has such a name, so these parts are dropped from field paths."""


def field_errors(prefix: str, errors: Sequence[ErrorDetails]) -> list[tuple[str | None, str]]:
    """Pydantic errors as ``(JSON path or None, message)``, one per field: the errors of every member
    of a union (``answer_session: list[str] | str``) are merged into one message
    ("Input should be a valid list or a valid string")."""
    merged: dict[str, list[str]] = {}
    for err in errors:
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and _UNION_TAG.match(p)))
        msgs = merged.setdefault(loc_to_path(prefix, loc), [])
        if err["msg"] not in msgs:
            msgs.append(err["msg"])
    out = []
    for path, msgs in merged.items():
        head = "Input should be "
        if len(msgs) > 1 and all(m.startswith(head) for m in msgs):
            text = head + " or ".join(m[len(head) :] for m in msgs)
        else:
            text = "; ".join(msgs)
        out.append((path or None, text))
    return out
