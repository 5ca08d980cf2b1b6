"""Command-line options choosing questions, shared by ``run``, ``evaluate`` and ``report``
(one definition, so the three commands spell and check them the same way)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ..run import Selection

TASK_TYPE = typer.Option(
    None, "--task-type", help="Only this task type: abbreviation (TR) or name ('Temporal Reasoning'); repeatable."
)
DIALOGUE = typer.Option(None, "--dialogue", help="Only this dialogue: dialogueN, N or <split>/dialogueN; repeatable.")
QUESTION_ID = typer.Option(
    None,
    "--question-id",
    help="Only this question id (split/dialogueN/sessionK/qI), or @FILE with one id a line; repeatable.",
)
DIFFICULTY = typer.Option(None, "--difficulty", help="Only this difficulty: easy, medium, hard or unknown; repeatable.")
SAMPLE = typer.Option(
    None,
    "--sample",
    min=1,
    help="Draw N of the (filtered) questions, stratified over split × "
    "task type: proportional, at least one per non-empty stratum.",
)
SEED = typer.Option(0, "--seed", help="Seed of --sample (same N and seed → same questions).")
LIMIT_HELP = (
    "Then keep only the first N of the selected questions in dataset order (dialogue by dialogue: "
    "a quick smoke test, not a representative subset — use --sample for that)."
)


def selection_from_options(
    task_type: list[str] | None,
    dialogue: list[str] | None,
    question_id: list[str] | None,
    difficulty: list[str] | None,
    sample: int | None,
    seed: int,
) -> Selection:
    """The :class:`~h2hmem.run.Selection` of the options; ``@file`` ids are read here.

    Raises:
        ValueError: an unknown task type/difficulty, a bad dialogue, an unreadable id file
            (the message names the option).
    """
    from pydantic import ValidationError

    from ..run import Selection, expand_id_args

    try:
        ids = expand_id_args(question_id or [])
    except OSError as e:
        raise ValueError(f"--question-id: {e}") from None
    try:
        return Selection(
            task_types=tuple(task_type or ()),
            dialogues=tuple(dialogue or ()),
            question_ids=tuple(ids),
            difficulties=tuple(difficulty or ()),
            sample=sample,
            seed=seed,
        )
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "selection"
        option = {
            "task_types": "--task-type",
            "dialogues": "--dialogue",
            "question_ids": "--question-id",
            "difficulties": "--difficulty",
            "sample": "--sample",
        }.get(field, "--" + field)
        raise ValueError(f"{option}: {err['msg'].removeprefix('Value error, ')}") from None
