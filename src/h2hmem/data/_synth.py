"""``synthesize_dataset``: a deterministic generator of H2HMem-shaped datasets on disk.

The output has the exact layout and keys of the public dataset (``docs/dataset-format.md``):
``<split>/dialogue<N>/scenes/session<K>/{session.json,questions.json,image/*}`` and a
``session0/questions.json`` pool of cross-session questions. Conversations are built from
templates over a seeded world (:mod:`._synth_dialogue`); images are small rendered cards
(:mod:`._synth_images`).

Ground truth for tests lives in ``<out>/synth_meta.json`` (outside the split folders, so loaders
ignore it)::

    {"generator": ..., "format_version": 1, "seed": 0, "scale": "small", "counts": {...},
     "images": {"dyadic/dialogue1/session2/1.png":
                    {"kind": "receipt", "title": ..., "lines": [...], "text": "title\\nline…", "caption": ...}},
     "questions": {"dyadic/dialogue1/session2/q0":
                    {"task": "CRR", "gold_parts": ["128.50 yuan"],
                     "evidence": [{"session": "session2", "turn": 3, "source": "image", "image": "1.png"}]}}}

One deliberate difference from the public files: ``session0`` questions list their real
evidence sessions in ``answer_session`` (the public pool just says ``["session0"]``), so evidence
recall can be scored on them; the loader accepts both.

``images[...]["text"]`` is exactly what is drawn (what perfect OCR returns); question keys are the
loader's question ids; every ``gold_parts`` string occurs (ignoring case) in the gold and in one
of its evidence sources (a turn's text, its image's text, or its session's ``timeline_date``).
Evidence ``turn`` is the 0-based turn index in the session's ``dialogue`` list.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ._synth_dialogue import DialogueDraft, DialoguePlan, SessionPlan, compose_dialogue
from ._synth_episodes import QDraft
from ._synth_images import render_card
from ._synth_vocab import TYPE_NOTES
from ._taxonomy import TaskType

FULL_SIZE = {
    "dyadic": {"dialogues": 20, "sessions": 284, "turns": 5316, "images": 951, "questions": 2046},
    "multi-party": {"dialogues": 5, "sessions": 25, "turns": 1762, "images": 349, "questions": 190},
}
"""Published dataset size (``docs/dataset-format.md``): sessions with a ``session.json``,
turns, image turns and questions (``session0`` pool included) per split."""
POOL_SHARE = {"dyadic": 0.1, "multi-party": 0.2}
"""Share of a dialogue's questions in its ``session0`` pool (public files: ~10 of ~100 dyadic,
~8 of ~38 multi-party)."""
GENERATED_AT = "2025-06-01T12:00:00.000000"
"""Fixed ``generated_at`` of question files: output must not depend on the clock."""
META_FILE = "synth_meta.json"
_MARKER = ".synth-incomplete.json"
_SUB_TYPE = {TaskType.MCR: "Multimodal Causal Inference"}
"""Sub-type spellings of the dataset files where they differ from the canonical name."""


def _spread(total: int, n: int, rng: random.Random) -> list[int]:
    """``n`` integers summing to ``total``, each ⌊total/n⌋ or one more (the extras at random places)."""
    base, extra = divmod(total, n)
    out = [base] * n
    for i in rng.sample(range(n), extra):
        out[i] += 1
    return out


def _jitter(values: list[int], rng: random.Random, amount: int, low: int, high: int) -> list[int]:
    """Move up to ``amount`` units between random pairs of bins, keeping every bin in [low, high]
    and the sum unchanged: sizes vary from session to session as in the public files."""
    out = list(values)
    if len(out) < 2:
        return out
    for _ in range(2 * len(out)):
        i, j = rng.sample(range(len(out)), 2)
        d = min(rng.randint(0, amount), out[i] - low, high - out[j])
        if d > 0:
            out[i] -= d
            out[j] += d
    return out


def parse_scale(scale: str) -> int | None:
    """``"small"`` → None; ``"full"`` → 1; ``"xN"`` → N (N ≥ 1).

    Raises:
        ValueError: any other value.
    """
    s = scale.strip().lower()
    if s == "small":
        return None
    if s == "full":
        return 1
    m = re.fullmatch(r"x(\d+)", s)
    if m and int(m.group(1)) >= 1:
        return int(m.group(1))
    raise ValueError(f"unknown scale {scale!r}; expected small, full or xN (e.g. x2)")


def plan_dataset(scale: str, rng: random.Random) -> list[DialoguePlan]:
    """Per-dialogue, per-session sizes; for ``full``/``xN`` they sum exactly to N × :data:`FULL_SIZE`."""
    mult = parse_scale(scale)
    if mult is None:
        small = []
        for n in (1, 2):
            small.append(DialoguePlan("dyadic", n, [SessionPlan(12, 3, q) for q in (7, 7, 6)], 4))
        small.append(DialoguePlan("multi-party", 1, [SessionPlan(24, 5, 5), SessionPlan(24, 5, 5)], 2))
        return small
    plans = []
    for split, size in FULL_SIZE.items():
        n_dia = size["dialogues"] * mult
        per_dia = _spread(size["sessions"] * mult, n_dia, rng)
        if split == "dyadic":  # public dyadic dialogues have 12–17 sessions; multi-party exactly 5
            per_dia = _jitter(per_dia, rng, 2, 11, 17)
        n_ses = sum(per_dia)
        img_mean = size["images"] / size["sessions"]
        images = _jitter(
            _spread(size["images"] * mult, n_ses, rng), rng, 2, max(0, int(img_mean) - 2), int(img_mean) + 3
        )
        # every session gets room for its image episodes plus 8 turns (app, knowledge updates,
        # habit), and the remaining turns are spread on top
        floor = [2 * i + 8 for i in images]
        extra = _spread(size["turns"] * mult - sum(floor), n_ses, rng)
        turns = [f + e for f, e in zip(floor, _jitter(extra, rng, 4, 0, 10**6))]
        questions = _spread(size["questions"] * mult, n_dia, rng)
        pos = 0
        for d in range(n_dia):
            pool = round(questions[d] * POOL_SHARE[split])
            per_ses = _jitter(_spread(questions[d] - pool, per_dia[d], rng), rng, 1, 3, 10**6)
            sessions = [SessionPlan(turns[pos + i], images[pos + i], per_ses[i]) for i in range(per_dia[d])]
            pos += per_dia[d]
            plans.append(DialoguePlan(split, d + 1, sessions, pool))
    return plans


def synthesize_dataset(out: Path, scale: str = "small", seed: int = 0, *, progress: bool = False) -> dict[str, Any]:
    """Write a synthetic H2HMem dataset under ``out`` and return its counts.

    Args:
        out: dataset root to create (``out/dyadic``, ``out/multi-party``, ``out/synth_meta.json``).
            It must be empty or missing, or hold an earlier (possibly interrupted) run with the same
            ``scale`` and ``seed``, which is then completed (writing is idempotent).
        scale: ``"small"`` (2 dyadic + 1 multi-party dialogues, 8 sessions, 60 questions — for demos
            and tests), ``"full"`` (exactly the published size, :data:`FULL_SIZE`) or ``"xN"``
            (N × full).
        seed: the same seed gives byte-identical files; another seed gives other content.
        progress: show a rich progress bar while writing.

    Returns:
        ``{"root", "scale", "seed", "splits": {split: {dialogues, sessions, turns, image_turns,
        questions}}, "task_types": {abbr: n}, "seconds"}``.

    Raises:
        ValueError: unknown ``scale``.
        FileExistsError: ``out`` holds other files (not a synthetic dataset of this scale and seed).
    """
    t0 = time.perf_counter()
    parse_scale(scale)
    out = Path(out)
    params = {"scale": scale, "seed": seed}
    _claim(out, params)
    rng = random.Random(f"h2hmem-synth:{seed}:{scale}")
    drafts = [
        compose_dialogue(random.Random(f"h2hmem-synth:{seed}:{p.split}:{p.number}"), p)
        for p in plan_dataset(scale, rng)
    ]
    meta: dict[str, Any] = {
        "generator": "h2hmem.data.synthesize_dataset",
        "format_version": 1,
        **params,
        "counts": _counts(drafts),
        "images": {},
        "questions": {},
    }
    total = sum(1 + sum(t.card is not None for t in s.turns) for d in drafts for s in d.sessions)
    with Progress(
        TextColumn("[bold]synth[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not progress,
    ) as bar:
        task = bar.add_task(f"{scale} (seed {seed})", total=total)
        for d in drafts:
            _write_dialogue(out, d, meta, lambda n: bar.advance(task, n))
    _write(out / META_FILE, _dumps(meta))
    (out / _MARKER).unlink(missing_ok=True)
    return {
        "root": str(out),
        **params,
        "splits": meta["counts"]["splits"],
        "task_types": meta["counts"]["task_types"],
        "seconds": round(time.perf_counter() - t0, 2),
    }


def _claim(out: Path, params: dict[str, Any]) -> None:
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    for name in (META_FILE, _MARKER):
        f = out / name
        if f.is_file():
            try:
                old = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                old = {}
            if {k: old.get(k) for k in params} != params:
                raise FileExistsError(
                    f"{out} holds a synthetic dataset with scale={old.get('scale')!r}, "
                    f"seed={old.get('seed')!r}; choose an empty folder"
                )
            break
    else:
        if out.is_dir() and any(out.iterdir()):
            raise FileExistsError(f"{out} is not empty and holds no synthetic dataset; choose an empty folder")
    out.mkdir(parents=True, exist_ok=True)
    _write(out / _MARKER, _dumps(params))


def _dumps(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _counts(drafts: list[DialogueDraft]) -> dict[str, Any]:
    splits: dict[str, dict[str, int]] = {}
    types = {t.abbr: 0 for t in TaskType}
    for sp in ("dyadic", "multi-party", "all"):
        ds = [d for d in drafts if sp in ("all", d.split)]
        splits[sp] = {
            "dialogues": len(ds),
            "sessions": sum(len(d.sessions) for d in ds),
            "turns": sum(len(s.turns) for d in ds for s in d.sessions),
            "image_turns": sum(t.card is not None for d in ds for s in d.sessions for t in s.turns),
            "questions": sum(len(d.pool) + sum(len(s.questions) for s in d.sessions) for d in ds),
        }
    for d in drafts:
        for q in [*d.pool, *(q for s in d.sessions for q in s.questions)]:
            types[q.task] += 1
    return {"splits": splits, "task_types": types}


def _write_dialogue(out: Path, d: DialogueDraft, meta: dict[str, Any], advance: Callable[[int], object]) -> None:
    dname = f"dialogue{d.number}"
    scenes = out / d.split / dname / "scenes"
    group = d.split == "multi-party"
    for s in d.sessions:
        sdir = scenes / s.name
        dialogue = [
            {"role": t.speaker, "content": {"image": t.card.file if t.card else "", "text": t.text}} for t in s.turns
        ]
        for t in s.turns:
            if t.card is None:
                continue
            _write(sdir / "image" / t.card.file, render_card(t.card))
            c = t.card
            meta["images"][f"{d.split}/{dname}/{s.name}/{c.file}"] = {
                "kind": c.kind,
                "title": c.title,
                "lines": c.lines,
                "text": c.text,
                "caption": c.caption,
            }
            advance(1)
        if group:
            images = [t.card.file for t in s.turns if t.card]
            phrases = [e.phrase for e in s.events]
            body = {
                "session_id": f"S{d.number}-{s.number}",
                "group_id": d.group,
                "target_turns": len(s.turns),
                "actual_turns": len(s.turns),
                "dialogue": dialogue,
                "meta": {
                    "images_used": images,
                    "full_summary": "对话开始。\n" + "; ".join(phrases),
                    "resolved_events": phrases[:-1],
                    "active_events": phrases[-1:],
                },
                "timeline_date": s.raw_date,
            }
        else:
            topic, zh, title = d.theme
            body = {
                "session_id": f"{topic}_{d.number}_{s.number:02d}",
                "session_title": s.title,
                "theme": f"{zh}-{title}",
                "generated_at": f"{s.date.isoformat()}T10:00:00.000000",
                "dialogue": dialogue,
                "timeline_date": s.raw_date,
            }
        _write(sdir / "session.json", _dumps(body))
        _write(sdir / "questions.json", _dumps(_questions_file(d, s.name, s.number, s.questions, meta)))
        advance(1)
    _write(scenes / "session0" / "questions.json", _dumps(_questions_file(d, "session0", 0, d.pool, meta)))


def _questions_file(
    d: DialogueDraft, sname: str, number: int, qs: list[QDraft], meta: dict[str, Any]
) -> dict[str, Any]:
    info = {"session_name": sname, "session_number": number, "dialogue_name": f"Dialogue {d.number}"}
    metadata = {
        "generated_at": GENERATED_AT,
        **info,
        "model": "h2hmem-synth",
        "version": "1.0",
        "question_format": "object_format",
    }
    if number == 0:
        metadata["source"] = "converted_from_cross_session"
    items = []
    for i, q in enumerate(qs):
        task = TaskType[q.task]
        sessions = list(dict.fromkeys(t.session for t, _ in q.evidence)) or [sname]
        item = {
            "question": {"image": q.image, "text": q.text},
            "original_answer": q.gold,
            "answer_session": sessions,
            "answer_dialogue": f"dialogue{d.number}",
            "question_type": {"main_type": task.main_category.value, "sub_type": _SUB_TYPE.get(task, task.value)},
            "difficulty": q.difficulty,
            "validation_notes": TYPE_NOTES[q.task],
            "generated_at": GENERATED_AT,
            "validated": True,
        }
        if number == 0:
            item["original_question_id"] = f"CSQ{i + 1:03d}"
        items.append(item)
        meta["questions"][f"{d.split}/dialogue{d.number}/{sname}/q{i}"] = {
            "task": q.task,
            "gold_parts": q.gold_parts,
            "evidence": [
                {
                    "session": t.session,
                    "turn": t.index,
                    "source": src,
                    **({"image": t.card.file} if src == "image" and t.card else {}),
                }
                for t, src in q.evidence
            ],
        }
    return {"metadata": metadata, "session_info": info, "questions": items}
