"""The scorer plugin API: the example package examples/answer_length_scorer, found through its
entry point (the installed distribution when scripts/setup.sh installed it, else the same entry
point read from its pyproject.toml), used by `h2hmem evaluate --metrics lexical,answer-length`
with no edit inside h2hmem; its aggregate lands in scores/summary.json and in the report."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.metrics import (
    BUILTIN_SCORERS,
    LexicalScorer,
    ScorerLoadError,
    ScorerPluginWarning,
    UnknownScorerError,
    _scorer_registry,
    available_scorers,
    evaluate_run,
    register_scorer,
    resolve_scorers,
    summary_tables,
    unregister_scorer,
)
from h2hmem.records import Prediction, read_scores_summary
from h2hmem.report import build_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "answer_length_scorer"
DIST = "h2hmem-answer-length-scorer"

# (question id, task type, answer, error): lengths by hand: 2, 6 (She|moved|to|Lisbon|in|2019), failed, 1
QUESTIONS = [
    ("dyadic/dialogue1/session1/q0", "UPR", "red bike", None),
    ("dyadic/dialogue1/session2/q0", "UPR", "  She moved to   Lisbon in\t2019 ", None),
    ("dyadic/dialogue2/session1/q0", "CRR", None, "RuntimeError: boom"),
    ("multi-party/dialogue1/session1/q0", "CRR", "yes", None),
]


def _installed() -> bool:
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(params=["installed", "from-pyproject"])
def plugin(request, monkeypatch):
    """The example scorer registered through its entry point: the installed distribution's, or
    (not installed) the entry point its pyproject.toml declares, with the package on sys.path."""
    if request.param == "installed":
        if not _installed():
            pytest.skip(f"{DIST} is not installed (scripts/setup.sh installs it)")
        yield
        return
    declared = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]["h2hmem.scorers"]
    eps = [metadata.EntryPoint(name, value, "h2hmem.scorers") for name, value in declared.items()]
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.setattr(_scorer_registry, "entry_points", lambda group=None: [e for e in eps if e.group == group])
    yield
    for name in [m for m in sys.modules if m.split(".")[0] == "answer_length_scorer"]:
        del sys.modules[name]


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    lines = []
    for qid, tt, answer, error in QUESTIONS:
        split, dialogue, session, _ = qid.split("/")
        p = Prediction(
            question_id=qid,
            split=split,
            dialogue=dialogue,
            session=session,
            task_type=tt,
            main_category="Memory Recall",
            difficulty="easy",
            question="q?",
            gold="red bike",
            answer=answer,
            error=error,
            method="fake",
        )
        lines.append(p.model_dump_json())
    (d / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    (d / "manifest.json").write_text(json.dumps({"method": "fake", "model": "fake:model"}))
    return d


def test_evaluate_cli_with_the_plugin(plugin, run_dir: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["evaluate", str(run_dir), "--metrics", "lexical,answer-length", "--bootstrap", "0", "--quiet"],
        env={"COLUMNS": "200"},
    )
    assert res.exit_code == 0, res.output
    assert "Answer length (whitespace tokens)" in res.output

    lines = [json.loads(x) for x in (run_dir / "scores" / "answer-length.jsonl").read_text().splitlines()]
    assert [r["answer_tokens"] for r in lines] == [2, 6, None, 1]
    assert [r["failed"] for r in lines] == [False, False, True, False]
    assert [r["excluded"] for r in lines] == [None, None, "failed_answer", None]

    summary = read_scores_summary(run_dir)
    assert summary is not None and set(summary.metrics.sections()) == {"lexical", "answer-length"}
    agg = summary.metrics.sections()["answer-length"].aggregate
    assert agg is not None
    overall = agg.splits["all"].overall
    m = overall.metrics["answer_tokens"]
    # micro: (2 + 6 + 1) / 3 answered; macro: mean of UPR (4.0) and CRR (1.0); the failure is excluded
    assert (m.n, overall.n_total, overall.failed) == (3, 3, 0)
    assert m.mean == pytest.approx(3.0) and m.macro == pytest.approx(2.5)
    assert agg.splits["dyadic"].overall.metrics["answer_tokens"].mean == pytest.approx(4.0)
    assert agg.splits["multi-party"].overall.metrics["answer_tokens"].mean == pytest.approx(1.0)
    assert agg.splits["all"].task_type["CRR"].metrics["answer_tokens"].n == 1

    # provenance: each scorer once, the plugin's from its own distribution when installed
    scorers = {c.name: c for c in summary.components if c.kind == "scorer"}
    assert list(scorers) == ["lexical", "answer-length"]
    assert scorers["answer-length"].target == "answer_length_scorer:AnswerLengthScorer"
    assert scorers["lexical"].distribution in ("h2hmem", None)  # None: h2hmem run from a source tree only
    if _installed():
        assert scorers["answer-length"].distribution == DIST and scorers["answer-length"].version == "0.1.0"
        assert summary.environment is not None and summary.environment.distributions.get(DIST) == "0.1.0"
    assert summary.environment is not None and summary.environment.python

    # the report shows the plugin's aggregate per run, values as in summary.json
    paths = build_report([run_dir], tmp_path / "report", n_boot=0)
    tables = json.loads(paths.summary.read_text())["tables"]
    (key,) = [k for k in tables if k.endswith("/answer-length/answer_tokens")]
    rows = {r["label"]: r for r in tables[key]["rows"]}
    micro = rows["Weighted average (micro)"]
    assert micro["all"] == pytest.approx(3.0) and micro["dyadic"] == pytest.approx(4.0) and micro["all_n"] == 3
    assert "Answer length (whitespace tokens)" in paths.markdown.read_text()


def test_plugin_section_reads_without_the_plugin(plugin, run_dir: Path, monkeypatch) -> None:
    """A summary written with a plugin loads (and renders) where the plugin is not installed."""
    evaluate_run(run_dir, ["lexical", "answer-length"], n_boot=0)
    monkeypatch.setattr(_scorer_registry, "entry_points", lambda group=None: [])
    assert "answer-length" not in available_scorers()
    summary = read_scores_summary(run_dir)
    assert summary is not None
    section = summary.metrics.sections()["answer-length"]
    assert section.fields == ["answer_tokens"] and section.aggregate is not None
    titles = [str(t.title) for t in summary_tables(summary)]
    assert any(t.startswith("answer-length answer_tokens") for t in titles)
    # evaluating again without the plugin keeps its file but cannot summarise it: no section
    again = evaluate_run(run_dir, ["lexical"], n_boot=0)
    assert "answer-length" not in again["metrics"] and (run_dir / "scores" / "answer-length.jsonl").is_file()


def test_unknown_metric_names_close_matches(plugin) -> None:
    with pytest.raises(UnknownScorerError, match=r"unknown metric answer-lenght \(did you mean answer-length\?\)"):
        resolve_scorers(["answer-lenght"])
    assert "answer-length" in available_scorers()


def test_a_broken_entry_point_names_itself_and_stops_only_what_asks_for_it(monkeypatch, run_dir: Path) -> None:
    # one plugin that cannot be imported, one whose entry point misnames its class: each is left out
    # with a warning naming it; evaluations and reports that do not use them go on
    eps = [
        metadata.EntryPoint("broken", "no_such_module_xyz:Scorer", "h2hmem.scorers"),
        metadata.EntryPoint("misnamed", "h2hmem.metrics:LexicalScorer", "h2hmem.scorers"),
    ]
    monkeypatch.setattr(_scorer_registry, "entry_points", lambda group=None: eps)
    monkeypatch.setattr(_scorer_registry, "_WARNED", set())
    with pytest.warns(ScorerPluginWarning) as caught:
        known = available_scorers()
    assert list(known) == list(BUILTIN_SCORERS)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "entry point 'broken'" in messages[0] and "ModuleNotFoundError" in messages[0]
    assert "the class is named 'lexical', the entry point 'misnamed'" in messages[1]
    with pytest.raises(ScorerLoadError, match="entry point 'broken'.*ModuleNotFoundError"):
        resolve_scorers(["lexical", "broken"])
    res = CliRunner().invoke(app, ["evaluate", str(run_dir), "--metrics", "lexical", "--bootstrap", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert read_scores_summary(run_dir).metrics.lexical is not None
    res = CliRunner().invoke(app, ["evaluate", str(run_dir), "--metrics", "broken"], env={"COLUMNS": "200"})
    assert res.exit_code == 2 and "entry point 'broken'" in res.output and "Traceback" not in res.output


def test_fields_must_be_fields_of_the_record_type() -> None:
    class Stray(LexicalScorer):
        name = "stray"
        fields = ("f1", "nonexistent")

    with pytest.raises(ScorerLoadError, match=r"fields \['nonexistent'\] are not fields of its record_type"):
        register_scorer(Stray)
    assert "stray" not in available_scorers()


def test_a_plugin_that_raises_is_named_with_its_step(run_dir: Path) -> None:
    class Raises(LexicalScorer):
        name = "raises"

        def score(self, predictions, context):
            return {}["missing"]  # a plugin's own bug: KeyError

    register_scorer(Raises)
    try:
        res = CliRunner().invoke(app, ["evaluate", str(run_dir), "--metrics", "raises"], env={"COLUMNS": "300"})
    finally:
        unregister_scorer("raises")
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "scorer 'raises' (" in out and "Raises) failed in score(): KeyError: 'missing'" in out
    assert "Traceback" not in out
    assert not (run_dir / "scores" / "summary.json").exists()  # nothing half written
