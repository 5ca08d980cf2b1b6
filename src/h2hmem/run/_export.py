"""Export a run in the official per-session layout, for users of the original scripts.

The official baselines wrote one results file per session next to its questions. We write
``<out>/<split>/<dialogue>/scenes/<session>/results_<method>.json`` holding ``{"method", "model",
"results": [...]}``; each result repeats the question's own fields as ``questions.json`` has them
(``question {text, image}``, ``original_answer``, ``answer_session``, ``question_type {main_type,
sub_type}``, ``difficulty``) plus ``system_answer`` and our ``question_id``. Rows are in question
order (the official files were in completion order — docs/official-pitfalls.md #11), and every method carries the same
metadata (docs/official-pitfalls.md #11: NGM had none).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from ..data import TaskType
from ..records import Prediction, RunStore, read_predictions


def _image_field(pred: Prediction) -> str:
    """The ``question.image`` value as the dataset writes it: bare name for its own session."""
    names = [k.split("/", 1)[1] if k.startswith(pred.session + "/") else k for k in pred.question_images]
    return ",".join(names)


def export_official(run_dir: Path, out_dir: Path | None = None) -> list[Path]:
    """Write the per-session results files; returns their paths.

    Raises:
        FileNotFoundError: no predictions in ``run_dir``.
    """
    run_dir = Path(run_dir)
    manifest = RunStore(run_dir).read_manifest()
    method = (manifest.method if manifest is not None else None) or "method"
    out_dir = Path(out_dir) if out_dir else run_dir / "official"
    groups: dict[tuple[str, str, str], list[Prediction]] = defaultdict(list)
    for p in read_predictions(run_dir):
        groups[(p.split, p.dialogue, p.session)].append(p)
    written = []
    for (split, dialogue, session), preds in sorted(groups.items()):
        preds.sort(key=lambda p: int(p.question_id.rsplit("/q", 1)[1]))
        rows = [
            {
                "question_id": p.question_id,
                "question": {"text": p.question, "image": _image_field(p)},
                "original_answer": p.gold,
                "system_answer": p.answer if p.answer is not None else "",
                "answer_session": p.answer_sessions or [],
                "question_type": {"main_type": p.main_category, "sub_type": TaskType[p.task_type].value},
                "difficulty": p.difficulty,
                "error": p.error,
            }
            for p in preds
        ]
        path = out_dir / split / dialogue / "scenes" / session / f"results_{method}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {"method": method, "model": manifest.model if manifest is not None else None, "results": rows},
                ensure_ascii=False,
                indent=1,
            ),
            encoding="utf-8",
        )
        written.append(path)
    return written
