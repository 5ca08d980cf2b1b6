"""An in-process :class:`~h2hmem.llm.ChatModel` that replies by rule or by table and records every request.

One scripted model replaces the hand-written fakes of tests: a memory plugin's test builds it, hands
it to the code under test (``run_benchmark(..., chat_model=model)``, ``judge_predictions(preds,
model)``, a ``MemoryContext``…) and then asserts on :attr:`ScriptedChatModel.requests`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from h2hmem.llm import ChatResult, GenerationConfig, ImagePart, Message, TextPart, Usage, count_tokens

from ._mock_server import IMAGE_PART_TOKENS
from ._protocols import forced_tool, json_object_reply, mock_answer, structured_reply
from ._requests import ScriptedRequest, content_text


@dataclass(frozen=True)
class Reply:
    """One scripted reply, when a bare string is not enough.

    Args:
        text: the reply text.
        finish_reason: ``ChatResult.finish_reason`` (``"stop"``, or ``"length"`` to act out a cut reply).
        usage: the call's usage; None counts it by the model's rule (see :class:`ScriptedChatModel`).
        delay_s: seconds the call sleeps before replying (added to the model's ``latency_s``).
    """

    text: str
    finish_reason: str | None = "stop"
    usage: Usage | None = None
    delay_s: float = 0.0


ReplyLike = str | Reply | BaseException | type[BaseException] | Callable[[ScriptedRequest], Any]
"""What a rule or table yields: a text, a :class:`Reply`, an exception (instance or class) to raise,
or a callable ``fn(request)`` returning one of those."""

Predicate = Callable[[ScriptedRequest], bool]


@dataclass
class When:
    """A rule: ``reply`` for the requests matching every condition given.

    ``stage``: the caller's stage equals it; ``contains``: the text of all messages contains it;
    ``question``: the request's ``Question:`` line equals it; ``match``: ``match(request)`` is
    true. ``times``: how many matching requests it serves (None = all).
    """

    reply: ReplyLike
    stage: str | None = None
    contains: str | None = None
    question: str | None = None
    match: Predicate | None = None
    times: int | None = None
    hits: int = field(default=0, init=False)

    def pick(self, req: ScriptedRequest, lock: threading.Lock) -> ReplyLike | None:
        """``reply`` when the request matches (counting the hit), else None."""
        with lock:
            if not self.matches(req):
                return None
            self.hits += 1
        return self.reply

    def matches(self, req: ScriptedRequest) -> bool:
        return (
            (self.times is None or self.hits < self.times)
            and (self.stage is None or req.stage == self.stage)
            and (self.contains is None or self.contains in req.text)
            and (self.question is None or req.question == self.question)
            and (self.match is None or bool(self.match(req)))
        )


RuleLike = When | tuple[Predicate, ReplyLike] | Callable[[ScriptedRequest], Any]
"""A :class:`When`, a ``(predicate, reply)`` pair, or a callable ``fn(request)`` returning a reply
or None (None: no match, the next rule is tried)."""


class ScriptExhausted(AssertionError):
    """No rule, table entry or default gave a reply for a request (the message names it)."""


class ScriptedChatModel:
    """A :class:`~h2hmem.llm.ChatModel` whose replies are scripted; every request is recorded.

    Each request is answered by the first source that gives a reply:

    1. ``rules`` in order, first match wins (a :class:`When`, a ``(predicate, reply)`` pair, or
       a callable returning a reply or None);
    2. ``table``: a list is served in order, one entry per request that reached it; a mapping is
       looked up by ``key(request)`` (default: the request's ``Question:`` line), and a list
       value is served in order per key (its last entry repeats);
    3. ``default`` (a reply, or a callable of the request);
    4. with ``protocol_replies`` (the default), the reply the request's protocol calls for
       (:func:`~h2hmem.testing.structured_reply`): a judge prompt of either preset gets valid
       judgments of every item, a request with a JSON schema (``config.json_schema``) a
       schema-valid instance, a JSON-mode request ``{"answer": "mock-<hash>"}``;
       otherwise an unanswered request raises :class:`ScriptExhausted`, naming it.

    Anything scripted overrides the protocol replies: leave ``default`` out (or scope text replies
    with ``When(..., stage="answer")``) to let judge, schema and JSON requests get theirs.

    A reply that is an exception (e.g. ``RateLimitError("slow down")``, or the class
    ``ServerError``) is raised from ``chat``, as the real client raises its typed
    :class:`~h2hmem.llm.ModelError` subclasses; :class:`Reply` adds a delay, a finish reason or
    a fixed usage.

    Usage, per call, unless the reply or ``usage`` fixes it: ``prompt_tokens`` = the model's
    :meth:`count_tokens` of every message text plus 85 per image part (the mock server's rule),
    ``completion_tokens`` = :meth:`count_tokens` of the reply, ``calls=1``; ``cost_usd`` =
    ``cost_per_call``; ``latency_s`` = the scripted delay (``latency_s`` + the reply's
    ``delay_s``), never the measured time, so usage totals are exact.

    Args:
        rules, table, key, default: the script, as above.
        spec: the model spec it reports (``ChatResult.model``, manifests, judge labels).
        supports_images: whether callers may send image parts (text-only callers substitute captions).
        context_tokens: the context window reported to full-context methods (None: they use their default).
        tokenizer: ``count_tokens`` rule: an offline tiktoken encoding name, or a callable ``str -> int``.
        usage: a fixed :class:`~h2hmem.llm.Usage` per call, or ``usage(request, reply_text) -> Usage``.
        cost_per_call: dollars per call when usage is counted.
        latency_s: seconds every call sleeps.
        protocol_replies: answer judge prompts, JSON-schema and JSON-mode requests that the
            script leaves unanswered (step 4); False raises :class:`ScriptExhausted` for them.

    Example::

        model = ScriptedChatModel(
            rules=[When("Paris", question="Where is the Louvre?"), When(RateLimitError("busy"), times=1)],
            default="I don't know.",
        )
        result = await model.chat([Message(role="user", content="Question: Where is the Louvre?")])
        assert result.text == "Paris" and model.last.question == "Where is the Louvre?"
    """

    def __init__(
        self,
        rules: Sequence[RuleLike] = (),
        *,
        table: Sequence[ReplyLike] | Mapping[Hashable, ReplyLike | Sequence[ReplyLike]] | None = None,
        key: Callable[[ScriptedRequest], Hashable] | None = None,
        default: ReplyLike | None = None,
        spec: str = "scripted:model",
        supports_images: bool = False,
        context_tokens: int | None = None,
        tokenizer: str | Callable[[str], int] = "cl100k_base",
        usage: Usage | Callable[[ScriptedRequest, str], Usage] | None = None,
        cost_per_call: float = 0.0,
        latency_s: float = 0.0,
        protocol_replies: bool = True,
    ):
        self.spec = spec
        self.protocol_replies = protocol_replies
        self.supports_images = supports_images
        self.context_tokens = context_tokens
        self.rules = [_as_rule(r) for r in rules]
        self.table = table
        self.key = key or (lambda req: req.question)
        self.default = default
        self.usage = usage
        self.cost_per_call = cost_per_call
        self.latency_s = latency_s
        self._tokenizer = tokenizer
        self.requests: list[ScriptedRequest] = []
        """Every request received, in arrival order (failed ones included)."""
        self._next_row = 0
        self._served: dict[Hashable, int] = defaultdict(int)
        self._usage: dict[str, Usage] = defaultdict(Usage)
        self._lock = threading.Lock()

    # ----- the ChatModel interface --------------------------------------------------------------
    async def chat(
        self, messages: list[Message], config: GenerationConfig | None = None, *, stage: str = "answer"
    ) -> ChatResult:
        """Record the request, then reply per the script (sleeping its delay) or raise its error."""
        req = self._record(list(messages), config or GenerationConfig(), stage)
        reply = self._reply_for(req)
        delay = self.latency_s + reply.delay_s
        if delay > 0:
            await asyncio.sleep(delay)
        usage = self._count(req, reply, delay)
        with self._lock:
            self._usage[stage] = self._usage[stage] + usage
        return ChatResult(
            text=reply.text,
            model=self.spec,
            usage=usage,
            latency_s=delay,
            finish_reason=reply.finish_reason,
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the ``tokenizer`` rule (default: cl100k_base, offline)."""
        if callable(self._tokenizer):
            return int(self._tokenizer(text))
        return count_tokens(text, self._tokenizer)

    def usage_by_stage(self) -> dict[str, Usage]:
        """Usage summed per stage (copies), as :class:`~h2hmem.llm.ModelClient` reports it."""
        with self._lock:
            return {stage: u.model_copy() for stage, u in self._usage.items()}

    def total_usage(self) -> Usage:
        return sum(self.usage_by_stage().values(), Usage())

    async def aclose(self) -> None:
        return None

    # ----- assertions ---------------------------------------------------------------------------
    @property
    def calls(self) -> int:
        """Number of requests received (failed ones included)."""
        return len(self.requests)

    @property
    def last(self) -> ScriptedRequest:
        """The latest request; raises ``IndexError`` when there was none."""
        if not self.requests:
            raise IndexError(f"{self.spec} received no request")
        return self.requests[-1]

    def requests_for(self, stage: str) -> list[ScriptedRequest]:
        """The requests of one stage, in order."""
        return [r for r in self.requests if r.stage == stage]

    def questions(self, stage: str | None = None) -> list[str | None]:
        """The ``Question:`` line of each request (of ``stage`` when given), in order."""
        return [r.question for r in self.requests if stage is None or r.stage == stage]

    # ----- over HTTP ----------------------------------------------------------------------------
    def responder(self, body: dict[str, Any]) -> Any:
        """The same script as a :class:`~h2hmem.testing.MockOpenAIServer` ``responder``: the
        OpenAI request body is recorded as a request of stage ``"http"`` (image parts become
        :class:`~h2hmem.llm.ImagePart` named by their URL's first 40 characters) and answered by
        the script. An exception reply makes the server answer HTTP 500; use the server's
        ``script`` of :class:`~h2hmem.testing.Fault` for typed HTTP faults. Usage is counted by
        the server, not here. A request forcing a tool call is recorded as a request for
        the tool's ``parameters`` schema (``config.json_schema``); the reply is the call's
        arguments (the server wraps it as the tool call)."""
        response_format = body.get("response_format") or {}
        fmt = response_format.get("type")
        schema = response_format.get("json_schema") if fmt == "json_schema" else None
        tool = forced_tool(body)
        if tool is not None:
            schema = {"name": tool[0], "schema": tool[1]}
        config = GenerationConfig(
            temperature=body.get("temperature", 1.0),
            max_tokens=body.get("max_tokens") or body.get("max_completion_tokens"),
            json_mode=fmt in ("json_object", "json_schema") or tool is not None,
            json_schema=json.dumps(schema, sort_keys=True) if schema is not None else None,
            seed=body.get("seed"),
            top_p=body.get("top_p"),
        )
        req = self._record([_from_openai(m) for m in body.get("messages") or []], config, "http")
        reply = self._reply_for(req)
        if reply.delay_s + self.latency_s <= 0:
            return reply.text

        async def later() -> str:
            await asyncio.sleep(reply.delay_s + self.latency_s)
            return reply.text

        return later()

    # ----- the script ---------------------------------------------------------------------------
    def _record(self, messages: list[Message], config: GenerationConfig, stage: str) -> ScriptedRequest:
        with self._lock:
            req = ScriptedRequest(len(self.requests), messages, config, stage, time.time())
            self.requests.append(req)
        return req

    def _reply_for(self, req: ScriptedRequest) -> Reply:
        try:
            reply = _resolve(self._lookup(req), req)
        except BaseException as exc:
            req.error = exc
            raise
        req.reply = reply.text
        return reply

    def _lookup(self, req: ScriptedRequest) -> ReplyLike:
        for rule in self.rules:
            got = rule.pick(req, self._lock)
            if got is not None:
                return got
        with self._lock:
            found = self._from_table(req)
        if found is not None:
            return found
        if self.default is not None:
            return self.default
        if self.protocol_replies:
            schema = json.loads(req.config.json_schema) if req.config.json_schema else None
            structured = structured_reply(req.text, schema)
            if structured is not None:
                return structured
            if req.config.json_mode:
                return json_object_reply(mock_answer(req.user_text))
        raise ScriptExhausted(
            f"{self.spec}: no rule, table entry or default for request #{req.index} "
            f"(stage={req.stage!r}, question={req.question!r}, user text {req.user_text[:80]!r})"
        )

    def _from_table(self, req: ScriptedRequest) -> ReplyLike | None:
        if self.table is None:
            return None
        if isinstance(self.table, Mapping):
            k = self.key(req)
            if k not in self.table:
                return None
            value = self.table[k]
            if isinstance(value, (str, Reply, BaseException)) or not isinstance(value, Sequence):
                return value
            i = min(self._served[k], len(value) - 1)
            self._served[k] += 1
            return value[i]
        if self._next_row >= len(self.table):
            return None
        self._next_row += 1
        return self.table[self._next_row - 1]

    def _count(self, req: ScriptedRequest, reply: Reply, delay: float) -> Usage:
        if reply.usage is not None:
            return reply.usage
        if isinstance(self.usage, Usage):
            return self.usage.model_copy()
        if self.usage is not None:
            return self.usage(req, reply.text)
        prompt = sum(self.count_tokens(content_text(m.content)) for m in req.messages)
        prompt += IMAGE_PART_TOKENS * len(req.images)
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=self.count_tokens(reply.text),
            calls=1,
            cost_usd=self.cost_per_call,
            latency_s=delay,
        )

    def __repr__(self) -> str:
        return f"ScriptedChatModel({self.spec!r}, {len(self.requests)} requests)"


@dataclass
class _FunctionRule:
    """A callable rule: its result is the reply, None meaning no match."""

    fn: Callable[[ScriptedRequest], Any]

    def pick(self, req: ScriptedRequest, lock: threading.Lock) -> ReplyLike | None:
        got: ReplyLike | None = self.fn(req)
        return got


def _as_rule(rule: RuleLike) -> When | _FunctionRule:
    if isinstance(rule, When):
        return rule
    if isinstance(rule, tuple):
        if len(rule) != 2 or not callable(rule[0]):
            raise TypeError(f"a rule pair is (predicate, reply), got {rule!r}")
        return When(rule[1], match=rule[0])
    if callable(rule):
        return _FunctionRule(rule)
    raise TypeError(f"a rule is a When, a (predicate, reply) pair or a callable, got {type(rule).__name__}")


def _resolve(reply: ReplyLike, req: ScriptedRequest) -> Reply:
    if callable(reply) and not isinstance(reply, type):
        reply = reply(req)
    if isinstance(reply, type) and issubclass(reply, BaseException):
        raise reply(f"scripted {reply.__name__} for request #{req.index}")
    if isinstance(reply, BaseException):
        raise reply.with_traceback(None)  # one instance served many times: no growing traceback
    if isinstance(reply, str):
        return Reply(reply)
    if isinstance(reply, Reply):
        return reply
    raise TypeError(
        f"a scripted reply is a str, Reply or exception, got {type(reply).__name__} for request #{req.index}"
    )


def _from_openai(message: dict[str, Any]) -> Message:
    content = message.get("content")
    role = message.get("role", "user")
    if content is None or isinstance(content, str):
        return Message(role=role, content=content or "")
    parts: list[TextPart | ImagePart] = []
    for p in content:
        if p.get("type") == "text":
            parts.append(TextPart(text=p.get("text", "")))
        elif p.get("type") == "image_url":
            url = (p.get("image_url") or {}).get("url", "")
            parts.append(ImagePart(name=url[:40]))
    return Message(role=role, content=parts)
