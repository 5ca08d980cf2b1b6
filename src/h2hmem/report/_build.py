"""``build_report``: one or several run directories → ``report.md``, ``report.html``, ``figures/``
and ``summary.json``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import defaults
from .._atomic import atomic_write_text
from ._compare import group_table, paired_figure, paired_table
from ._efficiency import efficiency_table
from ._figures import category_figure, difficulty_figure, efficiency_figure, evidence_figure, subtype_figure
from ._published import published_source
from ._render import Report, Section, render_html, render_markdown
from ._runs import RunResult, label_runs, load_run, safe_name
from ._scores import ScoreMetric, comparable_with_published, primary_metric, run_aggregate
from ._table import ReportTable
from ._tables import comparison_table, difficulty_table, evidence_table, run_metric_tables, runs_table, subtype_table
from ._worst import DEFAULT_WORST, worst_questions

SCHEMA = "h2hmem/report-summary/1"
REPORTS_DIR = Path("reports")
"""Parent of the default output folder of a multi-run report (relative to the working directory)."""
_MAX_NAME = 80


@dataclass(frozen=True)
class ReportPaths:
    """Where a report was written."""

    out_dir: Path
    markdown: Path
    html: Path
    summary: Path
    figures: dict[str, Path]
    """Figure id (``"main_categories"``, ``"subtypes"``, ``"difficulty"``, ``"evidence"``,
    ``"efficiency"``) → PNG path."""
    tables: dict[str, ReportTable]
    """Every table of the report by id (as in ``summary.json``), e.g. ``"comparison"``."""


def default_out_dir(runs: Sequence[RunResult]) -> Path:
    """The run directory for one run; ``reports/<run ids joined by "-vs-">`` for several. The name
    has no timestamp (the same runs give the same folder); when ids repeat or the name would pass
    80 characters, it is shortened and an 8-hex SHA-256 of the resolved run paths is appended."""
    if len(runs) == 1:
        return runs[0].dir
    ids = [safe_name(r.run_id) for r in runs]
    name = "-vs-".join(ids)
    if len(set(ids)) < len(ids) or len(name) > _MAX_NAME:
        digest = hashlib.sha256("\n".join(str(r.dir.resolve()) for r in runs).encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9].rstrip('-_.')}-{digest}"
    return REPORTS_DIR / name


def _question_set(run: RunResult) -> str:
    """What decides which questions a run answered: split (with the fingerprint of that split's files, which
    differs between splits of one dataset), selection and ``--limit``."""
    m = run.manifest
    limit = m.config.limit
    chosen = m.identity.get("selection")
    return (
        f"split {m.split or '?'} (files {str(m.dataset_fingerprint or '?')[:12]}), "
        + (f"selection {json.dumps(chosen, sort_keys=True)}, " if chosen else "")
        + (f"first {limit} questions" if limit else "all questions")
    )


def _notes(runs: list[RunResult], metric: ScoreMetric) -> list[str]:
    notes = [f"{r.label}: {n}" for r in runs for n in r.notes]
    if len({_question_set(r) for r in runs}) > 1:
        notes.append(
            "The runs answered different question sets, so their scores are not directly comparable ("
            + "; ".join(f"{r.label}: {_question_set(r)}" for r in runs)
            + ")."
        )
    if metric.source == "lexical":
        judged = [r.label for r in runs if r.has_judge]
        notes.append(
            "Headline score: the official set-based F1, because "
            + ("no run has" if not judged else "not every run has")
            + " LLM-judge scores "
            "(score with `h2hmem evaluate --metrics judge`). F1 is not comparable with the paper's judge scores."
        )
    elif not comparable_with_published(metric):
        notes.append(
            f"The judge ({', '.join(metric.judge_models)}) is not the published judge "
            f"({published_source()['judge']}): scores are not comparable with published numbers."
        )
    return notes


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def build_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path | None = None,
    *,
    worst: int = DEFAULT_WORST,
    n_boot: int = defaults.N_BOOT,
    on_step: Callable[[str], None] | None = None,
    group: bool = False,
    selection: Any = None,
) -> ReportPaths:
    """Build the report of one or several runs.

    Runs without ``scores/summary.json`` are scored first with the offline metrics (lexical +
    evidence recall@k); the LLM judge is never called. The headline score is the judge score when
    every run has one, else the official F1 (see :mod:`h2hmem.report._scores`).

    Args:
        run_dirs: run directories (each with ``predictions.jsonl``), in display order.
        out_dir: output folder; default :func:`default_out_dir` (the run directory for one run,
            ``reports/<run ids>`` for several).
        worst: how many worst-scored questions to show (default 15).
        n_boot: bootstrap resamples when a run must be scored (default 1,000, docs/metric-definitions.md §3).
        on_step: called with a short description before each step (progress display).
        group: add the table pooling repeated runs of one configuration (mean ± sd across runs,
            CI of the pooled questions).
        selection: a :class:`~h2hmem.run.Selection`: report only those questions of each run
            (scores re-aggregated from ``scores/*.jsonl``; recorded in ``summary.json``).

    With two or more runs, a "paired differences" table and figure compare every pair of runs
    on the questions both scored (:mod:`h2hmem.report._compare`).

    Returns:
        :class:`ReportPaths`. ``summary.json`` = ``{"schema", "runs": [...], "headline_metric",
        "published_source", "notes", "tables": {table id: {"title", "caption", "notes",
        "columns": [{"key", "label", "kind"}], "rows": [...]}}, "figures": {id: relative path}}``.

    Raises:
        ValueError: no run directories, the same directory twice, or a bad run file (named).
        FileNotFoundError: a directory without ``predictions.jsonl``.
    """
    step = on_step or (lambda _: None)
    if not run_dirs:
        raise ValueError("no run directories given")
    resolved = [Path(d).resolve() for d in run_dirs]
    if len(set(resolved)) < len(resolved):
        raise ValueError("the same run directory is given twice")
    runs = []
    for d in run_dirs:
        step(f"loading {d}")
        runs.append(load_run(d, n_boot=n_boot, selection=selection))
    label_runs(runs)
    out = Path(out_dir) if out_dir is not None else default_out_dir(runs)
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    metric = primary_metric(runs)

    step("tables")
    t_runs = runs_table(runs)
    t_cmp = comparison_table(runs, metric)
    t_sub = subtype_table(runs, metric)
    t_diff = difficulty_table(runs, metric)
    t_ev = evidence_table(runs)
    t_eff = efficiency_table(runs)
    t_worst = worst_questions(runs, metric, worst)
    # the resample count the scores were aggregated with (not n_boot, which applies to unscored runs only),
    # so the same scored runs always give the same report
    boot = max((agg.n_boot for r in runs if (agg := run_aggregate(r, metric.source))), default=0) or n_boot
    t_pair = paired_table(runs, metric, n_boot=boot)
    t_group = group_table(runs, metric, n_boot=boot) if group else None
    per_run = {r.label: run_metric_tables(r) for r in runs}

    step("figures")
    figs: dict[str, Path] = {
        "main_categories": category_figure(t_cmp, metric.name, figdir / "main_categories.png", metric.short),
        "subtypes": subtype_figure(t_sub, metric.name, figdir / "subtypes.png", metric.short),
        "difficulty": difficulty_figure(t_diff, metric.name, figdir / "difficulty.png", metric.short),
    }
    ev = evidence_figure(t_ev, figdir / "evidence.png")
    if ev is not None:
        figs["evidence"] = ev
    elif (figdir / "evidence.png").exists():
        (figdir / "evidence.png").unlink()  # left by an earlier report of runs that had evidence
    figs["efficiency"] = efficiency_figure(t_eff, figdir / "efficiency.png")
    paired_png = paired_figure(t_pair, metric.short, figdir / "paired.png") if t_pair is not None else None
    if paired_png is not None:
        figs["paired"] = paired_png

    who = " vs ".join(r.label for r in runs)
    sections = [
        Section("runs", "Runs", tables=[t_runs]),
        Section(
            "comparison",
            "Main categories",
            tables=[t_cmp],
            figures=[(figs["main_categories"], f"{metric.name} per main category, 95% bootstrap CIs.")],
        ),
        *(
            [
                Section(
                    "paired",
                    "Paired differences",
                    tables=[t_pair],
                    figures=[(paired_png, "Differences B − A with 95% paired bootstrap CIs.")] if paired_png else [],
                )
            ]
            if t_pair is not None
            else []
        ),
        *([Section("groups", "Repeated runs pooled", tables=[t_group])] if t_group is not None else []),
        Section(
            "subtypes",
            "Sub-types",
            tables=[t_sub],
            figures=[(figs["subtypes"], f"{metric.name} per sub-type, grouped by main category, 95% CIs.")],
        ),
        Section(
            "difficulty",
            "Difficulty",
            tables=[t_diff],
            figures=[(figs["difficulty"], f"{metric.name} by difficulty, 95% CIs.")],
        ),
        Section(
            "evidence",
            "Evidence recall",
            tables=[t_ev],
            figures=[(ev, "Evidence recall@5 and hit@5 per sub-type.")] if ev is not None else [],
            text=[] if ev is not None else ["No run reports evidence units: evidence recall is n/a."],
        ),
        Section(
            "efficiency",
            "Efficiency",
            tables=[t_eff],
            figures=[(figs["efficiency"], "Tokens, time and cost per stage (measured; see the table caption).")],
        ),
        Section("worst", "Worst-scored questions", worst=t_worst),
    ]
    for r in runs:
        desc = r.manifest.method_description.model_dump(mode="json")
        memory = r.manifest.component("memory")
        text = (
            [f"Directory: {r.dir}"]
            + (
                [f"Method options (preset {r.manifest.preset}): {json.dumps(memory.options, ensure_ascii=False)}"]
                if memory is not None and memory.options
                else []
            )
            + ([f"Method description: {json.dumps(desc, ensure_ascii=False, sort_keys=True)}"] if desc else [])
        )
        sections.append(
            Section(f"run-{safe_name(r.label)}", f"Details — {r.label}", text=text, tables=per_run[r.label], fold=True)
        )
    notes = _notes(runs, metric)
    report = Report(f"H2HMem report — {who}", notes, sections)

    step("writing")
    tables = [t_runs, t_cmp, *(t for t in (t_pair, t_group) if t is not None), t_sub, t_diff, t_ev, t_eff, t_worst] + [
        t for ts in per_run.values() for t in ts
    ]
    paths = ReportPaths(
        out, out / "report.md", out / "report.html", out / "summary.json", figs, {t.id: t for t in tables}
    )
    _write(paths.markdown, render_markdown(report, out))
    _write(paths.html, render_html(report))
    summary: dict[str, Any] = {
        "schema": SCHEMA,
        "runs": [
            {
                "label": r.label,
                "run_id": r.run_id,
                "dir": str(r.dir),
                "method": r.method,
                "model": r.model,
                "protocol": r.protocol,
                "judge": r.summary.metrics.judge.model if r.summary.metrics.judge else None,
                "label_comparability": r.summary.label,
            }
            for r in runs
        ],
        "headline_metric": {
            "source": metric.source,
            "field": metric.field,
            "name": metric.name,
            "comparable_with_published": comparable_with_published(metric),
        },
        "published_source": published_source(),
        "notes": notes,
        **({"selection": selection.recorded()} if selection is not None and not selection.is_empty else {}),
        "tables": {t.id: t.to_json() for t in tables},
        "figures": {k: p.relative_to(out).as_posix() for k, p in figs.items()},
    }
    _write(paths.summary, json.dumps(summary, ensure_ascii=False, indent=1))
    return paths
