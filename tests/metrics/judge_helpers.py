"""A scripted judge (a ScriptedChatModel, in process or behind MockOpenAIServer): replies depend on the
question texts of the request's items."""

from __future__ import annotations

import json
from typing import Any

from h2hmem.records import Prediction
from h2hmem.testing import ScriptedChatModel, ScriptedRequest


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
    """A scripted judge for both formats: ``harmonized`` (rubric as system message, ``[q1]`` items,
    a JSON object reply) and ``paper`` (the official prompt in one user message, ``Question ID:``
    blocks, a JSON array reply). Call it as a MockOpenAIServer ``responder`` (``judge(body)``) or
    pass :attr:`model` as an in-process judge; either way :attr:`model` records the requests.

    ``batch[question]``: what a batch reply says about that item: a score, ``"omit"``, ``"dup"``
    or ``"broken"`` (the whole reply becomes broken JSON). ``single[question]``: the score a
    one-item request gets (a list: one value per successive single request). Unlisted: 1.
    """

    def __init__(self, batch: dict[str, Any] | None = None, single: dict[str, Any] | None = None, spec="fake:judge"):
        self.batch = batch or {}
        self.single = {k: list(v) if isinstance(v, list) else [v] for k, v in (single or {}).items()}
        self.model = ScriptedChatModel([self._reply], spec=spec)

    def __call__(self, body: dict[str, Any]) -> Any:
        return self.model.responder(body)

    @property
    def prompts(self) -> list[str]:
        return [r.text for r in self.model.requests]

    @property
    def kinds(self) -> list[str]:
        """Per request: ``batch``, ``single`` (one item) or ``followup`` (a corrective re-ask)."""
        return [_kind(r) for r in self.model.requests]

    def _reply(self, req: ScriptedRequest) -> str:
        official = req.messages[0].role == "user"
        items = _items(req)
        wrap = (lambda out: json.dumps(out)) if official else (lambda out: json.dumps({"judgments": out}))
        if len(items) == 1:
            ((lid, q),) = items
            queue = self.single.get(q, [1])
            score = queue.pop(0) if len(queue) > 1 else queue[0]
            if score == "broken":
                return '{"judgments": [{"question_id": "q1", "score": '
            return wrap([{"question_id": lid, "score": score, "reasoning": f"single {q}"}])
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


def _items(req: ScriptedRequest) -> list[tuple[str, str]]:
    """(local id, question) per item of the request's first user message, either format."""
    items = req.items(user_message=0)
    if req.messages[0].role == "user":  # the official prompt: "Question ID:" blocks
        return [(i["Question ID"], i["Question"]) for i in items if "Question ID" in i]
    return [(i["id"], i["Question"]) for i in items if "id" in i]


def _kind(req: ScriptedRequest) -> str:
    if len(_items(req)) != 1:
        return "batch"
    return "followup" if len(req.messages) > 2 else "single"
