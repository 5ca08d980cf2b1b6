"""Helpers for the reliability tests: a small synthetic dataset in the official layout, and
running the real CLI (in-process with typer's runner, or as a subprocess of the console script).

The dataset is written from scratch (no copy of ``/work/shared``), deterministic, and small enough
to break in dozens of ways per test run.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from typer.testing import CliRunner

from h2hmem.testing import default_responder

REPO = Path(__file__).resolve().parents[2]
H2HMEM = Path(sys.executable).parent / "h2hmem"
"""The console script of the virtualenv running the tests."""

SUB_TYPES = [
    "Unimodal Precise Recall",
    "Cross-modal Related Retrieval",
    "Knowledge Resolution",
    "Temporal Reasoning",
    "Multimodal Causal Reasoning",
    "Reference & Evolution Tracking",
    "Test-Time Learning",
    "Conflict Detection",
    "Answer Refusal",
]
MAIN_OF = {
    "Unimodal Precise Recall": "Memory Recall",
    "Cross-modal Related Retrieval": "Memory Recall",
    "Knowledge Resolution": "Memory Recall",
    "Temporal Reasoning": "Memory Reasoning",
    "Multimodal Causal Reasoning": "Memory Reasoning",
    "Reference & Evolution Tracking": "Memory Reasoning",
    "Test-Time Learning": "Memory Application",
    "Conflict Detection": "Memory Application",
    "Answer Refusal": "Memory Application",
}


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: int = 8) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, format="PNG")
    return buf.getvalue()


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def question(text: str, answer: str, session: str, n: int, image: str = "") -> dict[str, Any]:
    sub = SUB_TYPES[n % len(SUB_TYPES)]
    return {
        "question": {"text": text, "image": image},
        "original_answer": answer,
        "answer_session": [session],
        "answer_dialogue": "",
        "question_type": {"main_type": MAIN_OF[sub], "sub_type": sub},
        "difficulty": ("easy", "medium", "hard")[n % 3],
        "validated": True,
    }


@dataclass
class Synth:
    root: Path
    question_ids: list[str]

    def session_dir(self, split: str = "dyadic", dialogue: int = 1, session: int = 1) -> Path:
        return self.root / split / f"dialogue{dialogue}" / "scenes" / f"session{session}"


def make_dataset(
    root: Path, *, dialogues: int = 2, sessions: int = 3, questions_per_session: int = 3, multi_party: bool = True
) -> Synth:
    """Write a valid dataset under ``root``: dyadic ``dialogue1..N`` (and one multi-party dialogue),
    ``session1..K`` with 4 turns each (turn 1 shares ``1.png``, a solid
    8×8 PNG of colour ``(40·k mod 256, 80, 60·d mod 256)``), ``questions_per_session`` questions per
    session and two cross-session questions in ``session0`` (one naming ``session1/1.png``).

    Returns the root and every question id in dataset order.
    """
    ids: list[str] = []
    splits = [("dyadic", dialogues, ["Ann", "Bo"])]
    if multi_party:
        splits.append(("multi-party", 1, ["Cy", "Di", "Ed", "Fay"]))
    for split, n_dialogues, speakers in splits:
        for d in range(1, n_dialogues + 1):
            scenes = root / split / f"dialogue{d}" / "scenes"
            dialogue_ids: list[str] = []
            for k in range(1, sessions + 1):
                sdir = scenes / f"session{k}"
                (sdir / "image").mkdir(parents=True, exist_ok=True)
                (sdir / "image" / "1.png").write_bytes(png_bytes((40 * k % 256, 80, 60 * d % 256)))
                turns = []
                for t in range(4):
                    spk = speakers[t % len(speakers)]
                    turns.append(
                        {
                            "role": spk,
                            "content": {
                                "text": f"{spk} says fact {d}-{k}-{t}: the {['red', 'blue', 'green', 'gold'][t]} "
                                f"kite cost {10 * k + t} dollars.",
                                "image": "1.png" if t == 1 else "",
                            },
                        }
                    )
                write_json(
                    sdir / "session.json",
                    {
                        "session_id": f"topic_{k}",
                        "session_title": f"Session {k}",
                        "timeline_date": f"2024-0{min(k, 9)}-1{d % 10}",
                        "dialogue": turns,
                    },
                )
                qs = [
                    question(
                        f"In session {k} of dialogue {d}, what did speaker say about item {i}?",
                        f"{10 * k + i} dollars",
                        f"session{k}",
                        i + k,
                    )
                    for i in range(questions_per_session)
                ]
                write_json(sdir / "questions.json", {"metadata": {}, "session_info": {}, "questions": qs})
                dialogue_ids += [f"{split}/dialogue{d}/session{k}/q{i}" for i in range(len(qs))]
            s0 = [
                question(
                    f"Across sessions of dialogue {d}, how did the kite prices change?", "They rose.", "session0", 3
                ),
                question(
                    f"Which colour was the kite in this picture (dialogue {d})?",
                    "blue",
                    "session0",
                    1,
                    image="session1/1.png",
                ),
            ]
            write_json(scenes / "session0" / "questions.json", {"metadata": {}, "session_info": {}, "questions": s0})
            # dataset order: by dialogue, then session number (session0 first), then index
            ids += [f"{split}/dialogue{d}/session0/q{i}" for i in range(len(s0))] + dialogue_ids
    return Synth(root=root, question_ids=ids)


# ----- running the CLI ---------------------------------------------------------------------------


@dataclass
class CliResult:
    code: int
    output: str
    """stdout and stderr together."""


def cli(*args: str | Path, env: dict[str, str] | None = None) -> CliResult:
    """Run ``h2hmem *args`` in-process (typer's runner); an escaped exception is shown as a traceback
    in ``output`` so callers can assert there is none."""
    from h2hmem.cli import app

    runner = CliRunner()
    res = runner.invoke(app, [str(a) for a in args], env=env, catch_exceptions=True)
    out = res.output
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        import traceback

        out += "\nTraceback (most recent call last):\n" + "".join(traceback.format_exception(res.exception))
    return CliResult(code=res.exit_code, output=out)


def cli_subprocess(*args: str | Path, timeout: float = 120, env: dict[str, str] | None = None) -> CliResult:
    """Run the installed console script ``h2hmem *args`` as a child process."""
    full_env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    p = subprocess.run(
        [str(H2HMEM), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO
    )
    return CliResult(code=p.returncode, output=p.stdout + p.stderr)


def jsonl_ids(path: Path) -> list[str]:
    """``question_id`` of every complete raw line of a predictions file (duplicates kept)."""
    out = []
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            out.append(json.loads(line)["question_id"])
    return out


# ----- judging -----------------------------------------------------------------------------------

_OFFICIAL_ITEM = re.compile(r"Question ID: (.*)\nQuestion: .*\nGround Truth: (.*)\nAssistant Answer: (.*)\n")


def judge_aware(body: dict) -> str:
    """Answer requests get the mock's default answer; judge requests get a judgment per item:
    score 1 when the assistant's answer equals the reference, else 0. Both judge formats: the
    official prompt in one user message (``paper``, JSON array reply) or our rubric as system
    prompt (``harmonized``, JSON object reply)."""
    system = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "system"), "") or ""
    first = body.get("messages", [{}])[0].get("content")
    if isinstance(first, str) and first.startswith("You are an impartial judge") and system == "":
        return json.dumps(
            [
                {"question_id": lid, "score": 1 if ans.strip() == ref.strip() else 0, "reasoning": "compared"}
                for lid, ref, ans in _OFFICIAL_ITEM.findall(first)
            ]
        )
    if "You grade answers" not in system:
        return default_responder(body)
    user = body["messages"][-1]["content"]
    out = []
    for block in user.split("\n\n[")[1:] if "\n\n[" in user else []:
        lid = block.split("]", 1)[0]
        ref = block.split("Reference answer: ", 1)[1].split("\n", 1)[0].strip()
        ans = block.split("Assistant's answer: ", 1)[1].split("\n", 1)[0].strip()
        out.append({"question_id": lid, "score": 1 if ans == ref else 0, "reasoning": "compared"})
    return json.dumps({"judgments": out})


def judged_run(data, tmp_path) -> Path:
    """``<tmp_path>/runs/judged``: hand-written predictions for every question of ``data``, right
    (= gold) for even question indexes, wrong for odd ones, and failed for ``dyadic/dialogue2/session1/q0``."""
    from h2hmem.data import load_dataset
    from h2hmem.records import Prediction

    run = tmp_path / "runs" / "judged"
    run.mkdir(parents=True)
    lines = []
    for q in load_dataset(data.root).questions:
        fields = dict(
            question_id=q.id,
            split=q.split,
            dialogue=q.dialogue,
            session=q.session,
            task_type=q.task_type.abbr,
            main_category=q.main_category.value,
            difficulty=q.difficulty,
            question=q.text,
            gold=q.gold,
            method="hand",
        )
        if q.id == "dyadic/dialogue2/session1/q0":
            lines.append(Prediction(**fields, error="ServerError: scripted"))
        else:
            lines.append(Prediction(**fields, answer=q.gold if q.index % 2 == 0 else "no idea"))
    (run / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in lines))
    return run


def expected_judge_mean(data) -> float:
    """Right (1) for even indexes, wrong (0) for odd, the failed one 0: over all questions."""
    right = sum(
        1 for q in data.question_ids if int(q.rsplit("q", 1)[1]) % 2 == 0 and q != "dyadic/dialogue2/session1/q0"
    )
    return right / len(data.question_ids)
