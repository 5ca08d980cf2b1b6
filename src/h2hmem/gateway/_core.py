"""What the gateway's routes call: the served model and embedder, counted, tagged and guarded.

:class:`GatewayCore` holds what a request needs (model, embedder, transcript sink, default stage,
image folder, statistics) and makes the calls; :class:`~h2hmem.gateway.ModelGateway` adds the
server's lifecycle on top.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
from collections import defaultdict
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..embed import Embedder
from ..llm import CallSink, ChatModel, ChatResult, GenerationConfig, Message, Stage, Usage, record_calls, tag_calls
from ._errors import from_model_error, invalid
from ._tags import parse_tag_header

T = TypeVar("T")
_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)


@dataclasses.dataclass
class GatewayStats:
    """What a gateway served since it started (live counters).

    ``usage_by_stage``: the chat usage of the gateway's calls per stage (tokens, calls, cached
    calls, cost; from each :class:`~h2hmem.llm.ChatResult`); ``embedded_texts_by_stage``: texts
    embedded per stage; ``rejected``: requests refused as bad input (4xx other than 429).
    """

    chat_requests: int = 0
    chat_cached: int = 0
    chat_failed: int = 0
    embedding_requests: int = 0
    embedding_failed: int = 0
    rejected: int = 0
    usage_by_stage: dict[str, Usage] = dataclasses.field(default_factory=lambda: defaultdict(Usage))
    embedded_texts_by_stage: dict[str, int] = dataclasses.field(default_factory=lambda: defaultdict(int))

    def total_usage(self) -> Usage:
        return sum(self.usage_by_stage.values(), Usage())


class GatewayCore:
    """The served model and embedder, and the per-request logic (see :class:`ModelGateway`)."""

    def __init__(
        self,
        model: ChatModel,
        embedder: Embedder | None,
        *,
        sink: CallSink | None,
        default_stage: Stage,
        image_dir: Path,
    ):
        self.model = model
        self.embedder = embedder
        self.sink = sink
        self.default_stage: Stage = default_stage
        self.image_dir = image_dir
        self.stats = GatewayStats()
        self.stopped_by: BaseException | None = None
        """The first non-``Exception`` a model call raised (the spend guard's ``BudgetExhausted``):
        the gateway answered 429 ``insufficient_quota``; :meth:`raise_if_stopped` re-raises it."""
        self.url_tags: dict[str, dict[str, Any]] = {}
        """Tags of the ``/t/<token>/v1`` base URLs handed out (see ``tagged_base_url``)."""

    def register_tag(self, tag: dict[str, Any]) -> str:
        """The token of a path carrying ``tag`` (the same tag, the same token).

        Raises:
            TagError: ``tag`` is not a valid tag (as for the header).
        """
        text = json.dumps(tag, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
        token = hashlib.sha256(text.encode("ascii")).hexdigest()[:16]
        self.url_tags[token] = parse_tag_header(text)
        return token

    def raise_if_stopped(self) -> None:
        """Re-raise what stopped the model behind the gateway (the spend guard's ``BudgetExhausted``),
        if anything did: the third-party caller got HTTP 429 and may have carried on regardless."""
        if self.stopped_by is not None:
            raise self.stopped_by

    def model_ids(self) -> list[str]:
        """What ``/v1/models`` lists: the chat model's spec, then the embedder's name."""
        ids = [self.model.spec]
        if self.embedder is not None:
            ids.append(self.embedder.name)
        return ids

    async def call_chat(
        self, messages: list[Message], config: GenerationConfig, tag: dict[str, Any], *, requested_model: str
    ) -> ChatResult:
        """One chat call for a request tagged ``tag``, counted in :attr:`stats`."""
        stage: Stage = tag.get("stage") or self.default_stage
        self.stats.chat_requests += 1
        with call_context(self, tag, requested_model):
            try:
                result: ChatResult = await guarded(self, self.model.chat(messages, config, stage=stage))
            except BaseException:
                self.stats.chat_failed += 1
                raise
        self.stats.chat_cached += result.cached
        self.stats.usage_by_stage[stage] = self.stats.usage_by_stage[stage] + result.usage
        return result

    async def call_embed(self, texts: list[str], tag: dict[str, Any], *, dimensions: int | None) -> np.ndarray:
        """Vectors of ``texts`` (shape ``(len(texts), dim)``, unit rows) for a request tagged ``tag``."""
        if self.embedder is None:
            raise invalid("this gateway serves no embedder (start it with one: --embedder)", "model")
        if dimensions is not None and self.embedder.dim and dimensions != self.embedder.dim:
            raise _wrong_dimensions(dimensions, self.embedder)
        stage = tag.get("stage") or self.default_stage
        self.stats.embedding_requests += 1
        try:
            vectors: np.ndarray = await guarded(self, self.embedder.embed(texts))
        except BaseException:
            self.stats.embedding_failed += 1
            raise
        if dimensions is not None and vectors.shape[1] != dimensions:  # the embedder's dim was not known before
            raise _wrong_dimensions(dimensions, self.embedder)
        self.stats.embedded_texts_by_stage[stage] += len(texts)
        return vectors


def _wrong_dimensions(asked: int, embedder: Embedder) -> Exception:
    return invalid(
        f"dimensions={asked} is not available: the embedder {embedder.name!r} gives {embedder.dim}-d vectors",
        "dimensions",
    )


@contextlib.contextmanager
def call_context(gw: GatewayCore, tag: dict[str, Any], requested_model: str) -> Iterator[None]:
    """The transcript sink (when the gateway has its own) and the request's tag, for one model call."""
    fields = {**{k: v for k, v in tag.items() if k != "stage"}, "via": "gateway", "requested_model": requested_model}
    with contextlib.ExitStack() as stack:
        if gw.sink is not None:
            stack.enter_context(record_calls(gw.sink))
        stack.enter_context(tag_calls(**fields))
        yield


async def guarded(gw: GatewayCore, call: Awaitable[T]) -> T:
    """Await ``call``; a model failure becomes its :class:`GatewayError` (a spend-guard stop is
    also kept in ``gw.stopped_by`` so the host can stop its run)."""
    try:
        return await call
    except _PASS_THROUGH:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception) and gw.stopped_by is None:
            gw.stopped_by = exc
        raise from_model_error(exc) from exc
