"""LLM-as-judge: the five-level rubric, session batches, parsing, snapping and single re-asks.

Two request formats (:class:`~h2hmem.metrics.JudgeOptions`): ``paper`` sends the official
judge's own prompt and reads its JSON array reply, snapping scores to the nearest level
(:mod:`._judge_official`); ``harmonized`` sends our rubric below as a system message, reads a JSON
object and holds scores to the five levels. Whatever the format, nothing is dropped.

Official setting (``docs/metric-definitions.md`` §2): ``gpt-4o-mini`` at temperature 0, one call per
(method, session) holding all that session's questions, reply = a JSON list of
``{question_id, score, reasoning}``. Our additions (both presets): every question id must come
back (``system_object``: exactly once); a missing or invalid item (no usable score, broken JSON)
is re-asked once on its own; an item still invalid is an error for that item (recorded, never
dropped); coverage (judged / total) is always reported. Under ``score_levels=strict``
(``harmonized``) a score off the five levels is invalid; under ``snap`` (``paper``, official) it
goes to the nearest level. The judge sees only the question, the gold answer and the system
answer — never the method's name, never images.

All calls go through :class:`~h2hmem.llm.ChatModel` (``stage="judge"``), which owns the request
cache, retries with backoff, concurrency and usage.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import defaults
from ..llm import ChatModel, GenerationConfig, Message, ModelError, tag_calls
from ..records import JudgeScore, Prediction, QuestionKey, prediction_hash
from ._judge_official import (
    OFFICIAL_CONFIG,
    official_followup,
    official_judge_messages,
    official_local_id,
    parse_official_reply,
    snap_score,
)
from ._judge_options import JudgeMode, JudgeOptions

JUDGE_LEVELS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The five scores of the rubric (spec §2)."""
DEFAULT_JUDGE_SPEC = defaults.JUDGE_MODEL
"""The official judge (spec §2)."""
NOT_COMPARABLE = "not comparable with published numbers"
"""Label carried by every output of a ``local:`` judge."""

_TOKENS_BASE = 200
_TOKENS_PER_ITEM = 200
"""Reply budget: room for one or two sentences of reasoning per item (our choice)."""

RUBRIC = """\
You grade answers written by an AI assistant that has followed a long conversation between people.
For each item you get the question, the reference answer (correct by definition) and the
assistant's answer. Compare the assistant's answer with the reference answer only, and give
exactly one of these five scores:

1    - correct: accurate, complete and stated with confidence; nothing made up.
0.75 - correct and confident, but a minor detail is missing or the answer is padded with filler.
0.5  - right in substance but incomplete, hedged or too general; or the right yes/no with faulty
       reasoning.
0.25 - on the topic but misses the key entity or value, buries it among wrong details, or is too
       vague to be useful (for example "a dog" when the reference says "a golden retriever").
0    - wrong: contradicts the reference, gives the opposite yes/no, makes up facts, or gives no
       answer.

Reply with one JSON object and nothing else:
{"judgments": [{"question_id": "<item id>", "score": <0, 0.25, 0.5, 0.75 or 1>, "reasoning": "<one or two sentences>"}]}
with exactly one judgment for every item id."""


JudgeRecord = JudgeScore
"""One question's judgment, one line of ``scores/judge.jsonl`` (:class:`h2hmem.records.JudgeScore`)."""


def comparability_label(spec: str) -> str | None:
    """:data:`NOT_COMPARABLE` when the judge model spec starts with ``local:``, else None."""
    return NOT_COMPARABLE if spec.startswith("local:") else None


def input_hash(p: Prediction) -> str:
    """SHA-256 (hex) of the judge's inputs for ``p``: question, gold answer, system answer."""
    data = json.dumps([p.question, p.gold, p.answer], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _item_text(local_id: str, p: Prediction) -> str:
    return (
        f"[{local_id}]\nQuestion: {p.question.strip()}\nReference answer: {p.gold.strip()}\n"
        f"Assistant's answer: {(p.answer or '').strip()}"
    )


def judge_messages(items: Sequence[tuple[str, Prediction]]) -> list[Message]:
    """The judge prompt for ``(local_id, prediction)`` pairs (one or many). Only the question,
    the gold answer and the system answer are shown."""
    n = len(items)
    head = "Grade the following item." if n == 1 else f"Grade the following {n} items."
    body = "\n\n".join(_item_text(lid, p) for lid, p in items)
    return [Message(role="system", content=RUBRIC), Message(role="user", content=f"{head}\n\n{body}")]


def _config(n_items: int) -> GenerationConfig:
    return GenerationConfig(
        temperature=defaults.JUDGE_TEMPERATURE, max_tokens=_TOKENS_BASE + _TOKENS_PER_ITEM * n_items, json_mode=True
    )


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _load_json(text: str) -> Any:
    text = _FENCE.sub("", text.strip())
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for open_, close in (("{", "}"), ("[", "]")):
        i, j = text.find(open_), text.rfind(close)
        if 0 <= i < j:
            try:
                return json.loads(text[i : j + 1])
            except json.JSONDecodeError:
                continue
    raise ValueError("the reply is not valid JSON")


def _entries(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        if isinstance(data.get("judgments"), list):
            return data["judgments"]
        if "question_id" in data:
            return [data]
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    raise ValueError("the reply holds no list of judgments")


def _score(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"score {value!r} is not a number")
    try:
        x = float(value)
    except ValueError:
        raise ValueError(f"score {value!r} is not a number") from None
    for level in JUDGE_LEVELS:
        if math.isclose(x, level, abs_tol=1e-9):
            return level
    raise ValueError(f"score {value!r} is not one of 0, 0.25, 0.5, 0.75, 1")


def parse_judgments(text: str, local_ids: Sequence[str], *, snap: bool = False) -> dict[str, tuple[float, str] | str]:
    """Parse a ``system_object`` judge reply: local id → ``(score, reasoning)`` or a problem description.

    Accepts ``{"judgments": [...]}``, a bare list, or a single judgment object (code fences
    allowed). An id that is missing, given twice, or whose score is not one of the five levels
    (with ``snap``: not a number; other numbers go to the nearest level) gets a problem string;
    ids the judge invented are ignored.
    """
    try:
        entries = _entries(_load_json(text))
    except ValueError as e:
        return {lid: str(e) for lid in local_ids}
    wanted = set(local_ids)
    seen: dict[str, list[Any]] = {}
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get("question_id", "")).strip() in wanted:
            seen.setdefault(str(entry["question_id"]).strip(), []).append(entry)
    out: dict[str, tuple[float, str] | str] = {}
    for lid in local_ids:
        got = seen.get(lid, [])
        if not got:
            out[lid] = f"no judgment for {lid} in the reply"
        elif len(got) > 1:
            out[lid] = f"{len(got)} judgments for {lid} in the reply"
        else:
            try:
                score = (snap_score if snap else _score)(got[0].get("score"))
                out[lid] = (score, str(got[0].get("reasoning") or ""))
            except ValueError as e:
                out[lid] = str(e)
    return out


class _Judge:
    def __init__(
        self,
        model: ChatModel,
        options: JudgeOptions,
        on_record: Callable[[JudgeRecord], None] | None,
        attempts: Mapping[str, int] | None = None,
    ):
        self.model, self.options, self.on_record = model, options, on_record
        self.attempts = dict(attempts or {})
        self.mode = options.batching
        self.official = options.judge_format == "user_array"
        self.snap = options.score_levels == "snap"
        self.label = comparability_label(model.spec)
        self.records: dict[str, JudgeRecord] = {}

    # -- the request format: official (user_array) or ours (system_object) ---------------------
    def _messages(self, items: Sequence[tuple[str, Prediction]]) -> list[Message]:
        if self.official:
            return official_judge_messages(items, self.options.session_header)
        return judge_messages(items)

    def _config(self, n_items: int, attempt: int = 0) -> GenerationConfig:
        config = OFFICIAL_CONFIG if self.official else _config(n_items)
        return config.model_copy(update={"attempt": attempt}) if attempt else config

    def _attempt(self, preds: Sequence[Prediction]) -> int:
        return max((self.attempts.get(p.question_id, 0) for p in preds), default=0)

    def _parse(self, text: str, local_ids: Sequence[str]) -> dict[str, tuple[float, str] | str]:
        if self.official:
            return parse_official_reply(text, local_ids, snap=self.snap, strict_score=_score)
        return parse_judgments(text, local_ids, snap=self.snap)

    def _local_ids(self, preds: Sequence[Prediction]) -> list[str]:
        if self.official:
            ids = [official_local_id(p) for p in preds]
            if len(set(ids)) == len(ids):
                return ids  # unique by construction within a session; positions otherwise
        return [f"q{i}" for i in range(1, len(preds) + 1)]

    def _followup(self, local_id: str, problem: str) -> str:
        if self.official:
            return official_followup(local_id, problem)
        return (
            f"Your reply could not be used: {problem}. Reply again with the JSON object holding one judgment "
            f"for item {local_id}, with a score of 0, 0.25, 0.5, 0.75 or 1."
        )

    def _emit(self, p: Prediction, **fields: Any) -> None:
        rec = JudgeRecord(
            **p.model_dump(include=set(QuestionKey.model_fields)),
            judge_model=self.model.spec,
            mode=self.mode,
            preset=self.options.preset,
            options=self.options.options(),
            label=self.label,
            input_hash=input_hash(p),
            prediction_hash=prediction_hash(p),
            attempt=self.attempts.get(p.question_id, 0),
            **fields,
        )
        self.records[p.question_id] = rec
        if self.on_record is not None:
            self.on_record(rec)

    async def _ask(
        self, messages: list[Message], n_items: int, attempt: int = 0
    ) -> tuple[str | None, bool, str | None]:
        """(reply text, cached, error) of one judge call."""
        try:
            res = await self.model.chat(messages, self._config(n_items, attempt), stage="judge")
        except ModelError as e:
            return None, False, f"judge call failed: {e}"
        return res.text, res.cached, None

    async def single(self, p: Prediction, *, calls: int = 0, cached: bool = True, reasked: bool = False) -> None:
        """Judge ``p`` alone; in question mode a bad reply gets one corrective re-ask."""
        with tag_calls(question_ids=[p.question_id], dialogue=f"{p.split}/{p.dialogue}", session=p.session):
            await self._single(p, calls=calls, cached=cached, reasked=reasked)

    async def _single(self, p: Prediction, *, calls: int, cached: bool, reasked: bool) -> None:
        [lid] = self._local_ids([p])
        messages = self._messages([(lid, p)])
        attempt = self._attempt([p])
        text, hit, err = await self._ask(messages, 1, attempt)
        calls, cached = calls + 1, cached and hit
        result = self._parse(text, [lid])[lid] if text is not None else err
        if isinstance(result, str) and not reasked and text is not None:
            # Same prompt again would return the same (cached) reply: say what was wrong.
            follow = [
                *messages,
                Message(role="assistant", content=text),
                Message(role="user", content=self._followup(lid, result)),
            ]
            text, hit, err = await self._ask(follow, 1, attempt)
            calls, cached, reasked = calls + 1, cached and hit, True
            result = self._parse(text, [lid])[lid] if text is not None else err
        if result is None:  # _ask returns a text or an error message
            raise RuntimeError(f"judge call for {p.question_id} returned neither a reply nor an error")
        if isinstance(result, str):
            self._emit(p, score=None, error=result, reasked=reasked, calls=calls, cached=cached)
        else:
            self._emit(p, score=result[0], reasoning=result[1], reasked=reasked, calls=calls, cached=cached)

    async def batch(self, preds: Sequence[Prediction]) -> None:
        """Judge one session's questions in one call; re-ask bad items singly (once)."""
        if len(preds) == 1:
            await self.single(preds[0])
            return
        items = list(zip(self._local_ids(preds), preds))
        with tag_calls(
            question_ids=[p.question_id for p in preds],
            dialogue=f"{preds[0].split}/{preds[0].dialogue}",
            session=preds[0].session,
        ):
            text, hit, err = await self._ask(self._messages(items), len(items), self._attempt(preds))
        results = self._parse(text, [lid for lid, _ in items]) if text is not None else {}
        retry = []
        for lid, p in items:
            r = results.get(lid)
            if isinstance(r, tuple):
                self._emit(p, score=r[0], reasoning=r[1], calls=1, cached=hit)
            else:
                retry.append(p)
        # reasked=True: a single prompt differs from the batch prompt, so it is a real new
        # question; its failure is final (one re-ask per item).
        await asyncio.gather(*(self.single(p, calls=1, cached=hit, reasked=True) for p in retry))


async def judge_predictions(
    predictions: Sequence[Prediction],
    model: ChatModel,
    *,
    mode: JudgeMode | None = None,
    on_record: Callable[[JudgeRecord], None] | None = None,
    options: JudgeOptions | None = None,
    attempts: Mapping[str, int] | None = None,
) -> list[JudgeRecord]:
    """Judge every prediction; one :class:`JudgeRecord` per prediction, in input order.

    Args:
        predictions: the records to judge (a failed one — ``error`` set — gets score 0 and
            ``failed=True`` without a call).
        model: the judge (default in the CLI: :data:`DEFAULT_JUDGE_SPEC`, the official judge);
            calls use temperature 0, ``stage="judge"`` (``system_object``: JSON mode too).
        mode: the ``batching`` option, overriding ``options``: ``"session"`` (official: one call per
            (dialogue, session), local ids mapped back) or ``"question"`` (one call per question).
        on_record: called with each record as soon as it exists (to persist it).
        options: the protocol (default: the ``paper`` preset, :class:`JudgeOptions`).
        attempts: question id → judging round (:attr:`JudgeRecord.attempt`; default 0): a question an
            earlier evaluation left unjudged is asked with ``GenerationConfig.attempt`` set to it, so
            the request cache does not serve the unusable reply again (a batch takes its items' largest).

    A batch reply that leaves items unjudged (missing, unparseable, off-level under ``strict``)
    gets those items re-asked one by one; a one-question reply that is still unusable gets one
    corrective follow-up; an item still unjudged is recorded with its ``error``, never dropped.

    Records with ``score=None`` carry ``error``; coverage = judged / total. Model errors are
    recorded per item (after the model's own retries); other exceptions propagate.

    Raises:
        ValueError: unknown ``mode``.
    """
    options = options or JudgeOptions()
    if mode is not None:
        if mode not in ("session", "question"):
            raise ValueError(f"judge mode must be 'session' or 'question', got {mode!r}")
        options = options.model_copy(update={"batching": mode})
    judge = _Judge(model, options, on_record, attempts)
    for p in predictions:
        if p.failed:
            judge._emit(p, score=0.0, failed=True, reasoning="no system answer (the method failed)")
    if options.batching == "session":
        await asyncio.gather(*(judge.batch(ps) for ps in judge_batches(predictions, options.batching)))
    else:
        await asyncio.gather(*(judge.single(ps[0]) for ps in judge_batches(predictions, options.batching)))
    return [judge.records[p.question_id] for p in predictions]


def judge_batches(predictions: Sequence[Prediction], mode: JudgeMode) -> list[list[Prediction]]:
    """The judge requests of ``predictions``: one list per call — a (dialogue, session)'s answered
    questions in ``"session"`` mode, one question each in ``"question"`` mode; failed answers are
    not sent (they score 0)."""
    groups: dict[tuple[str, str, str], list[Prediction]] = {}
    for p in predictions:
        if not p.failed:
            groups.setdefault((p.split, p.dialogue, p.session), []).append(p)
    if mode == "session":
        return list(groups.values())
    return [[p] for ps in groups.values() for p in ps]
