"""Two hand-made runs over the real sample's questions, for the report tests.

- ``naive-rag`` ("oracle"): answers every question with its gold answer, except the first question
  (answered "It is not.", all stopwords → F1 0); evidence = the first gold session (session0
  questions report none); latency 0.5 s, usage 100 + 10 tokens, $0.001 per answer.
- ``rag <i>v2</i>`` ("blank"): answers "It is not." (F1 0) everywhere, the first question
  ``<script>alert(1)</script>``, every 7th question fails; reports no evidence.
"""

from __future__ import annotations

import json
from pathlib import Path

from h2hmem.data import load_dataset
from h2hmem.llm import Usage
from h2hmem.memory import Evidence
from h2hmem.records import Prediction
from h2hmem.testing import ScriptedChatModel

SCRIPT = "<script>alert(1)</script>"
BLANK = "It is not."
ORACLE_METHOD = "naive-rag"
BLANK_METHOD = "rag <i>v2</i>"
BUILD_USAGE = {
    "prompt_tokens": 3200,
    "completion_tokens": 640,
    "calls": 64,
    "cached_calls": 0,
    "cost_usd": 0.032,
    "latency_s": 16.0,
}


def questions(sample_root: Path):
    return sorted(load_dataset(sample_root).questions, key=lambda q: q.id)


def _pred(q, method: str, answer: str | None, **kw) -> Prediction:
    return Prediction(
        question_id=q.id,
        split=q.split,
        dialogue=q.dialogue,
        session=q.session,
        task_type=q.task_type.abbr,
        main_category=q.main_category.value,
        difficulty=q.difficulty,
        question=q.text,
        gold=q.gold,
        answer=answer,
        method=method,
        details={"answer_sessions": list(q.answer_sessions)},
        **kw,
    )


def write_run(
    d: Path, sample_root: Path, method: str, preds: list[Prediction], run_id: str, usage: dict | None = None
) -> Path:
    d.mkdir(parents=True)
    (d / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in preds))
    manifest = {
        "run_id": run_id,
        "method": method,
        "model": "openai:gpt-4.1-nano",
        "protocol": "full",
        "split": "all",
        "data_root": str(sample_root),
        "config": {"concurrency": 4},
        "started_at": "2026-11-30T07:00:00+00:00",
        "finished_at": "2026-11-30T07:05:00+00:00",
        "usage": usage or {},
        "counts": {"questions": len(preds)},
        "method_description": {"method": method, "top_k": 5},
    }
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


def make_runs(tmp: Path, sample_root: Path) -> tuple[Path, Path, list]:
    qs = questions(sample_root)
    oracle, blank = [], []
    for i, q in enumerate(qs):
        ev = [Evidence(session=q.answer_sessions[0], turn=0)] if q.answer_sessions and q.session != "session0" else []
        oracle.append(
            _pred(
                q,
                ORACLE_METHOD,
                BLANK if i == 0 else q.gold,
                evidence=ev,
                latency_s=0.5,
                usage=Usage(prompt_tokens=100, completion_tokens=10, calls=1, cost_usd=0.001),
            )
        )
        if i % 7 == 3:
            blank.append(_pred(q, BLANK_METHOD, None, error="RuntimeError: boom", latency_s=0.1))
        else:
            blank.append(
                _pred(
                    q,
                    BLANK_METHOD,
                    SCRIPT if i == 0 else BLANK,
                    latency_s=0.25,
                    usage=Usage(prompt_tokens=50, completion_tokens=5, calls=1, cost_usd=0.0005),
                )
            )
    a = write_run(
        tmp / "run_oracle", sample_root, ORACLE_METHOD, oracle, "oracle-1", usage={"memory_build": BUILD_USAGE}
    )
    b = write_run(tmp / "run_blank", sample_root, BLANK_METHOD, blank, "blank-1")
    return a, b, qs


def echo_chat() -> ScriptedChatModel:
    """A ChatModel stand-in for real runs: answers the question line back; 40 + 4 tokens, $0.0002 per call."""
    return ScriptedChatModel(
        [lambda req: req.question or "?"],
        spec="fake:echo",
        usage=Usage(prompt_tokens=40, completion_tokens=4, calls=1, cost_usd=0.0002),
    )
