"""Write a run's predictions as the two leaderboard files (``docs/leaderboard.md``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

from .._atomic import atomic_write_text
from ..data import SPLITS, Split, TaskType, image_field
from ..records import Prediction, read_predictions
from ._format import FILE_NAMES


def _natural_key(question_id: str) -> tuple:
    # "dyadic/dialogue10/session2/q3": dialogue10 after dialogue9, session10 after session9.
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", question_id))


def submission_row(p: Prediction) -> dict[str, str]:
    """One official row (plus ``question_id``) for a prediction.

    A failed answer (``error`` set, or no answer) is written as ``system_answer = ""``, which every
    metric scores 0 — it stays in the file so the question is not reported missing.

    Raises:
        h2hmem.data.UnknownLabelError: the record's ``task_type`` is not a known sub-type.
    """
    answer = "" if p.failed or p.answer is None else p.answer
    return {
        "question_id": p.question_id,
        "question_text": p.question,
        "question_image": image_field(p.session, p.question_images),
        "system_answer": answer,
        "original_answer": p.gold,
        "category": TaskType.parse(p.task_type).value,
    }


def export_submission(run_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write ``prediction_dyadic.json`` / ``prediction_multiparty.json`` for a run.

    Args:
        run_dir: run directory holding ``predictions.jsonl`` (or the file itself).
        out_dir: where to write; default ``<run_dir>/submission/`` (ARCHITECTURE.md run layout).

    Returns:
        The files written, dyadic first; a split with no predictions gets no file.

    Raises:
        FileNotFoundError: no predictions file.
        ValueError: a prediction record is invalid, has an unknown split or task type.
        OSError: a file cannot be written (a full or read-only disk, ``out_dir`` under a file); a
            file is written whole or not at all.
    """
    run_dir = Path(run_dir)
    preds = read_predictions(run_dir)
    base = run_dir if run_dir.is_dir() else run_dir.parent
    out = Path(out_dir) if out_dir is not None else base / "submission"
    by_split: dict[str, list[Prediction]] = {s: [] for s in SPLITS}
    for p in preds:
        if p.split not in by_split:
            raise ValueError(f"{run_dir}: prediction {p.question_id}: unknown split {p.split!r}")
        by_split[p.split].append(p)
    written: list[Path] = []
    for split, rows in by_split.items():
        if not rows:
            continue
        rows.sort(key=lambda p: _natural_key(p.question_id))
        try:
            data = {"predictions": [submission_row(p) for p in rows]}
        except ValueError as e:
            raise ValueError(f"{run_dir}: {e}") from None
        path = out / FILE_NAMES[cast(Split, split)]  # a key of SPLITS
        atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")
        written.append(path)
    return written


def missing_questions(run_dir: str | Path, data_root: str | Path | None = None) -> dict[str, list[str]] | None:
    """Question ids of the full benchmark that the run has no answer for, by split (dataset order),
    failed answers included; None when the dataset is unknown (no ``data_root`` and the manifest's
    does not exist). A leaderboard entry needs every question of both splits.

    Raises:
        DatasetError: the dataset cannot be read.
    """
    from ..data import load_dataset
    from ..records import RunStore

    run_dir = Path(run_dir)
    root = Path(data_root) if data_root is not None else None
    if root is None:
        manifest = RunStore(run_dir).read_manifest()
        root = manifest.dataset_root() if manifest is not None else None
    if root is None:
        return None
    answered = {p.question_id for p in read_predictions(run_dir) if not p.failed}
    ds = load_dataset(root, "all", strict=False)
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for q in sorted(ds.questions, key=lambda q: _natural_key(q.id)):
        if q.id not in answered:
            out[q.split].append(q.id)
    return out
