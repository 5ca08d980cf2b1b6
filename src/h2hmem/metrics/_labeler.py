"""Supporting-turn labels for a whole dataset: by a model, or offline by answer overlap.

``label_evidence(root, model)`` writes ``<out>/<split>.jsonl`` in the format of :mod:`._labels`
plus ``labels.meta.json`` (labeller, prompt hash, time). Per question:

- Answer Refusal → ``no_support_expected`` (nothing should support an answer); no model call;
- every gold session absent from the data → ``evidence_missing``; no model call;
- otherwise the candidate turns are the gold sessions' turns (a ``session0`` question: every
  present session of its dialogue), and
  - ``model="offline"``: each turn scores ``|G ∩ T| / |G|`` with ``G`` the gold answer's content
    tokens (official tokenizer, stopwords removed) and ``T`` the turn's text + caption tokens; an
    image file named in the gold answer ("img4.jpg in session1") selects the turn that shared it
    (matched by file stem, since gold answers sometimes write ``.png`` for a ``.jpg``). The
    ``max_turns`` best turns with a score of at least ``min_overlap`` are kept; none → ``unclear``;
  - a chat model: the prompt ``label_evidence_prompt.txt`` (package data) with the question, gold
    answer and numbered turns; the reply's turns are checked against the candidates.

Resumable: questions already in the output files are not labelled again (model calls also go
through the request cache); each record is appended the moment it exists, and the files are
rewritten sorted at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from .._aio import run_sync
from .._atomic import atomic_write_text
from ..data import Dialogue, Question, TaskType, load_dataset
from ._labels import EvidenceLabel, LabelStatus, LabelTurn, _read_file
from ._tokenize import content_tokens, tokenize

OFFLINE = "offline"
MIN_OVERLAP = 0.5
"""Offline labeller: least share of the gold answer's content words a kept turn must contain."""
MAX_TURNS = 3
"""Offline labeller: most turns kept per question."""
_FILE = re.compile(r"([\w-]+)\.(?:png|jpe?g|gif|webp)\b", re.I)


def labeling_prompt() -> str:
    """The instructions sent to a labelling model (package data)."""
    return resources.files("h2hmem.metrics").joinpath("label_evidence_prompt.txt").read_text(encoding="utf-8")


def prompt_hash() -> str:
    return hashlib.sha256(labeling_prompt().encode()).hexdigest()[:16]


def _candidates(d: Dialogue, q: Question) -> list[tuple[str, int, str, str | None]]:
    """``(session, turn, text, image file)`` of the sessions that may hold the answer."""
    names = set(q.answer_sessions) if not q.is_cross_session else {s.name for s in d.present_sessions}
    return [
        (s.name, t.index, t.text, t.image.file if t.image else None)
        for s in d.present_sessions
        if s.name in names
        for t in s.turns
    ]


def _fixed_status(d: Dialogue, q: Question) -> LabelStatus | None:
    if q.task_type is TaskType.AR:
        return "no_support_expected"
    present = {s.name for s in d.present_sessions}
    if not present or (not q.is_cross_session and not (set(q.answer_sessions) & present)):
        return "evidence_missing"
    return None


def offline_label(
    d: Dialogue, q: Question, captions: Any = None, *, min_overlap: float = MIN_OVERLAP, max_turns: int = MAX_TURNS
) -> EvidenceLabel:
    """The offline label of one question (rules in the module docstring)."""
    status = _fixed_status(d, q)
    if status is not None:
        return EvidenceLabel(question_id=q.id, status=status, note="offline: by rule")
    cands = _candidates(d, q)
    stems = {m.group(1).lower() for m in _FILE.finditer(q.gold)}
    if stems:
        hits = [(s, t) for s, t, _, f in cands if f and f.rsplit(".", 1)[0].lower() in stems]
        if hits:
            return EvidenceLabel(
                question_id=q.id,
                status="labelled",
                turns=[LabelTurn(session=s, turn=t) for s, t in hits[:max_turns]],
                note="offline: image named in the gold answer",
            )
    gold = set(content_tokens(tokenize(q.gold)))
    if not gold:
        return EvidenceLabel(question_id=q.id, status="unclear", note="offline: gold answer has no content words")
    by_session = {s.name: s for s in d.present_sessions}
    scored = []
    for s, t, text, f in cands:
        cap = captions(by_session[s].turns[t].image) if captions is not None and f else None
        words = set(content_tokens(tokenize(f"{text} {cap or ''}")))
        scored.append((len(gold & words) / len(gold), s, t))
    kept = sorted((x for x in scored if x[0] >= min_overlap), key=lambda x: -x[0])[:max_turns]
    if not kept:
        return EvidenceLabel(question_id=q.id, status="unclear", note="offline: no turn shares enough answer words")
    return EvidenceLabel(
        question_id=q.id,
        status="labelled",
        turns=[LabelTurn(session=s, turn=t) for _, s, t in kept],
        note=f"offline: answer overlap ≥ {min_overlap}",
    )


def labeling_messages(d: Dialogue, q: Question, captions: Any = None):
    """``[system, user]`` messages asking a model for the supporting turns of ``q``."""
    from ..llm import Message

    by_session = {s.name: s for s in d.present_sessions}
    lines = []
    for s, t, text, f in _candidates(d, q):
        turn = by_session[s].turns[t]
        img = ""
        if f:
            cap = captions(turn.image) if captions is not None else None
            img = f" [Image {f}{': ' + cap if cap else ''}]"
        lines.append(f"[{s} turn {t}] {turn.speaker}: {text.strip()}{img}")
    user = f"Question: {q.text.strip()}\nGold answer: {q.gold.strip()}\n\nTurns:\n" + "\n".join(lines)
    return [Message(role="system", content=labeling_prompt()), Message(role="user", content=user)]


def parse_labeling(text: str, q: Question, valid: set[tuple[str, int]]) -> EvidenceLabel:
    """The model's reply as a label; turns not among the candidates are dropped (and noted).

    Raises:
        ValueError: the reply is not a JSON object with a ``turns`` list.
    """
    m = re.search(r"\{.*\}", text, re.S)
    if not m:
        raise ValueError(f"labelling reply for {q.id} holds no JSON object")
    obj = json.loads(m.group())
    if not isinstance(obj, dict) or not isinstance(obj.get("turns"), list):
        raise ValueError(f"labelling reply for {q.id} has no 'turns' list")
    turns, dropped = [], 0
    for item in obj["turns"]:
        try:
            key = (str(item["session"]), int(item["turn"]))
        except (KeyError, TypeError, ValueError):
            dropped += 1
            continue
        if key in valid and key not in turns:
            turns.append(key)
        else:
            dropped += key not in valid
    status: LabelStatus = "labelled" if obj.get("status", "labelled") == "labelled" and turns else "unclear"
    return EvidenceLabel(
        question_id=q.id,
        status=status,
        turns=[LabelTurn(session=s, turn=t) for s, t in turns],
        note=f"model; {dropped} invalid turn(s) dropped" if dropped else "model",
    )


def label_agreement(pred: Mapping[str, EvidenceLabel], ref: Mapping[str, EvidenceLabel]) -> dict[str, Any]:
    """Turn-level agreement of ``pred`` with reference labels, over questions ``labelled`` in ``ref``.

    ``precision = Σ|P ∩ R| / Σ|P|``, ``recall = Σ|P ∩ R| / Σ|R|`` (micro, over turns; a question
    ``pred`` did not label contributes its reference turns to the recall denominator only);
    ``status_agreement`` = share of questions in both whose status is the same.
    """
    inter = n_pred = n_ref = 0
    same = both = 0
    for qid, r in ref.items():
        p = pred.get(qid)
        if p is not None:
            both += 1
            same += p.status == r.status
        if r.status != "labelled":
            continue
        rk = set(r.turn_keys)
        pk = set(p.turn_keys) if p is not None and p.status == "labelled" else set()
        inter += len(pk & rk)
        n_pred += len(pk)
        n_ref += len(rk)
    return {
        "precision": inter / n_pred if n_pred else None,
        "recall": inter / n_ref if n_ref else None,
        "status_agreement": same / both if both else None,
        "questions": both,
        "reference_labelled": sum(r.status == "labelled" for r in ref.values()),
    }


async def _label_all(ds, todo: list[tuple[Dialogue, Question]], model: Any, captions: Any, emit) -> None:
    async def one(d: Dialogue, q: Question) -> None:
        fixed = _fixed_status(d, q)
        if model is None or fixed is not None:
            emit(q, offline_label(d, q, captions(d) if captions else None))
            return
        valid = {(s, t) for s, t, _, _ in _candidates(d, q)}
        from ..llm import GenerationConfig

        result = await model.chat(
            labeling_messages(d, q, captions(d) if captions else None),
            GenerationConfig(temperature=0.0, max_tokens=512, json_mode=True),
            stage="label",
        )
        emit(q, parse_labeling(result.text, q, valid))

    await asyncio.gather(*(one(d, q) for d, q in todo))


async def alabel_evidence(
    root: str | Path,
    model: Any = OFFLINE,
    out_dir: str | Path | None = None,
    *,
    split: str = "all",
    captions: Any = None,
    reference: str | Path | None = None,
) -> dict[str, Any]:
    """Label every question of the dataset at ``root``; returns counts, the labeller and, with
    ``reference`` labels, the agreement (:func:`label_agreement`). Async twin of :func:`label_evidence`.

    Args:
        model: ``"offline"`` or a :class:`~h2hmem.llm.ChatModel`.
        out_dir: default ``<root>/evidence-labels`` (where ``evaluate`` finds them).
        captions: ``dialogue -> CaptionLookup`` (e.g. ``CaptionStore(root).for_dialogue`` wrapped), optional.
        reference: labels to compare with (a file or folder of ``*.jsonl``).

    Raises:
        ValueError: a model reply that cannot be parsed (the records written so far are kept), or
            an output folder labelled by another labeller.
    """
    from ..records import now_iso
    from ._labels import load_evidence_labels

    ds = load_dataset(root, split, strict=False)
    out = Path(out_dir) if out_dir is not None else Path(root) / "evidence-labels"
    out.mkdir(parents=True, exist_ok=True)
    spec = OFFLINE if model is None or model == OFFLINE else getattr(model, "spec", type(model).__name__)
    meta_path = out / "labels.meta.json"
    if meta_path.is_file():
        old = json.loads(meta_path.read_text(encoding="utf-8"))
        if old.get("labeller") != spec:
            raise ValueError(f"{out} holds labels by {old.get('labeller')!r}, not {spec!r}; choose another --out")
    atomic_write_text(
        meta_path,
        json.dumps(
            {
                "labeller": spec,
                "prompt_hash": prompt_hash() if spec != OFFLINE else None,
                "min_overlap": MIN_OVERLAP if spec == OFFLINE else None,
                "updated_at": now_iso(),
            },
            indent=1,
        ),
    )
    done: dict[str, EvidenceLabel] = {}
    for f in out.glob("*.jsonl"):
        _read_file(f, done)
    todo = [(d, q) for d in ds.dialogues for q in d.questions if q.id not in done]
    files = {s: (out / f"{s}.jsonl").open("a", encoding="utf-8") for s in ("dyadic", "multi-party")}

    def emit(q: Question, label: EvidenceLabel) -> None:
        done[q.id] = label
        files[q.split].write(
            json.dumps(
                {**label.model_dump(mode="json"), "sub_type": q.task_type.value, "gold": q.gold, "labeller": spec},
                ensure_ascii=False,
            )
            + "\n"
        )
        files[q.split].flush()

    try:
        await _label_all(ds, todo, None if spec == OFFLINE else model, captions, emit)
    finally:
        for fh in files.values():
            fh.close()
    for s in ("dyadic", "multi-party"):
        path = out / f"{s}.jsonl"
        rows = sorted(
            (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()),
            key=lambda r: r["question_id"],
        )
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        if not rows:
            path.unlink()
    counts: dict[str, int] = {}
    for lab in done.values():
        counts[lab.status] = counts.get(lab.status, 0) + 1
    report: dict[str, Any] = {"out": str(out), "labeller": spec, "labelled_now": len(todo), "counts": counts}
    if reference is not None:
        report["agreement"] = label_agreement(done, load_evidence_labels(reference).labels)
    return report


def label_evidence(
    root: str | Path,
    model: Any = OFFLINE,
    out_dir: str | Path | None = None,
    *,
    split: str = "all",
    captions: Any = None,
    reference: str | Path | None = None,
) -> dict[str, Any]:
    """Sync entry point of :func:`alabel_evidence` (same arguments, returns and errors).

    Raises:
        InRunningLoopError: called inside a running event loop: ``await alabel_evidence(...)`` there.
    """
    return run_sync(
        lambda: alabel_evidence(root, model, out_dir, split=split, captions=captions, reference=reference),
        "alabel_evidence",
    )
