"""A scripted judge for MockOpenAIServer: replies depend on the question texts in the prompt."""

from __future__ import annotations

import json
import re
from typing import Any

from h2hmem.run import Prediction

ITEM = re.compile(r"\[(q\d+)\]\nQuestion: (.*)\n")
OFFICIAL_ITEM = re.compile(r"Question ID: (.+)\nQuestion: (.*)\n")


def pred(
    qid: str,
    question: str,
    answer: str | None = "an answer",
    *,
    error: str | None = None,
    task_type: str = "UPR",
    method: str = "SecretMethodName",
) -> Prediction:
    split, dialogue, session, _ = qid.split("/")
    return Prediction(
        question_id=qid,
        split=split,
        dialogue=dialogue,
        session=session,
        task_type=task_type,
        main_category="Memory Recall",
        difficulty="easy",
        question=question,
        gold="gold " + question,
        answer=answer,
        error=error,
        method=method,
    )


class ScriptedJudge:
    """``responder`` for MockOpenAIServer, for both judge formats: ``harmonized`` (rubric as system
    message, ``[q1]`` items, a JSON object reply) and ``paper`` (the official prompt in one user
    message, ``Question ID:`` blocks, a JSON array reply).

    ``batch[question]``: what a batch reply says about that item: a score, ``"omit"``, ``"dup"``
    or ``"broken"`` (the whole reply becomes broken JSON). ``single[question]``: the score a
    one-item request gets (a list: one value per successive single request). Unlisted: 1.
    """

    def __init__(self, batch: dict[str, Any] | None = None, single: dict[str, Any] | None = None):
        self.batch = batch or {}
        self.single = {k: list(v) if isinstance(v, list) else [v] for k, v in (single or {}).items()}
        self.prompts: list[str] = []
        self.kinds: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        texts = [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]) for m in body["messages"]]
        self.prompts.append("\n".join(texts))
        official = body["messages"][0]["role"] == "user"
        items = OFFICIAL_ITEM.findall(texts[0]) if official else ITEM.findall(texts[1])
        wrap = (lambda out: json.dumps(out)) if official else (lambda out: json.dumps({"judgments": out}))
        if len(items) == 1:
            self.kinds.append("followup" if len(texts) > 2 else "single")
            ((lid, q),) = items
            queue = self.single.get(q, [1])
            score = queue.pop(0) if len(queue) > 1 else queue[0]
            if score == "broken":
                return '{"judgments": [{"question_id": "q1", "score": '
            return wrap([{"question_id": lid, "score": score, "reasoning": f"single {q}"}])
        self.kinds.append("batch")
        out = []
        for lid, q in items:
            b = self.batch.get(q, 1)
            if b == "broken":
                return '{"judgments": [{"question_id": "q1", "score": 1, "reasoning": "cut off'
            if b == "omit":
                continue
            out.append({"question_id": lid, "score": 1 if b == "dup" else b, "reasoning": f"batch {q}"})
            if b == "dup":
                out.append({"question_id": lid, "score": 0, "reasoning": "again"})
        return wrap(out)
