"""Replies that follow each protocol h2hmem and memory products speak, for requests no script answers.

:func:`structured_reply` is shared by :class:`~h2hmem.testing.ScriptedChatModel` and the mock server
(``h2hmem testing mock-server``), so both act as a judge, a structured-output model and a tool
caller without a script:

- **judge prompts** of both presets get valid judgments of every item: ``paper`` (the official
  judge prompt: items ``--- Question N ---`` / ``Question ID:`` / ``Question:`` / ``Ground Truth:``
  / ``Assistant Answer:``) a JSON array ``[{"question_id", "score", "reasoning"}]``;
  ``harmonized`` (items ``[id]`` / ``Question:`` / ``Reference answer:`` / ``Assistant's answer:``)
  the object ``{"judgments": [...]}``. The score is :func:`mock_judge_score`;
- **a JSON schema** (``response_format.type == "json_schema"``, or a forced tool's parameters):
  :func:`~h2hmem.testing.schema_instance` of the schema, as JSON text;
- **a JSON object** (``json_object``): ``{"answer": <text>}``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ._schema_instance import schema_instance

JUDGE_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)

_PAPER_ITEM = re.compile(
    r"^Question ID: (?P<id>[^\n]*)\nQuestion: (?P<q>.*?)\nGround Truth: (?P<gold>.*?)\n"
    r"Assistant Answer: (?P<answer>.*?)(?=\n\n--- Question |\n\nPlease output|\n*\Z)",
    re.DOTALL | re.MULTILINE,
)
_HARMONIZED_ITEM = re.compile(
    r"^\[(?P<id>[^\]\s]+)\]\nQuestion: (?P<q>.*?)\nReference answer: (?P<gold>.*?)\n"
    r"Assistant's answer: (?P<answer>.*?)(?=\n\n\[[^\]\s]+\]\nQuestion: |\n*\Z)",
    re.DOTALL | re.MULTILINE,
)
_WORD = re.compile(r"\w+", re.UNICODE)


def mock_judge_score(gold: str, answer: str) -> float:
    """The mock judge's score: 1 when every word of ``gold`` is in ``answer`` (case and punctuation
    ignored), else the word-overlap F1 of the two, snapped to the nearest of the five levels
    (ties to the lower level). An empty answer scores 0."""
    g = _WORD.findall(gold.lower())
    a = _WORD.findall(answer.lower())
    if not a:
        return 0.0
    if g and set(g) <= set(a):
        return 1.0
    common = sum(min(g.count(w), a.count(w)) for w in set(g))
    if common == 0:
        return 0.0
    p, r = common / len(a), common / len(g)
    f1 = 2 * p * r / (p + r)
    return min(JUDGE_LEVELS, key=lambda level: (abs(level - f1), level))


def judge_reply(text: str) -> str | None:
    """Judgments for a judge prompt (the text of all the request's messages), or None when
    ``text`` is no judge prompt of either preset."""
    if "Ground Truth:" in text and "Assistant Answer:" in text:
        items = list(_PAPER_ITEM.finditer(text))
        if items:
            return json.dumps([_judgment(m) for m in _last_per_id(items)], ensure_ascii=False)
    if "Reference answer:" in text and "Assistant's answer:" in text:
        items = list(_HARMONIZED_ITEM.finditer(text))
        if items:
            return json.dumps({"judgments": [_judgment(m) for m in _last_per_id(items)]}, ensure_ascii=False)
    return None


def _last_per_id(items: list[re.Match[str]]) -> list[re.Match[str]]:
    by_id: dict[str, re.Match[str]] = {}
    for m in items:
        by_id[m["id"].strip()] = m
    return list(by_id.values())


def _judgment(m: re.Match[str]) -> dict[str, Any]:
    score = mock_judge_score(m["gold"], m["answer"])
    return {
        "question_id": m["id"].strip(),
        "score": score,
        "reasoning": f"mock judge: word overlap with the reference gives {score:g}",
    }


def structured_reply(text: str, json_schema: Any | None) -> str | None:
    """The reply to a request needing a structure no plain text satisfies: judgments for a judge
    prompt, else an instance of ``json_schema`` (the ``json_schema`` object of ``response_format``,
    ``{"name", "schema", "strict"}``, or a bare schema) as JSON text; None when neither applies."""
    judged = judge_reply(text)
    if judged is not None:
        return judged
    if json_schema is None:
        return None
    schema = json_schema.get("schema", json_schema) if isinstance(json_schema, dict) else json_schema
    return json.dumps(schema_instance(schema), ensure_ascii=False)


def json_object_reply(answer: str) -> str:
    """The reply to a ``json_object`` request: ``{"answer": answer}`` as JSON text."""
    return json.dumps({"answer": answer}, ensure_ascii=False)


def mock_answer(user_text: str) -> str:
    """The mock's plain answer: ``"mock-"`` + the first 16 hex digits of the SHA-256 of ``user_text``."""
    return "mock-" + hashlib.sha256(user_text.encode("utf-8")).hexdigest()[:16]


def forced_tool(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(name, parameters schema)`` of the function an OpenAI chat request forces the model to
    call, or None when it forces none. ``tool_choice`` ``{"type": "function", "function":
    {"name": N}}`` forces N; ``"required"`` forces a call of the first tool; ``"auto"``,
    ``"none"`` or no ``tool_choice`` force nothing.

    Raises:
        ValueError: ``tool_choice`` names a function that is not among ``tools``.
    """
    tools = [t.get("function") for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    functions: dict[str, dict[str, Any]] = {
        str(f["name"]): f.get("parameters") or {} for f in tools if isinstance(f, dict) and "name" in f
    }
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if not isinstance(name, str) or name not in functions:
            raise ValueError(f"tool_choice names function {name!r}, which is not among the request's tools")
        return name, functions[name]
    if choice == "required" and functions:
        name = next(iter(functions))
        return name, functions[name]
    return None
