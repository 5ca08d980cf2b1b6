"""``h2hmem run --dry-run``: what a run would send and cost, without calling any model.

The real runner runs the real method code over the selected questions, in a scratch run
directory, with every chat model replaced by a :class:`CountingChat`: it builds each request
exactly as the model client would (image parts replaced by text for text-only models), looks it
up in the request cache without writing, counts its prompt tokens with the model's tokenizer
(tiktoken's encoding for OpenAI models, cl100k otherwise — :func:`h2hmem.llm._known.encoding_for`)
and answers with the cached reply, or with an empty text when the request is not cached. So the
memory-build and answer prompts are the real ones; prompts that depend on an earlier reply (A-Mem's
note links, a judge's re-ask) see an empty reply and are an estimate. A request asked again because
the empty stand-in reply of its previous try was unusable (``GenerationConfig.attempt`` one more:
A-Mem's note writer under ``paper``) is not counted: the estimate assumes usable replies (counting
them doubled A-Mem's build calls). A judging round of an earlier evaluation (``attempt`` ≥ 1 from its
first ask) is counted. Questions already recorded in
the real run directory are not counted (a resume does not ask them again).

Completion tokens cannot be counted before the reply exists: the estimate uses
:data:`COMPLETION_ESTIMATE` per call (capped at the call's ``max_tokens``), and the worst case
(every call using all of ``max_tokens``) is reported beside it. The answer model's local
embedder (MiniLM) runs, since retrieval decides the prompts; a remote embedder is refused (it
would be called).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from .._aio import run_sync
from ..llm import (
    ChatResult,
    GenerationConfig,
    Message,
    Prices,
    Stage,
    Usage,
    cached_reply,
    call_cost,
    count_request,
    is_free,
    model_name,
)
from ._config import RunConfig

COMPLETION_ESTIMATE: dict[str, int] = {"answer": 40, "memory_build": 160, "judge": 60, "caption": 120, "other": 64}
"""Completion tokens assumed per call by stage (judge: per judged item), capped at ``max_tokens``.
Rough orders of magnitude of short answers, A-Mem note JSON, judge verdicts with a reason, and
one-paragraph captions; the worst case is reported beside it."""


class StageCost(BaseModel):
    """Calls, tokens and cost of one stage. ``cost_usd`` is None when the model has no known price."""

    model: str = ""
    calls: int = 0
    """Requests that would be sent (not in the request cache)."""
    prompt_tokens: int = 0
    """Their prompt tokens: message texts with the model's tokenizer + images (chat-format tokens apart)."""
    format_tokens: int = 0
    """Chat-format tokens of those requests (3 per message and per request)."""
    completion_tokens: int = 0
    """Estimated completion tokens (:data:`COMPLETION_ESTIMATE`)."""
    completion_tokens_max: int = 0
    """Worst case: every call uses its whole ``max_tokens``."""
    cost_usd: float | None = 0.0
    cost_usd_max: float | None = 0.0
    cached_calls: int = 0
    """Requests answered by the request cache (free)."""
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    """As stored with the cached replies."""
    cached_cost_usd: float | None = 0.0
    """What the cached share would cost if it were sent again."""

    def add(self, other: StageCost) -> StageCost:
        out = self.model_copy()
        for k in (
            "calls",
            "prompt_tokens",
            "format_tokens",
            "completion_tokens",
            "completion_tokens_max",
            "cached_calls",
            "cached_prompt_tokens",
            "cached_completion_tokens",
        ):
            setattr(out, k, getattr(self, k) + getattr(other, k))
        for k in ("cost_usd", "cost_usd_max", "cached_cost_usd"):
            a, b = getattr(self, k), getattr(other, k)
            setattr(out, k, None if a is None or b is None else a + b)
        if self.model != other.model:
            out.model = ", ".join(x for x in dict.fromkeys((self.model, other.model)) if x)
        return out


class CostEstimate(BaseModel):
    """What :func:`estimate_run` (or the judge estimate) found; ``stages`` by stage name."""

    questions: int = 0
    """Questions selected."""
    already_recorded: int = 0
    """Of those, recorded in the run directory already (not counted)."""
    stages: dict[str, StageCost] = {}
    unpriced: list[str] = []
    """Models without a known price (their cost is None): add ``--price MODEL=IN/OUT``."""
    notes: list[str] = []

    @property
    def total(self) -> StageCost:
        out = StageCost()
        for s in self.stages.values():
            out = out.add(s)
        return out


class CountingChat:
    """A :class:`~h2hmem.llm.ChatModel` that counts requests and sends none (see the module docstring).

    Args:
        client: the real :class:`~h2hmem.llm.ModelClient` (never called: it gives the tokenizer,
            the context window, image support, the cache and the cache key).
        prices: extra prices (USD per 1M input/output tokens).
    """

    def __init__(self, client: Any, prices: Prices | None = None):
        self.client = client
        self.spec = client.spec
        self.supports_images = client.supports_images
        self.prices = prices
        self.stages: dict[str, StageCost] = {}
        self._stand_ins: set[str] = set()  # keys of structured requests answered by the empty stand-in

    @property
    def context_tokens(self) -> int:
        return self.client.context_tokens

    def count_tokens(self, text: str) -> int:
        return self.client.count_tokens(text)

    def usage_by_stage(self) -> dict[str, Usage]:
        return {}  # nothing was used

    async def chat(
        self,
        messages: list[Message],
        config: GenerationConfig | None = None,
        *,
        stage: Stage = "answer",
        items: int = 1,
    ) -> ChatResult:
        config = config or GenerationConfig()
        if config.attempt and self._asked_of_stand_in(messages, config):
            return self._stand_in(messages, config)  # not counted: only the stand-in made the caller ask again
        n = count_request(self.client, messages)
        s = self.stages.setdefault(stage, StageCost(model=model_name(self.client)))
        hit = cached_reply(self.client, messages, config)
        if hit is not None:
            s.cached_calls += 1
            s.cached_prompt_tokens += hit.prompt_tokens or n.prompt_tokens
            s.cached_completion_tokens += hit.completion_tokens
            s.cached_cost_usd = _plus(
                s.cached_cost_usd,
                call_cost(self.client, hit.prompt_tokens or n.prompt_tokens, hit.completion_tokens, self.prices),
            )
            return ChatResult(
                text=hit.text,
                model=self.spec,
                usage=Usage(cached_calls=1),
                latency_s=0.0,
                cached=True,
                finish_reason=hit.finish_reason,
            )
        est = COMPLETION_ESTIMATE.get(stage, COMPLETION_ESTIMATE["other"]) * max(1, items)
        if config.max_tokens is not None:  # None: no limit sent (the official judge)
            est = min(config.max_tokens, est)
        prompt = n.prompt_tokens + n.format_tokens
        s.calls += 1
        s.prompt_tokens += n.prompt_tokens
        s.format_tokens += n.format_tokens
        s.completion_tokens += est
        # no limit sent (the official judge): the estimate is the only bound there is
        bound = config.max_tokens if config.max_tokens is not None else est
        s.completion_tokens_max += bound
        s.cost_usd = _plus(s.cost_usd, call_cost(self.client, prompt, est, self.prices))
        s.cost_usd_max = _plus(s.cost_usd_max, call_cost(self.client, prompt, bound, self.prices))
        return self._stand_in(messages, config)

    def _stand_in(self, messages: list[Message], config: GenerationConfig) -> ChatResult:
        """The empty reply of a request the cache cannot answer. A structured request's (JSON mode or
        schema) is remembered: a caller that finds it unusable asks again with ``attempt + 1``."""
        if config.json_mode or config.json_schema is not None:
            self._stand_ins.add(self.client.cache_key(messages, config))
        return ChatResult(text="", model=self.spec, usage=Usage(), latency_s=0.0, cached=False, finish_reason="stop")

    def _asked_of_stand_in(self, messages: list[Message], config: GenerationConfig) -> bool:
        """Whether this try's previous one was answered by the stand-in in this dry run (a judging round
        of an earlier evaluation, ``attempt`` ≥ 1 from its first ask, was not: it is counted)."""
        previous = config.model_copy(update={"attempt": config.attempt - 1})
        return self.client.cache_key(messages, previous) in self._stand_ins

    async def aclose(self) -> None:
        return None


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def counting_model(
    spec: str,
    *,
    base_url: list[str] | str | None,
    cache_path: Path | None,
    use_cache: bool,
    refresh: bool,
    prices: Prices | None,
) -> CountingChat:
    """A :class:`CountingChat` for ``spec``: the model client is built (tokenizer, cache key) but
    never called; no API key is needed."""
    from ..llm import RequestCache, default_cache_path, load_chat_model

    cache: _ReadOnlyCache | None = None
    if use_cache:
        path = Path(cache_path or default_cache_path())
        cache = _ReadOnlyCache(RequestCache(path)) if path.is_file() else None
    client = load_chat_model(spec, base_url=base_url, api_key="dry-run (never sent)", prices=prices, refresh=refresh)
    # duck-typed stand-in: the client only calls `get`/`put`, which _ReadOnlyCache provides
    client.cache = cast("RequestCache | None", cache)
    return CountingChat(client, prices)


class _ReadOnlyCache:
    """A request cache that answers look-ups and stores nothing (a dry run must not change it)."""

    def __init__(self, cache: Any):
        self._cache = cache

    def get(self, key: str) -> Any:
        return self._cache.get(key)

    def put(self, key: str, entry: Any) -> None:
        return None


def collect(estimate: CostEstimate, *models: CountingChat | None) -> None:
    """Add the counts of ``models`` (each once) to ``estimate``, and name unpriced models."""
    seen: set[int] = set()
    for m in models:
        if m is None or id(m) in seen:
            continue
        seen.add(id(m))
        for stage, s in m.stages.items():
            estimate.stages[stage] = estimate.stages[stage].add(s) if stage in estimate.stages else s
        if not is_free(m.client) and call_cost(m.client, 1, 1, m.prices) is None:
            estimate.unpriced.append(model_name(m.client))


def estimate_run(
    config: RunConfig, *, embedder: Any = None, progress: bool = False, caption_model: str | None = None
) -> CostEstimate:
    """Dry run of ``config``: counts per stage, nothing sent, nothing written to ``config.run_dir``
    or the request cache (sync entry point; see the module docstring for what is exact).

    ``caption_model``: also count the caption calls that model would make for the selected
    dialogues' images without a caption (stage ``"caption"``).

    Raises: as :func:`~h2hmem.run.run_benchmark` for a bad dataset, method or selection;
    ``InRunningLoopError`` inside a running event loop (``await aestimate_run(config, ...)`` there).
    """
    return run_sync(
        lambda: aestimate_run(config, embedder=embedder, progress=progress, caption_model=caption_model),
        "aestimate_run",
        args="config, ...",
    )


async def aestimate_run(
    config: RunConfig, *, embedder: Any = None, progress: bool = False, caption_model: str | None = None
) -> CostEstimate:
    """Async form of :func:`estimate_run`."""
    from ._runner import arun_benchmark

    prices = config.execution.prices or None
    opts: dict[str, Any] = dict(
        base_url=config.models.base_url,
        cache_path=config.execution.cache_path,
        use_cache=config.execution.use_cache,
        refresh=config.execution.refresh_cache,
        prices=prices,
    )
    chat = counting_model(config.models.model, **opts)
    builder = counting_model(config.models.build_model, **opts) if config.models.build_model else None
    estimate = CostEstimate()
    if embedder is None and config.models.embedder.startswith("openai:"):
        raise ValueError(
            f"--dry-run with the remote embedder {config.models.embedder} would send embedding requests; "
            "estimate with --embedder minilm (retrieval differs, prompt sizes are comparable)"
        )
    with _scratch(config) as scratch:
        summary = await arun_benchmark(
            scratch,
            chat_model=chat,
            build_model=builder,
            embedder=embedder,  # type: ignore[arg-type]
            progress=progress,
        )
        from ..records import RunStore

        manifest = RunStore(scratch.run_dir).read_manifest()
        dialogues = {f"{p.split}/{p.dialogue}" for p in RunStore(scratch.run_dir).predictions()}
    estimate.questions = summary.questions
    estimate.already_recorded = summary.skipped
    collect(estimate, chat, builder)
    if caption_model is not None:
        from ._dry_captions import add_caption_estimate

        await add_caption_estimate(estimate, config, caption_model, dialogues)
        return estimate
    missing = manifest.images_without_caption if manifest is not None else 0
    if missing:
        estimate.notes.append(
            f"{missing} images reach the method without a caption (the answer prompts were counted "
            "so); --caption-model MODEL counts what captioning them first would cost"
        )
    return estimate


@contextlib.contextmanager
def _scratch(config: RunConfig):
    """A config writing to a temporary run directory that starts with the real run's recorded
    predictions (so a resume's already-answered questions are not counted); removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="h2hmem-dry-run-"))
    try:
        scratch = config.model_copy(
            update={
                "out_dir": tmp,
                "run_id": config.resolved_run_id,
                "max_cost_usd": None,
                "retry_failed": config.execution.retry_failed,
            }
        )
        real = config.run_dir / "predictions.jsonl"
        if real.is_file():
            scratch.run_dir.mkdir(parents=True)
            shutil.copyfile(real, scratch.run_dir / "predictions.jsonl")
        yield scratch
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
