"""Run folders as the viewer and ``h2hmem runs list`` see them: manifest facts, counts, headline
score, and one row per question joined from ``predictions.jsonl`` and ``scores/*.jsonl``.

Read-only: nothing is written into a run folder. A run not scored yet gets its lexical scores and
evidence hit computed in memory (the same functions ``h2hmem evaluate`` uses); judge scores come
only from ``scores/judge.jsonl``. Manifest and summary are read as :mod:`h2hmem.records` models;
a missing or unreadable one reads as unknown, never an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..metrics import ZERO, lexical_scores, question_order, read_score_file, score_evidence
from ..records import (
    MANIFEST,
    PREDICTIONS,
    Manifest,
    Prediction,
    RunStore,
    ScoresSummary,
    read_predictions,
    read_scores_summary,
)

HIT_K = 5
"""Evidence cut-off of the question table's hit/miss column (the published top-k)."""
_KEY_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def headline(summary: ScoresSummary | None) -> tuple[str, float | None]:
    """``(metric name, micro average over all questions)`` of a scores summary: the LLM judge
    score when the run was judged (and the judge is not marked ``stale``: some answers changed
    since), else the official F1, else (a retrieval-only run: no answers) the session recall@5 of
    the evidence; ``("", None)`` when unscored (``summary`` None)."""
    if summary is None:
        return "", None
    judge, lexical, evidence = summary.metrics.judge, summary.metrics.lexical, summary.metrics.evidence
    for section, fld, name in (
        (judge, "score", "judge"),
        (lexical, "f1", "F1"),
        (evidence, "recall@5", "evidence recall@5"),
    ):
        if section is None or section.aggregate is None or (section is judge and judge.stale is not None):
            continue
        m = section.aggregate.overall(fld)
        if m is not None:
            return name, m.mean
    return "", None


def read_summary(run_dir: Path) -> ScoresSummary | None:
    """``scores/summary.json``; None when absent or unreadable (the viewer shows "not scored")."""
    try:
        return read_scores_summary(run_dir)
    except (OSError, ValueError):
        return None


@dataclass
class RunInfo:
    """One row of ``h2hmem runs list`` and of the viewer's run list."""

    dir: Path
    run_id: str
    method: str
    model: str
    preset: str | None
    protocol: str
    split: str
    status: str
    """``complete``, ``incomplete`` (interrupted or running), or ``unknown`` (no manifest)."""
    questions: int | None
    """Questions selected (manifest counts), None when unknown."""
    recorded: int
    """Questions with a record in ``predictions.jsonl`` (its last complete line), failed ones included."""
    failed: int
    """Recorded questions whose record is a failure (``error`` set)."""
    metric: str
    score: float | None
    stale: bool = False
    """The manifest or predictions are newer than the scores, or a ``stale`` flag is set."""
    retrieval_only: bool = False
    """A ``--retrieval-only`` run: its records hold evidence, no answers."""
    damaged_lines: list[int] = field(default_factory=list)
    """Line numbers (1-based) of ``predictions.jsonl`` that are not JSON objects with a ``question_id``
    (a quick check; the other commands validate every field and refuse the file at its first bad line)."""

    @property
    def name(self) -> str:
        """The run folder's name (what other commands are given); ``run_id`` is the manifest's, which
        differs in a copied or renamed folder."""
        return self.dir.name

    @property
    def answered(self) -> int:
        """Recorded questions with an answer (not failed); 0 for a retrieval-only run."""
        return 0 if self.retrieval_only else self.recorded - self.failed

    def as_json(self) -> dict[str, Any]:
        return {
            "dir": str(self.dir),
            "run_id": self.run_id,
            "method": self.method,
            "model": self.model,
            "preset": self.preset,
            "protocol": self.protocol,
            "split": self.split,
            "status": self.status,
            "questions": self.questions,
            "recorded": self.recorded,
            "answered": self.answered,
            "failed": self.failed,
            "headline_metric": self.metric or None,
            "headline_score": self.score,
            "stale": self.stale,
            "retrieval_only": self.retrieval_only,
            "damaged_lines": self.damaged_lines,
        }


def _count_lines(path: Path) -> tuple[int, int, list[int]]:
    """(distinct question ids, failed among them, numbers of the damaged lines) of a predictions file,
    cheaply (no validation). A damaged line is a complete line that is not a JSON object with a
    ``question_id`` (every other reader refuses the file there); a torn last line (no newline: a
    killed writer) is not counted, a resume repairs it."""
    last: dict[str, bool] = {}
    damaged: list[int] = []
    try:
        with path.open("rb") as f:
            for n, line in enumerate(f, 1):
                if not line.endswith(b"\n"):
                    break  # torn tail
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    rec = None
                if isinstance(rec, dict) and "question_id" in rec:
                    last[str(rec["question_id"])] = rec.get("error") is not None
                else:
                    damaged.append(n)
    except OSError:
        return 0, 0, []
    return len(last), sum(last.values()), damaged


def run_info(run_dir: Path) -> RunInfo:
    """Facts of one run folder (missing manifest fields read as unknown, never an error)."""
    d = Path(run_dir)
    try:
        manifest = RunStore(d).read_manifest()
    except ValueError:
        manifest = None
    found = manifest is not None
    manifest = manifest or Manifest()
    summary = read_summary(d)
    recorded, failed, damaged = _count_lines(d / PREDICTIONS)
    metric, score = headline(summary)
    scores = d / "scores" / "summary.json"
    stale = summary is not None and summary.metrics.judge is not None and summary.metrics.judge.stale is not None
    if scores.is_file() and (d / PREDICTIONS).is_file():
        stale = stale or (d / PREDICTIONS).stat().st_mtime > scores.stat().st_mtime
    return RunInfo(
        dir=d,
        run_id=manifest.run_id or d.name,
        method=manifest.method or "?",
        model=manifest.model or "?",
        preset=manifest.config.preset or None,
        protocol=manifest.protocol or "?",
        split=manifest.split or "?",
        status=manifest.status or ("incomplete" if found else "unknown"),
        questions=manifest.counts.questions if manifest.counts is not None else None,
        recorded=recorded,
        failed=failed,
        metric=metric,
        score=score,
        stale=stale,
        retrieval_only=manifest.retrieval_only,
        damaged_lines=damaged,
    )


def find_runs(out_dir: Path) -> list[Path]:
    """Run folders directly under ``out_dir`` (those holding a manifest or predictions), by name."""
    out = Path(out_dir)
    if not out.is_dir():
        raise FileNotFoundError(f"{out}: no such folder (the folder holding run directories, default runs/)")
    return sorted(p for p in out.iterdir() if p.is_dir() and ((p / MANIFEST).is_file() or (p / PREDICTIONS).is_file()))


@dataclass
class QuestionRow:
    """One question of one run, with every score the table filters on."""

    pred: Prediction
    lexical: dict[str, Any]
    judge: dict[str, Any] | None
    hit: bool | None
    """Evidence hit@5 (a gold session among the first five units); None when excluded or n/a."""

    @property
    def id(self) -> str:
        return self.pred.question_id

    @property
    def f1(self) -> float:
        return float(self.lexical.get("f1") or 0.0)

    @property
    def judge_score(self) -> float | None:
        return self.judge.get("score") if self.judge else None

    @property
    def worst_key(self) -> tuple:
        """Sort key, worst first: headline score (judge when judged, else F1; failed = 0), F1, question order."""
        s = 0.0 if self.pred.failed else (self.judge_score if self.judge_score is not None else self.f1)
        return (s, self.f1, question_order(self.id))


@dataclass
class ViewRun:
    """A run folder loaded for the viewer."""

    key: str
    """URL name (the run id; made unique among the folders given)."""
    dir: Path
    manifest: Manifest
    """An empty :class:`~h2hmem.records.Manifest` when the folder has none."""
    summary: ScoresSummary | None
    """None when the run is not scored (or its summary is unreadable)."""
    info: RunInfo
    rows: dict[str, QuestionRow] = field(default_factory=dict)
    """Question id → row, in question order."""

    @property
    def has_report(self) -> bool:
        return (self.dir / "report.html").is_file()

    @property
    def data_root(self) -> Path | None:
        root = self.manifest.data_root
        return Path(root) if root else None


def _by_id(path: Path) -> dict[str, dict[str, Any]]:
    return {r["question_id"]: r for r in read_score_file(path)} if path.is_file() else {}


def load_view_run(run_dir: Path, key: str) -> ViewRun:
    """Read a run folder for the viewer.

    Raises:
        FileNotFoundError: not a folder, or no ``predictions.jsonl``.
        ValueError: a damaged predictions, scores or manifest file (the message names it).
    """
    d = Path(run_dir)
    if not (d / PREDICTIONS).is_file():
        raise FileNotFoundError(f"{d}: no {PREDICTIONS} (is this a run directory?)")
    manifest = RunStore(d).read_manifest() or Manifest()
    run = ViewRun(key=key, dir=d, manifest=manifest, summary=read_summary(d), info=run_info(d))
    preds = sorted(read_predictions(d), key=lambda p: question_order(p.question_id))
    lexical, judge, evidence = (_by_id(d / "scores" / f"{m}.jsonl") for m in ("lexical", "judge", "evidence"))
    if not evidence:  # not scored yet: the same records `h2hmem evaluate` would write (gold from the records)
        evidence = {r["question_id"]: r for r in score_evidence(preds, ks=(HIT_K,))[0]}
    for p in preds:
        lex = lexical.get(p.question_id)
        if lex is None:
            lex = (ZERO if p.failed else lexical_scores(p.answer or "", p.gold)).model_dump()
        hit_value = (evidence.get(p.question_id) or {}).get(f"hit@{HIT_K}")
        hit = None if hit_value is None else bool(hit_value)
        run.rows[p.question_id] = QuestionRow(pred=p, lexical=lex, judge=judge.get(p.question_id), hit=hit)
    return run


def unique_keys(dirs: list[Path]) -> list[str]:
    """URL keys for run folders: the run id (folder name), with ``-2``, ``-3``… for repeats."""
    keys: list[str] = []
    for d in dirs:
        base = _KEY_SAFE.sub("-", Path(d).resolve().name).strip("-") or "run"
        key, n = base, 2
        while key in keys:
            key, n = f"{base}-{n}", n + 1
        keys.append(key)
    return keys
