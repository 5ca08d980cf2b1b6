"""Dataset overview: the counts the paper's dataset table reports, per split and in total."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ._schema import SPLITS, Dataset
from ._taxonomy import DIFFICULTIES, MainCategory, TaskType


def dataset_stats(ds: Dataset) -> dict[str, Any]:
    """Counts per split and in total.

    Returns a JSON-ready dict::

        {"splits": {"dyadic": {dialogues, sessions, absent_sessions, turns, image_turns, questions},
                    "multi-party": {...}, "all": {...}},
         "main_categories": {"Memory Recall": n, ...},
         "task_types": {"UPR": n, ...},
         "task_types_by_split": {"dyadic": {"UPR": n, ...}, ...},
         "difficulty": {"easy": n, "medium": n, "hard": n, "unknown": n}}

    ``sessions`` counts sessions with a ``session.json`` ("sessions with dialogue");
    ``session0`` (the question pool) is never counted.
    """
    splits: dict[str, dict[str, int]] = {}
    by_split_type: dict[str, dict[str, int]] = {}
    for sp in (*SPLITS, "all"):
        dl = ds.split(sp)
        splits[sp] = {
            "dialogues": len(dl),
            "sessions": sum(len(d.present_sessions) for d in dl),
            "absent_sessions": sum(1 for d in dl for s in d.sessions if s.absent),
            "turns": sum(len(s.turns) for d in dl for s in d.sessions),
            "image_turns": sum(1 for d in dl for s in d.sessions for t in s.turns if t.image is not None),
            "questions": sum(len(d.questions) for d in dl),
        }
        c = Counter(q.task_type for d in dl for q in d.questions)
        by_split_type[sp] = {t.abbr: c.get(t, 0) for t in TaskType}
    qs = ds.questions
    main = Counter(q.main_category for q in qs)
    diff = Counter(q.difficulty for q in qs)
    return {
        "splits": splits,
        "main_categories": {m.value: main.get(m, 0) for m in MainCategory},
        "task_types": by_split_type["all"],
        "task_types_by_split": {sp: by_split_type[sp] for sp in SPLITS},
        "difficulty": {k: diff.get(k, 0) for k in (*DIFFICULTIES, "unknown")},
    }
