"""Per-call records of model calls ("transcripts"): what each call served, what was sent, what came back.

The model client (:class:`~h2hmem.llm.ModelClient`) reports every ``chat()`` call to the sink of
the running context, if any; callers say what the calls serve with :func:`tag_calls`. Both are
:mod:`contextvars`, so concurrent questions (asyncio tasks copy the context when they are created)
and concurrent runs in one process never mix their tags or sinks::

    with record_calls(writer.write):               # the run store's transcript writer
        with tag_calls(question_ids=[q.id], dialogue=d.id, session=q.session):
            await memory.answer(q)                   # every chat() inside is recorded with that tag

A record is a JSON-able dict (schema ``h2hmem/transcript/1``)::

    {"v": 1, "at": ISO time, "stage": "answer" | "memory_build" | "judge" | "caption" | "other",
     "question_ids": [...], "dialogue": "dyadic/dialogue5" | null, "session": "session3" | null,
     "model": spec, "cache_key": hex | null, "params": {temperature, max_tokens, json_mode, seed},
     "messages": [{"role", "content": str | [{"type": "text", "text"} |
                                             {"type": "image", "name", "path", "sha256"}]}],
     "images_substituted": n, "reply": text | null, "finish_reason": str | null,
     "usage": {prompt_tokens, completion_tokens, calls, cached_calls, cost_usd, latency_s},
     "latency_s": s, "cached": bool, "error": "Type: message" | null, ...tag extras}

``messages`` are the messages as the backend got them (images the model cannot see already
replaced by their ``[Image …]`` text); an image sent as pixels is referenced by file and SHA-256,
never inlined. Kinds of record: **paid** (``cached`` false, ``error`` null, ``usage.calls == 1``),
**cache hit** (``cached`` true: nothing was sent), **failed** (``error`` set after the retries;
nothing cached; with ``on_truncation="raise"`` a cut reply is recorded as paid with
``error: "OutputTruncatedError"``). A paid record is handed to the sink *before* its reply enters the request cache,
so every reply the cache can serve later has its paid record.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import functools
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ._types import GenerationConfig, ImagePart, Message, Usage

SCHEMA_VERSION = 1
CallSink = Callable[[dict[str, Any]], None]
"""Receives one record per model call (see the module docstring); must not raise for a good record."""

_sink: contextvars.ContextVar[CallSink | None] = contextvars.ContextVar("h2hmem_call_sink", default=None)
_tag: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "h2hmem_call_tag", default=MappingProxyType({})
)


@contextlib.contextmanager
def record_calls(sink: CallSink | None) -> Iterator[None]:
    """Send a record of every model call made in this context (and tasks created in it) to ``sink``;
    ``None`` switches recording off inside the block."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


@contextlib.contextmanager
def tag_calls(
    *, question_ids: list[str] | None = None, dialogue: str | None = None, session: str | None = None, **extra: Any
) -> Iterator[None]:
    """Tag the model calls made in this block: the questions they serve (an answer call: one id;
    a judge batch: every id of the batch), or the dialogue and session being observed (memory
    construction). Nested tags replace the fields they set and keep the others."""
    fields: dict[str, Any] = {**_tag.get()}
    if question_ids is not None:
        fields["question_ids"] = list(question_ids)
    if dialogue is not None:
        fields["dialogue"] = dialogue
    if session is not None:
        fields["session"] = session
    fields.update(extra)
    token = _tag.set(fields)
    try:
        yield
    finally:
        _tag.reset(token)


def current_tag() -> dict[str, Any]:
    """The tag of the running context (a copy): ``question_ids``, ``dialogue``, ``session`` and the
    extras given to :func:`tag_calls`, as far as they are set (``{}`` outside any tag). The model
    gateway sends it along with calls made by code we do not own (its ``X-H2HMem-Tag`` header)."""
    return dict(_tag.get())


def recording() -> bool:
    """True when a sink is active in this context (the client skips building records otherwise)."""
    return _sink.get() is not None


def messages_as_sent(messages: list[Message], sha256: Callable[[Any], str]) -> list[dict[str, Any]]:
    """JSON form of prepared messages: text verbatim, images as ``{"type": "image", "name", "path", "sha256"}``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m.content, str):
            out.append({"role": m.role, "content": m.content})
            continue
        parts: list[dict[str, Any]] = []
        for p in m.content:
            if isinstance(p, ImagePart):
                parts.append(
                    {
                        "type": "image",
                        "name": p.name,
                        "path": str(p.path) if p.path else None,
                        "sha256": sha256(p.path) if p.path else None,
                    }
                )
            else:
                parts.append({"type": "text", "text": p.text})
        out.append({"role": m.role, "content": parts})
    return out


@functools.lru_cache(maxsize=256)
def call_params(config: GenerationConfig) -> Mapping[str, Any]:
    """A record's ``params``: ``config`` as JSON, without ``attempt`` on a first try (so transcripts, and the
    request-cache key built from this, are those a first try always had), read-only; worked out once per
    distinct (frozen) config."""
    params = config.model_dump(mode="json")
    if not params.get("attempt"):
        params.pop("attempt", None)
    return MappingProxyType(params)


def emit_call(
    *,
    stage: str,
    model: str,
    messages: list[dict[str, Any]],
    config: GenerationConfig,
    cache_key: str | None,
    reply: str | None,
    finish_reason: str | None,
    usage: Usage,
    latency_s: float,
    cached: bool,
    images_substituted: int = 0,
    error: str | None = None,
) -> None:
    """Build the record of one call (tag of the current context included) and hand it to the sink.

    No-op without a sink. An exception from the sink (disk full) propagates to the caller of
    ``chat()``: the call fails and its reply is not cached (``--no-transcripts`` avoids it)."""
    sink = _sink.get()
    if sink is None:
        return
    tag = _tag.get()
    record: dict[str, Any] = {
        "v": SCHEMA_VERSION,
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        "stage": stage,
        "question_ids": tag.get("question_ids", []),
        "dialogue": tag.get("dialogue"),
        "session": tag.get("session"),
        "model": model,
        "cache_key": cache_key,
        "params": dict(call_params(config)),
        "messages": messages,
        "images_substituted": images_substituted,
        "reply": reply,
        "finish_reason": finish_reason,
        "usage": usage.model_dump(),
        "latency_s": round(latency_s, 6),
        "cached": cached,
        "error": error,
    }
    record.update({k: v for k, v in tag.items() if k not in record})
    sink(record)
