"""Comparisons across runs: paired differences of every pair of runs, and pooled repeated runs.

Both use the report's headline score per question (LLM judge when every run has one, else the
official F1; failed answers score 0) and the statistics of :mod:`h2hmem.metrics._paired`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import defaults
from ..data import MainCategory
from ..metrics import paired_by_group, pool_runs
from ._figures import OKABE_ITO, STYLE, _save, plt
from ._runs import RunResult
from ._scores import ScoreMetric
from ._table import Column, ReportTable

GROUPS = ("overall", *(c.value for c in MainCategory))

_NOT_CONFIG = ("selection", "limit")
"""Identity fields that choose questions rather than configure the method: runs differing only
in them are repeats of one configuration (``--group``)."""


def question_scores(run: RunResult, metric: ScoreMetric) -> dict[str, float | None]:
    """Question id → headline score of ``run`` (None = not scored)."""
    return dict(run.judge if metric.source == "judge" else run.f1)


def _categories(runs: list[RunResult]) -> dict[str, str]:
    return {p.question_id: p.main_category for r in runs for p in r.predictions}


def paired_table(
    runs: list[RunResult], metric: ScoreMetric, *, n_boot: int = defaults.N_BOOT, seed: int = 0
) -> ReportTable | None:
    """For each pair (A, B) of runs in report order: B − A overall and per main category, with the
    paired bootstrap 95% CI and the sign-flip p-value; None for a single run."""
    if len(runs) < 2:
        return None
    cats = _categories(runs)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            sa, sb = question_scores(a, metric), question_scores(b, metric)
            res = paired_by_group(sa, sb, cats, n_boot=n_boot, seed=seed)
            common = res["overall"].n
            if common == 0:
                notes.append(
                    f"{b.label} − {a.label}: the runs scored no question in common ({len(sa)} and {len(sb)} "
                    "questions): no paired comparison is possible."
                )
            elif common < len(sa) or common < len(sb):
                notes.append(
                    f"{b.label} − {a.label}: the runs scored different question sets ({len(sa)} and "
                    f"{len(sb)} questions); the comparison uses the {common} both scored."
                )
            for g in GROUPS:
                d = res.get(g)
                if d is None or d.n == 0:
                    continue
                rows.append(
                    {
                        "kind": "average" if g == "overall" else "group",
                        "pair": f"{b.label} − {a.label}",
                        "a": a.label,
                        "b": b.label,
                        "group": g,
                        "n": d.n,
                        "mean_a": d.mean_a,
                        "mean_b": d.mean_b,
                        "diff": d.diff,
                        "diff_ci": list(d.ci) if d.ci else None,
                        "p": d.p_value,
                        "test": d.test,
                    }
                )
    cols = [
        Column("pair", "B − A"),
        Column("group", "group"),
        Column("n", "n", "int"),
        Column("mean_a", "A", "float"),
        Column("mean_b", "B", "float"),
        Column("diff", "difference", "score"),
        Column("p", "p", "float", digits=4),
        Column("test", "test"),
    ]
    return ReportTable(
        "paired",
        f"Paired differences ({metric.name})",
        cols,
        rows,
        caption="Difference of the mean score, B − A, over the questions both runs scored; 95% paired "
        "bootstrap CI (questions resampled, pairs kept together); two-sided paired sign-flip "
        "permutation p-value.",
        notes=notes,
    )


def config_key(run: RunResult) -> str:
    """What makes runs repeats of one configuration: the manifest identity without the question
    choice (selection, limit); runs without a manifest fall back to method and model."""
    identity = dict(run.manifest.identity or {"method": run.method, "model": run.model})
    for k in _NOT_CONFIG:
        identity.pop(k, None)
    return json.dumps(identity, sort_keys=True, default=str)


def group_table(
    runs: list[RunResult], metric: ScoreMetric, *, n_boot: int = defaults.N_BOOT, seed: int = 0
) -> ReportTable:
    """One row per configuration and group (overall, main categories): runs, mean ± sd of the run
    means, and the pooled questions' mean with its bootstrap 95% CI."""
    configs: dict[str, list[RunResult]] = {}
    for r in runs:
        configs.setdefault(config_key(r), []).append(r)
    rows = []
    for members in configs.values():
        label = " + ".join(r.label for r in members) if len(members) <= 3 else f"{members[0].method} ×{len(members)}"
        for g in GROUPS:
            per_run = []
            for r in members:
                scores = question_scores(r, metric)
                cats = {p.question_id: p.main_category for p in r.predictions}
                per_run.append([v for q, v in scores.items() if v is not None and (g == "overall" or cats.get(q) == g)])
            pooled = pool_runs(per_run, n_boot=n_boot, seed=seed, key=g)
            if pooled.runs == 0:
                continue
            rows.append(
                {
                    "kind": "average" if g == "overall" else "group",
                    "config": label,
                    "method": members[0].method,
                    "group": g,
                    "runs": pooled.runs,
                    "mean": pooled.mean,
                    "sd": pooled.sd,
                    "pooled_n": pooled.pooled_n,
                    "pooled": pooled.pooled_mean,
                    "pooled_ci": list(pooled.pooled_ci) if pooled.pooled_ci else None,
                    "run_means": list(pooled.run_means),
                }
            )
    cols = [
        Column("config", "configuration"),
        Column("group", "group"),
        Column("runs", "runs", "int"),
        Column("mean", "mean of runs", "float"),
        Column("sd", "sd across runs", "float"),
        Column("pooled_n", "pooled questions", "int"),
        Column("pooled", "pooled mean", "score"),
    ]
    return ReportTable(
        "groups",
        f"Repeated runs pooled ({metric.name})",
        cols,
        rows,
        caption="Runs with the same configuration (manifest identity apart from the question "
        "selection) pooled: mean ± sample sd of the run means, and the mean over all their "
        "questions with a bootstrap 95% CI.",
    )


def paired_figure(table: ReportTable, metric_name: str, path: Path) -> Path | None:
    """Horizontal dot-and-interval plot of every paired difference (B − A) with its 95% CI, a
    vertical line at 0; one colour per pair. None when the table is empty."""
    rows = [r for r in table.rows if r.get("diff") is not None]
    if not rows:
        return None
    pairs = list(dict.fromkeys(r["pair"] for r in rows))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(10, 0.9 + 0.32 * len(rows)))
        labels = []
        for y, r in enumerate(reversed(rows)):
            colour = OKABE_ITO[pairs.index(r["pair"]) % len(OKABE_ITO)]
            ci = r.get("diff_ci")
            if ci:
                ax.errorbar(
                    r["diff"],
                    y,
                    xerr=[[r["diff"] - ci[0]], [ci[1] - r["diff"]]],
                    fmt="o",
                    color=colour,
                    ecolor=colour,
                    elinewidth=1.2,
                    capsize=3,
                    markersize=4,
                )
            else:
                ax.plot(r["diff"], y, "o", color=colour, markersize=4)
            stars = "" if r.get("p") is None else f"  p={r['p']:.3g}"
            pair = r["pair"] if len(r["pair"]) <= 60 else r["pair"][:57] + "…"
            labels.append(f"{pair} · {r['group']}{stars}" if len(pairs) > 1 else f"{r['group']}{stars}")
        ax.axvline(0.0, color="#555555", linewidth=0.8)
        ax.set_yticks(range(len(rows)), labels)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel(f"difference in {metric_name} (B − A), 95% paired bootstrap CI")
        ax.set_title(pairs[0][:90] if len(pairs) == 1 else "Paired differences")
        return _save(fig, path, 0)
