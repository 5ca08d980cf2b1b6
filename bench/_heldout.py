"""Held-out protocol for ``h2h``'s settings: leave-one-dialogue-out (LODO) over labelled dialogues.

A *setting* is one full configuration of ``h2h`` (its ``--param`` values). Every setting is run on
the whole sample once; its per-question scores are rows ``question_id → (dialogue, task type,
value)`` (:func:`bench.retrieval.per_question`). Then, for each labelled dialogue *d* (a fold):

1. the setting with the best mean turn recall@5 over the labelled questions of the **other**
   dialogues is chosen (ties → the lower index: setting 0 is the default, so the default wins
   unless the other dialogues show a gain);
2. that setting's scores of *d*'s questions are its held-out scores.

A dialogue with no labelled question (it could not be chosen on, nor held out) gets the setting
chosen on all labelled dialogues, which never saw it either. The held-out figure of a metric is
the mean over all questions, each scored by its own fold's choice; the *spread* is the range of
the per-fold means (folds holding at least one question of the row's task type). The
**in-sample** figure is the setting chosen on all labelled dialogues, scored on them too: the
optimistic reading that the held-out figure corrects. A baseline has no setting to choose: its
in-sample and held-out figures are the same, and its spread is over the same folds.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

Rows = Mapping[str, tuple[str, str, float]]
"""``question_id → (split/dialogue, task type, value)`` of the scored questions of one run."""


def mean_of(rows: Rows, dialogues: set[str]) -> float:
    """Mean value of the rows of ``dialogues`` (0.0 when there is none)."""
    vals = [v for d, _, v in rows.values() if d in dialogues]
    return sum(vals) / len(vals) if vals else 0.0


def choose(
    grid: Sequence[Rows],
    dialogues: set[str],
    guard: Sequence[Rows] | None = None,
    floor: Sequence[Rows] = (),
) -> int:
    """Index of the setting with the best mean over ``dialogues`` (ties → the lowest index).

    With ``guard`` (per setting, rows of a second metric), a setting whose guard mean over
    ``dialogues`` is below the floor is not eligible (setting 0 always is): the floor is the best
    guard mean of the ``floor`` rows (the baselines') over ``dialogues``, or setting 0's when none
    are given; and a tie on the first metric goes to the higher guard mean (then the lowest index):
    a change that leaves turn recall as it is but raises session hit is chosen. Means are rounded
    to 9 decimals first, so float noise is a tie.
    """
    means = [round(mean_of(rows, dialogues), 9) for rows in grid]
    eligible = list(range(len(grid)))
    second = [0.0] * len(grid)
    if guard is not None:
        bar = max((mean_of(rows, dialogues) for rows in floor), default=mean_of(guard[0], dialogues))
        second = [round(mean_of(rows, dialogues), 9) for rows in guard]
        eligible = [0] + [i for i in eligible[1:] if second[i] >= round(bar, 9)]
    return max(eligible, key=lambda i: (means[i], second[i], -i))


def lodo_choices(
    grid: Sequence[Rows], guard: Sequence[Rows] | None = None, floor: Sequence[Rows] = ()
) -> dict[str, int]:
    """For each dialogue with a row in ``grid``, the setting chosen on the other dialogues
    (``guard``, ``floor``: see :func:`choose`)."""
    dialogues = sorted({d for rows in grid for d, _, _ in rows.values()})
    return {d: choose(grid, set(dialogues) - {d}, guard, floor) for d in dialogues}


def _summary(rows: list[tuple[str, str, float]]) -> dict[str, Any]:
    """``{key: {"mean", "n", "folds": {dialogue: mean}, "min", "max"}}`` for overall and every task type."""
    groups: dict[str, list[tuple[str, float]]] = {"overall": []}
    for d, t, v in rows:
        groups["overall"].append((d, v))
        groups.setdefault(t, []).append((d, v))
    out: dict[str, Any] = {}
    for key, items in groups.items():
        by_fold: dict[str, list[float]] = {}
        for d, v in items:
            by_fold.setdefault(d, []).append(v)
        folds = {d: round(statistics.fmean(vs), 4) for d, vs in sorted(by_fold.items())}
        out[key] = {
            "mean": round(statistics.fmean(v for _, v in items), 4),
            "n": len(items),
            "folds": folds,
            "min": min(folds.values()),
            "max": max(folds.values()),
        }
    return out


def scored_by(choices: Mapping[str, int], grid: Sequence[Rows], default: int) -> list[tuple[str, str, float]]:
    """Every question's row from the setting its dialogue's fold chose (``default`` for a dialogue
    without a choice). ``grid`` here may hold another metric than the one the choice was made on,
    with the same settings in the same order."""
    questions: dict[str, tuple[str, str, float]] = {}
    for rows in grid:
        for q, row in rows.items():
            questions.setdefault(q, row)
    out = []
    for q, (d, _, _) in sorted(questions.items()):
        rows = grid[choices.get(d, default)]
        if q in rows:
            out.append(rows[q])
    return out


CHOICE_METRIC = "turn_recall@5"
"""The metric every choice is made on; any other metric is only scored with the choices made."""
GUARD_METRIC = "hit@5"
"""Session hit@5: a setting whose session hit on the choosing dialogues is below the best baseline's
there (the default's when no baseline is given) is not chosen."""


def heldout(
    grid: Mapping[str, Sequence[Rows]], baselines: Mapping[str, Mapping[str, Rows]] | None = None
) -> dict[str, Any]:
    """Held-out and in-sample figures of ``h2h``'s settings, and the baselines' on the same folds.

    Args:
        grid: metric → per setting (setting 0 = the default) its rows; must hold
            :data:`CHOICE_METRIC`, on which every choice is made, among the settings whose
            :data:`GUARD_METRIC` on the choosing dialogues is not below the best baseline's (the
            default's without baselines; when ``grid`` holds it); every metric is scored with the
            same choices.
        baselines: method → metric → its rows (no choice: its in-sample figure is its held-out one).

    Returns:
        ``{"choices": {dialogue: setting}, "in_sample_choice": setting, "metrics": {metric:
        {"heldout": summary, "in_sample": summary, "default": summary}}, "baselines": {method:
        {metric: summary}}}``, each summary as :func:`_summary` (mean, n, per-fold means and
        their min and max; overall and per task type).

    Raises:
        ValueError: no setting, no :data:`CHOICE_METRIC` rows, or a metric with another number
            of settings.

    Example: settings s0, s1 over dialogues d1 (s1 better) and d2 (s0 better): d1 is scored with s0
    (chosen on d2) and d2 with s1 (chosen on d1) — held out, each loses what it gained in-sample.
    """
    choice_rows = grid.get(CHOICE_METRIC)
    if not choice_rows:
        raise ValueError(f"heldout: no setting with {CHOICE_METRIC} rows to choose among")
    guard = grid.get(GUARD_METRIC)
    if guard is not None and len(guard) != len(choice_rows):
        raise ValueError(f"heldout: {GUARD_METRIC} has {len(guard)} settings, {CHOICE_METRIC} {len(choice_rows)}")
    floor = [m[GUARD_METRIC] for m in (baselines or {}).values() if GUARD_METRIC in m]
    choices = lodo_choices(choice_rows, guard, floor)
    full = choose(choice_rows, set(choices), guard, floor)
    metrics: dict[str, Any] = {}
    for metric, rows in grid.items():
        if len(rows) != len(choice_rows):
            raise ValueError(f"heldout: {metric} has {len(rows)} settings, {CHOICE_METRIC} {len(choice_rows)}")
        metrics[metric] = {
            "heldout": _summary(scored_by(choices, rows, full)),
            "in_sample": _summary(scored_by({}, rows, full)),
            "default": _summary(list(rows[0].values())),
        }
    return {
        "choices": choices,
        "in_sample_choice": full,
        "metrics": metrics,
        "baselines": {
            name: {metric: _summary(list(rows.values())) for metric, rows in by_metric.items()}
            for name, by_metric in (baselines or {}).items()
        },
    }


def _cell(summary: Mapping[str, Any] | None) -> str:
    if not summary:
        return "–"
    return f"{summary['mean']:.3f} ({summary['min']:.2f}–{summary['max']:.2f})"


def table(result: Mapping[str, Any], metric: str, keys: Sequence[tuple[str, str]]) -> str:
    """Markdown table of one metric: rows ``keys`` (``(label, summary key)``: overall, task types),
    columns n, every baseline, ``h2h`` in-sample and held-out; a cell is ``mean (min–max over folds)``."""
    names = list(result["baselines"])
    head = ["row", "n", *names, "h2h in-sample", "**h2h held-out**"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    m = result["metrics"][metric]
    for label, key in keys:
        ho = m["heldout"].get(key)
        if ho is None:
            continue
        cells = [_cell(result["baselines"][b].get(metric, {}).get(key)) for b in names]
        cells += [_cell(m["in_sample"].get(key)), _cell(ho)]
        lines.append(f"| {label} | {ho['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def switch_check(
    without: Rows, with_: Rows, guard: tuple[Rows, Rows] | None = None, floor: Sequence[Rows] = ()
) -> dict[str, Any]:
    """Does one component transfer? LODO choice between the setting without it (index 0: kept on
    ties, the conservative reading) and with it, on :data:`CHOICE_METRIC` rows.

    Returns ``{"without", "with", "heldout"}`` (overall means: always without, always with, each
    dialogue by the choice made on the others), ``"folds_with"`` (folds whose choice was *with*) and,
    with ``guard``, the same three means of the guard rows as ``"guard_without"``, ``"guard_with"``,
    ``"guard_heldout"`` (scored with the same choices).
    The component helps held out when ``heldout > without``; it helps only in-sample when
    ``with > without`` but ``heldout <= without``. ``guard``: session hit@5 rows (without, with),
    ``floor``: the baselines' (:func:`choose`).

    Example: with it, d1 gains 1.0 and d2 loses 0.5: held out d1 is scored without it (chosen on d2,
    where it lost) and d2 with it (chosen on d1) — the gain does not transfer, the loss does.
    """
    choices = lodo_choices([without, with_], list(guard) if guard else None, floor)
    out: dict[str, Any] = {}
    for prefix, pair in (("", (without, with_)), ("guard_", guard)):
        if pair is None:
            continue
        out[f"{prefix}without"] = _summary(list(pair[0].values()))["overall"]["mean"]
        out[f"{prefix}with"] = _summary(list(pair[1].values()))["overall"]["mean"]
        out[f"{prefix}heldout"] = _summary(scored_by(choices, list(pair), 0))["overall"]["mean"]
    out["folds_with"] = sum(choices.values())
    return out
