"""The official judge request and reply parsing (``judge_format=user_array``, the ``paper`` preset).

Request (varib1/H2HMEM ``evaluate_metrics/LLM-as-judge/LLM_as_judge.py`` @ b6070899,
``_build_batch_prompt`` and ``evaluate_batch``): one user message, the lines below joined by
``"\\n"``, sent with ``temperature=0`` and nothing else (no ``max_tokens``, no JSON mode)::

    <DEFAULT_BATCH_PROMPT, ending in a newline>        (official_judge_prompt.txt)
    <empty>Dialogue: dialogue5
    Session: session3                                  (A-Mem, NGM: unknown; see below)
    Memory System: unknown                             (official: the method's class name)
    VLM Model: unknown                                 (official: the answer model)
    <empty>
    --- Question 1 ---
    Question ID: q0
    Question: <question text, as written>
    Ground Truth: <gold answer, stripped>
    Assistant Answer: <system answer, stripped>
    <empty>
    ...
    Please output the results in JSON array format as specified above.

Never reproduced: the official header named the method and the answer model (the judge must not
know what it grades; we write ``unknown``, as the official script itself did for result files
without metadata), and its question ids carried the method's name (``FullText_0``; ours are the
method-neutral ``q{index}``, the question's position in its ``questions.json``).

The ``Session:`` line comes from the results file's ``metadata.session_dir_name``; the official
A-Mem and NGM result files have no such field, so their published scores were judged under
``Session: unknown``: :func:`official_session_header` reproduces it (option ``session_header``).

Reply: the text from the first ``[`` to the last ``]`` is read as a JSON array of
``{question_id, score, reasoning}``; a non-string ``question_id`` is compared as text; a later item
for the same id replaces an earlier one; a score is any number (or numeric string), snapped
to the nearest of the five levels, ties going to the lower level (``score_levels=snap``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from .. import defaults
from .._protocol_text import load_protocol_text
from ..llm import GenerationConfig, Message
from ..records import Prediction

OFFICIAL_PROMPT_FILE = "official_judge_prompt.txt"
HIDDEN = "unknown"
"""Written where the official header named the method and the answer model."""
LEVELS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
NO_SESSION_FOLDER: frozenset[str] = frozenset({"a-mem", "ngm"})
"""Methods (``Prediction.method``) whose official result files carried no session folder
(``A_MEM.py``, ``NGM.py``: no ``metadata.session_dir_name``), so the official judge header read
``Session: unknown`` for them."""

OFFICIAL_CONFIG = GenerationConfig(temperature=defaults.JUDGE_TEMPERATURE, max_tokens=None)
"""The official judge call: ``temperature=0`` (the script's default), no other parameter."""

_ARRAY = re.compile(r"\[.*\]", re.DOTALL)


def official_rubric() -> str:
    """``DEFAULT_BATCH_PROMPT`` of the official judge, verbatim (ends with a newline)."""
    return load_protocol_text(__package__, OFFICIAL_PROMPT_FILE).text


def official_local_id(p: Prediction) -> str:
    """The id a question has in the official prompt: the last part of its question id (``q0``)."""
    return p.question_id.rsplit("/", 1)[-1]


def official_session_header(p: Prediction, session_header: str = "official") -> str:
    """The value of the prompt's ``Session:`` line: ``unknown`` for a method of
    :data:`NO_SESSION_FOLDER` under ``session_header="official"``, else the session folder."""
    return HIDDEN if session_header == "official" and p.method in NO_SESSION_FOLDER else p.session


def official_judge_prompt(items: Sequence[tuple[str, Prediction]], session_header: str = "official") -> str:
    """The official batch prompt for ``(local id, prediction)`` pairs of one session
    (``session_header``: see :func:`official_session_header`).

    Raises:
        ValueError: no items, or items from more than one (split, dialogue, session).
    """
    if not items:
        raise ValueError("a judge batch needs at least one question")
    first = items[0][1]
    if any((p.split, p.dialogue, p.session) != (first.split, first.dialogue, first.session) for _, p in items):
        raise ValueError("an official judge batch holds the questions of one session only")
    lines = [
        official_rubric(),
        f"\nDialogue: {first.dialogue}",
        f"Session: {official_session_header(first, session_header)}",
        f"Memory System: {HIDDEN}",
        f"VLM Model: {HIDDEN}",
        "",
    ]
    for i, (lid, p) in enumerate(items, 1):
        lines += [
            f"--- Question {i} ---",
            f"Question ID: {lid}",
            f"Question: {p.question}",
            f"Ground Truth: {p.gold.strip()}",
            f"Assistant Answer: {(p.answer or '').strip()}",
            "",
        ]
    lines.append("Please output the results in JSON array format as specified above.")
    return "\n".join(lines)


def official_judge_messages(items: Sequence[tuple[str, Prediction]], session_header: str = "official") -> list[Message]:
    """The official request's messages: one user message holding :func:`official_judge_prompt`."""
    return [Message(role="user", content=official_judge_prompt(items, session_header))]


def official_followup(local_id: str, problem: str) -> str:
    """Our corrective re-ask after an unusable one-question reply (the official script had none)."""
    return (
        f"Your reply could not be used: {problem}. Reply again with the JSON array holding one result for "
        f"question {local_id}, with a score of 0, 0.25, 0.5, 0.75 or 1."
    )


def snap_score(value: Any) -> float:
    """The level nearest to ``float(value)`` (ties to the lower level; NaN and infinities give 0,
    as ``min`` over the official distance does).

    Raises:
        ValueError: ``value`` is not a number or numeric string (``None``, text, a list…).
    """
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"score {value!r} is not a number") from None
    if math.isnan(x) or math.isinf(x):
        return LEVELS[0]
    return min(LEVELS, key=lambda level: abs(level - x))


def parse_official_reply(
    text: str, local_ids: Sequence[str], *, snap: bool = True, strict_score: Any = None
) -> dict[str, tuple[float, str] | str]:
    """Parse an official-format reply: local id → ``(score, reasoning)`` or a problem description.

    Args:
        text: the reply.
        local_ids: the ids asked about; ids the judge invented are ignored.
        snap: ``score_levels=snap``; with ``False`` ``strict_score`` decides.
        strict_score: ``value -> level`` raising ``ValueError`` off the five levels (``strict``).
    """
    body = text.strip()
    found = _ARRAY.search(body)
    if found:
        body = found.group()
    try:
        data = json.loads(body)
    except ValueError:
        return {lid: "the reply is not valid JSON" for lid in local_ids}
    if not isinstance(data, list):
        return {lid: "the reply is not a JSON array" for lid in local_ids}
    score_of = snap_score if snap else strict_score
    wanted = set(local_ids)
    out: dict[str, tuple[float, str] | str] = {}
    for item in data:
        if not isinstance(item, dict) or not item.get("question_id"):
            continue
        lid = str(item["question_id"]).strip()
        if lid not in wanted:
            continue
        try:
            score = score_of(item.get("score"))
        except ValueError as e:
            if not isinstance(out.get(lid), tuple):  # an earlier valid item stands (official: skipped)
                out[lid] = str(e)
            continue
        reasoning = item.get("reasoning")
        out[lid] = (score, reasoning.strip() if isinstance(reasoning, str) else "")
    return {lid: out.get(lid, f"no judgment for {lid} in the reply") for lid in local_ids}
