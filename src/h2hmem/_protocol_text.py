"""Protocol data files: official prompt and rubric strings kept verbatim as package data.

The ``paper`` preset sends the official scripts' own strings (``docs/protocol.md``).
Each string lives in a ``.txt`` file beside the module that uses it, in this form::

    # source: varib1/H2HMEM <path> @ <commit>
    # <any further comment lines>
    ---
    <the text, exactly as sent>

Everything after the first line that is exactly ``---`` is the text; one final newline (the
file's own line end) is not part of it. Placeholders such as ``{max_tokens}`` are ours and
documented in the header; the text is otherwise byte for byte the official string.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

_SEPARATOR = "---"


@dataclass(frozen=True)
class ProtocolText:
    """One protocol string and where it comes from."""

    text: str
    """The string, exactly as the official script sends it (placeholders aside)."""
    source: str
    """The ``# source:`` header: repository, file and commit."""


@functools.cache
def load_protocol_text(package: str, name: str) -> ProtocolText:
    """Read the protocol data file ``name`` of ``package`` (e.g. ``"h2hmem.caption"``).

    Raises:
        FileNotFoundError: no such file in the package.
        ValueError: the file has no ``---`` line or no ``# source:`` header (names the file).
    """
    raw = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    head, sep, body = raw.partition(f"\n{_SEPARATOR}\n")
    if not sep:
        raise ValueError(f"{package}/{name}: no line '{_SEPARATOR}' separating the header from the text")
    sources = [line[len("# source:") :].strip() for line in head.splitlines() if line.startswith("# source:")]
    if not sources:
        raise ValueError(f"{package}/{name}: the header names no source ('# source: repo path @ commit')")
    return ProtocolText(text=body[:-1] if body.endswith("\n") else body, source=sources[0])
