"""Export a run as the official baselines' per-session results files, for the official evaluators.

The official baselines wrote one results file per session and method,
``<split>/<dialogue>/scenes/<session>/evaluation_results/results_<Method>.json``, holding
``{"metadata": {...}, "results": [...]}``; the official LLM judge and lexical scorers walk a split
folder for these files and read:

- ``metadata.memory_type`` and ``metadata.vlm_model``: a method's rows are grouped under
  ``<memory_type>_<vlm_model>`` (a file without them falls under ``unknown``);
- per row: ``question_id`` (sent to the judge, which answers by it), ``question_text``,
  ``system_answer``, ``original_answer``, ``category`` (else ``question_type.sub_type``),
  ``difficulty`` and ``success``.

We write those fields under the same names, for every method alike (the official NGM files had no
metadata — docs/official-pitfalls.md #11), rows in question order (the official files were in
completion order), ``question_id`` as the official loaders numbered questions (``q<index>`` within
the session's ``questions.json``) and h2hmem's stable id beside it as ``h2hmem_question_id``.
The official lexical scorer reads only folders named ``evaluation_results_qwen_3B`` and the judge
both names (pitfall #17): ``results_folder`` chooses the name.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from .._atomic import atomic_write_text
from ..data import TaskType, image_field
from ..records import Manifest, Prediction, RunStore, read_predictions

RESULTS_FOLDER = "evaluation_results"
"""Where the official baselines wrote their results files inside a session folder."""
LEXICAL_RESULTS_FOLDER = "evaluation_results_qwen_3B"
"""The only folder name the official lexical scorer reads (its judge reads both)."""


def _local_id(pred: Prediction) -> str:
    """``q<index>``: the question's id within its session, as the official loaders numbered it."""
    return pred.question_id.rsplit("/", 1)[1]


def official_row(pred: Prediction) -> dict[str, Any]:
    """One row of an official results file for ``pred`` (fields as the official baselines wrote them).

    A failed question (``pred.error`` set) has ``success`` false, ``system_answer`` ``""`` and the
    error in ``error_message``; a retrieval-only record (no answer) has ``system_answer`` ``""``.
    """
    sub_type = TaskType[pred.task_type].value
    return {
        "question_id": _local_id(pred),
        "h2hmem_question_id": pred.question_id,
        "session_id": pred.session,
        "dialogue_name": pred.dialogue,
        "question_text": pred.question,
        "question_image": image_field(pred.session, pred.question_images),
        "system_answer": pred.answer if pred.answer is not None else "",
        "original_answer": pred.gold,
        "answer_session": pred.answer_sessions or [],
        "question_type": {"main_type": pred.main_category, "sub_type": sub_type},
        "category": sub_type,
        "difficulty": pred.difficulty,
        "success": pred.error is None,
        "error_message": pred.error or "",
    }


def _answer_model(manifest: Manifest | None) -> str | None:
    """The answer model as the run loaded it (its recorded component), else the configured spec."""
    if manifest is None:
        return None
    component = manifest.component("answer_model")
    return component.name if component is not None else manifest.model


def export_official(
    run_dir: str | Path, out_dir: str | Path | None = None, *, results_folder: str = RESULTS_FOLDER
) -> list[Path]:
    """Write the run's answers as official results files; returns their paths, sorted by session.

    Each file is ``<out_dir>/<split>/<dialogue>/scenes/<session>/<results_folder>/results_<method>.json``
    (``out_dir`` defaults to ``run_dir/official``): give the official evaluators
    ``<out_dir>/<split>`` as their base path. ``metadata`` holds ``session_id`` and
    ``session_dir_name`` (the session folder), ``memory_type`` (the run's method), ``vlm_model``
    (its answer model as loaded: the manifest's ``answer_model`` component), and h2hmem's ``run_id`` and ``preset``; rows are :func:`official_row` in
    question order, the last record of a question winning as for every reader. Files are replaced
    whole (an interrupted export leaves no half file).

    Raises:
        FileNotFoundError: no predictions in ``run_dir``.
        ValueError: a line of ``predictions.jsonl`` is not a valid record (names file and line), or
            ``results_folder`` is not one plain folder name.
        OSError: a file cannot be written.
    """
    if not results_folder or Path(results_folder).name != results_folder or results_folder in (".", ".."):
        raise ValueError(f"results_folder must be one folder name, got {results_folder!r}")
    run_dir = Path(run_dir)
    manifest = RunStore(run_dir).read_manifest()
    method = (manifest.method if manifest is not None else None) or "method"
    out = Path(out_dir) if out_dir else run_dir / "official"
    groups: dict[tuple[str, str, str], list[Prediction]] = defaultdict(list)
    for p in read_predictions(run_dir):
        groups[(p.split, p.dialogue, p.session)].append(p)
    written = []
    for (split, dialogue, session), preds in sorted(groups.items()):
        preds.sort(key=lambda p: int(_local_id(p)[1:]))
        metadata = {
            "session_id": session,
            "session_dir_name": session,
            "memory_type": method,
            "vlm_model": _answer_model(manifest),
            "run_id": manifest.run_id if manifest is not None else run_dir.name,
            "preset": manifest.preset if manifest is not None else None,
        }
        path = out / split / dialogue / "scenes" / session / results_folder / f"results_{method}.json"
        atomic_write_text(
            path,
            json.dumps(
                {"metadata": metadata, "results": [official_row(p) for p in preds]}, ensure_ascii=False, indent=1
            ),
        )
        written.append(path)
    return written
