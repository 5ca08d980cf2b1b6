"""A comparison of runs over different question sets (dataset, split, --limit) says so."""

from __future__ import annotations

import json

from report_fakes import make_runs

from h2hmem.report import build_report

NOTE = "The runs answered different question sets, so their scores are not directly comparable"


def test_runs_over_different_question_sets_get_a_note(tmp_path, sample_root):
    a, b, _ = make_runs(tmp_path, sample_root)
    for run, fingerprint, limit in ((a, "a" * 64, None), (b, "b" * 64, 20)):
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["dataset_fingerprint"] = fingerprint
        manifest["config"]["limit"] = limit
        (run / "manifest.json").write_text(json.dumps(manifest))
    paths = build_report([a, b], tmp_path / "out", n_boot=0)
    md = paths.markdown.read_text()
    assert NOTE in md
    assert "split all (files aaaaaaaaaaaa), all questions" in md
    assert "split all (files bbbbbbbbbbbb), first 20 questions" in md
    assert NOTE in paths.html.read_text()


def test_runs_over_the_same_questions_get_no_note(tmp_path, sample_root):
    a, b, _ = make_runs(tmp_path, sample_root)
    paths = build_report([a, b], tmp_path / "out", n_boot=0)
    assert NOTE not in paths.markdown.read_text()
