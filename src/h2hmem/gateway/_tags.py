"""What a gateway call serves: the tag (dialogue, session, stage, question ids) of the code that caused it.

In-process, the caller tags its work with :func:`h2hmem.llm.tag_calls` (``stage=`` is one of
its extras); third-party code then calls the gateway over HTTP, which loses the context, so the
tag travels as a header: :data:`TAG_HEADER`, a JSON object (ASCII) such as
``{"dialogue": "dyadic/dialogue5", "session": "session3", "stage": "memory_build"}``.
:func:`tag_header` builds it from the running context; :func:`add_tag_header` (and its async
twin) is an ``httpx`` request hook that adds it to every request a client sends, so a product
whose OpenAI client accepts an ``http_client`` is tagged without knowing it. Out-of-process
callers set the header themselves.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, get_args

import httpx

from ..llm import Stage, current_tag

TAG_HEADER = "X-H2HMem-Tag"
"""Request header carrying the tag of a call (a JSON object)."""
STAGES: tuple[str, ...] = get_args(Stage)
_LIST_FIELDS = ("question_ids",)
_TEXT_FIELDS = ("dialogue", "session", "stage")


class TagError(ValueError):
    """A tag header that is not a JSON object of the documented fields (the message says which)."""


def tag_header(tag: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``{TAG_HEADER: <JSON>}`` for ``tag`` (default: :func:`h2hmem.llm.current_tag`), or ``{}``
    when the tag is empty. Values must be JSON-able; non-ASCII text is escaped."""
    fields = current_tag() if tag is None else dict(tag)
    if not fields:
        return {}
    return {TAG_HEADER: json.dumps(fields, ensure_ascii=True, sort_keys=True, separators=(",", ":"))}


def add_tag_header(request: httpx.Request) -> None:
    """``httpx.Client(event_hooks={"request": [add_tag_header]})``: send the running context's tag
    with every request (a header already set by the caller is kept)."""
    if TAG_HEADER not in request.headers:
        request.headers.update(tag_header())


async def add_tag_header_async(request: httpx.Request) -> None:
    """:func:`add_tag_header` for ``httpx.AsyncClient(event_hooks={"request": [...]})``."""
    add_tag_header(request)


def parse_tag_header(value: str | None) -> dict[str, Any]:
    """The tag a request carries (``{}`` without a header).

    Raises:
        TagError: not JSON, not an object, ``stage`` not one of the accounting stages,
            ``dialogue``/``session`` not text, or ``question_ids`` not a list of text.
    """
    if value is None or not value.strip():
        return {}
    try:
        tag = json.loads(value)
    except ValueError as e:
        raise TagError(f"header {TAG_HEADER} is not JSON ({e})") from None
    if not isinstance(tag, dict):
        raise TagError(f"header {TAG_HEADER} must be a JSON object, got {type(tag).__name__}")
    for key in _TEXT_FIELDS:
        if key in tag and tag[key] is not None and not isinstance(tag[key], str):
            raise TagError(f"header {TAG_HEADER}: {key!r} must be a string")
    if "stage" in tag and tag["stage"] is not None and tag["stage"] not in STAGES:
        raise TagError(f"header {TAG_HEADER}: stage {tag['stage']!r} is not one of {', '.join(STAGES)}")
    for key in _LIST_FIELDS:
        if key in tag and not (isinstance(tag[key], list) and all(isinstance(x, str) for x in tag[key])):
            raise TagError(f"header {TAG_HEADER}: {key!r} must be a list of strings")
    return tag
