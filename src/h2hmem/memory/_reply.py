"""Reading a JSON answer reply (``{"reasoning_process": …, "system_answer": …}``; Naive RAG, preset ``paper``).

The official reader (``baselines/Naive-RAG/Naive_RAG.py`` @ 919db825, step 6 of
``evaluate_single_question``) takes the first ```` ```json {…} ``` ```` block, else the shortest
``{…}`` span, parses it and scores ``system_answer``; when that fails the whole reply is the
answer. We read the same way first, so every reply the script could read gives the same answer;
where it failed (a ``}`` inside the reasoning, a JSON array that crashed the script) we try every
``{`` as the start of a JSON object before falling back to the whole reply. Nothing is dropped:
the result always has an answer, and ``how`` says which way it was read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

_FENCED = re.compile(r"```json\s*(\{.*?\})\s*```", re.DOTALL)
_FIRST_OBJECT = re.compile(r"(\{.*?\})", re.DOTALL)

ReadHow = Literal["json", "json-recovered", "json-without-answer", "unparsed"]


@dataclass(frozen=True)
class JsonReply:
    """One read reply."""

    answer: str
    """``system_answer`` (as a string), or the whole reply when no object with that field was found."""
    reasoning: str | None
    """``reasoning_process`` when present."""
    how: ReadHow
    """``json`` (read as the official script reads it), ``json-recovered`` (an object the script could
    not read), ``json-without-answer`` (an object without ``system_answer``: the whole reply is the
    answer, as officially) or ``unparsed`` (no JSON object: the whole reply is the answer)."""


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_json_reply(reply: str) -> JsonReply:
    """Read ``reply`` (the model's text, stripped) as a JSON answer; see the module docstring.

    Examples: ``'{"reasoning_process": "r", "system_answer": "Almond"}'`` → answer ``"Almond"``,
    how ``json``; ``'Almond'`` → answer ``"Almond"``, how ``unparsed``.
    """
    text = reply.strip()
    m = _FENCED.search(text) or _FIRST_OBJECT.search(text)
    candidate = m.group(1) if m else text
    try:
        parsed = json.loads(candidate)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        reasoning = parsed.get("reasoning_process")
        if "system_answer" not in parsed:
            return JsonReply(text, _opt(reasoning), "json-without-answer")
        return JsonReply(_as_text(parsed["system_answer"]), _opt(reasoning), "json")
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "system_answer" in obj:
            return JsonReply(_as_text(obj["system_answer"]), _opt(obj.get("reasoning_process")), "json-recovered")
    return JsonReply(text, None, "unparsed")


def _opt(value: Any) -> str | None:
    return None if value is None else _as_text(value)
