"""Record versioning, reading and writing: old files load, newer ones are refused, errors name file and field."""

from __future__ import annotations

import json

import pytest

from h2hmem.records import (
    Aggregate,
    EvidenceScore,
    Manifest,
    Prediction,
    RecordVersionError,
    ScoresSummary,
    read_manifest,
    read_predictions,
    read_score_lines,
    read_scores_summary,
    write_manifest,
    write_score_lines,
)

PRED = {
    "question_id": "dyadic/dialogue1/session2/q0",
    "split": "dyadic",
    "dialogue": "dialogue1",
    "session": "session2",
    "task_type": "UPR",
    "main_category": "Memory Recall",
    "difficulty": "easy",
    "question": "Where?",
    "gold": "Paris",
}


def test_a_manifest_written_before_versioning_loads_and_keeps_unknown_fields(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"method": "full-text", "counts": {"questions": 3}, "x": [1]}))
    m = read_manifest(tmp_path)
    assert m.method == "full-text" and m.counts.questions == 3 and m.counts.failed == 0
    assert m.model_extra == {"x": [1]}
    m.status = "complete"
    write_manifest(tmp_path, m)
    again = json.loads((tmp_path / "manifest.json").read_text())
    assert again["schema"] == "h2hmem.manifest/2" and again["x"] == [1] and again["status"] == "complete"
    assert read_manifest(tmp_path) == m
    assert read_manifest(tmp_path / "elsewhere") is None


def test_a_newer_version_is_refused_naming_the_file(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": "h2hmem.manifest/3", "method": "m"}))
    with pytest.raises(
        RecordVersionError, match=r"manifest\.json: not a valid manifest: schema 'h2hmem\.manifest/3'.*newer"
    ):
        read_manifest(tmp_path)
    with pytest.raises(ValueError, match="not a h2hmem.manifest/2 record"):
        Manifest.model_validate({"schema": "h2hmem.prediction/1"})


def test_errors_name_the_file_and_the_field(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"counts": {"questions": "many"}}))
    with pytest.raises(ValueError, match=r"manifest\.json: not a valid manifest: counts\.questions: .*'many'"):
        read_manifest(tmp_path)
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "summary.json").write_text("{}")
    with pytest.raises(ValueError, match=r"summary\.json: not a valid scores summary: metrics: Field required"):
        read_scores_summary(tmp_path)
    (tmp_path / "scores" / "summary.json").write_text("[1]")
    with pytest.raises(ValueError, match="a JSON object expected, got list"):
        read_scores_summary(tmp_path)


def test_the_older_summary_tag_spelling_is_version_1_and_reads_as_2():
    s = ScoresSummary.model_validate({"schema": "h2hmem/scores-summary/1", "metrics": {}})
    assert s.model_dump()["schema"] == "h2hmem.scores-summary/2"
    # absent sections and selection are left out of the file, not written as null
    assert s.model_dump(mode="json") == {
        "schema": "h2hmem.scores-summary/2",
        "created_at": None,
        "preset": None,
        "run": {
            "dir": None,
            "method": None,
            "model": None,
            "n_predictions": 0,
            "failed": 0,
            "data_root": None,
            "gold_source": None,
            "gold_mismatches": 0,
            "retrieval_only": False,
        },
        "label": None,
        "metrics": {},
        "components": [],
        "environment": None,
    }


def test_a_version_1_summary_loads_and_other_sections_keep_their_name(tmp_path):
    """/1 (four built-in sections, no components or environment) reads; a plugin's section of a /2
    summary is a MetricSection under its name, its own keys kept."""
    agg = {"metrics": ["f1"], "n_boot": 0, "splits": {"all": {"overall": {"n_total": 2, "metrics": {}}}}}
    v1 = {"schema": "h2hmem.scores-summary/1", "metrics": {"lexical": {"fields": ["f1"], "aggregate": agg}}}
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "summary.json").write_text(json.dumps(v1))
    s = read_scores_summary(tmp_path)
    assert s is not None and s.metrics.lexical is not None and s.components == [] and s.environment is None
    assert s.metrics.lexical.aggregate is not None and s.metrics.lexical.aggregate.splits["all"].overall.n_total == 2
    v2 = {
        "schema": "h2hmem.scores-summary/2",
        "metrics": {"answer-length": {"fields": ["n"], "aggregate": agg, "x": 1}},
    }
    s2 = ScoresSummary.model_validate(v2)
    section = s2.metrics.sections()["answer-length"]
    assert section.fields == ["n"] and section.model_extra == {"x": 1}
    assert s2.model_dump(mode="json")["metrics"]["answer-length"]["x"] == 1
    with pytest.raises(ValueError, match="fields"):
        ScoresSummary.model_validate({**v2, "metrics": {"answer-length": {"fields": 3}}})


def test_prediction_lines_of_a_newer_version_are_refused_with_their_line(tmp_path):
    p = tmp_path / "predictions.jsonl"
    p.write_text(json.dumps(PRED) + "\n" + json.dumps({**PRED, "schema": "h2hmem.prediction/7"}) + "\n")
    with pytest.raises(
        RecordVersionError, match=r"predictions\.jsonl: line 2 is not a prediction record: schema 'h2hm"
    ):
        read_predictions(p)
    p.write_text(json.dumps({**PRED, "details": {"answer_sessions": ["session2", 3]}}) + "\n")
    (rec,) = read_predictions(p)
    assert rec.answer_sessions == ["session2", "3"] and Prediction(**PRED).answer_sessions is None
    assert json.loads(rec.model_dump_json())["schema"] == "h2hmem.prediction/1"


def test_score_lines_keep_the_file_spelling_of_metric_keys(tmp_path):
    line = {**{k: PRED[k] for k in ("question_id", "split", "task_type", "main_category", "difficulty")}}
    line.update(dialogue="dialogue1", **{"hit@1": 1.0, "recall@all": 0.5, "hit@7": 0.0})
    rec = EvidenceScore.model_validate(line)
    assert rec.hit_at_1 == 1.0 and rec.recall_at_all == 0.5 and rec.recall_at_5 is None
    path = tmp_path / "evidence.jsonl"
    write_score_lines(path, [rec])
    dumped = json.loads(path.read_text())
    assert dumped["hit@1"] == 1.0 and dumped["hit@7"] == 0.0 and "hit_at_1" not in dumped  # other cut-offs kept
    path.write_text(path.read_text() + '{"question_id": "torn')  # a torn last line is ignored
    assert read_score_lines(path, EvidenceScore) == [rec]
    path.write_text('{"question_id": 1}\n{}\n')
    with pytest.raises(ValueError, match=r"evidence\.jsonl: line 1 is not a EvidenceScore line: question_id"):
        read_score_lines(path, EvidenceScore)


def test_aggregate_cells_by_group():
    cell = {"n_total": 4, "failed": 1, "metrics": {"f1": {"n": 4, "coverage": 1.0, "mean": 0.25, "ci": [0.0, 0.5]}}}
    agg = Aggregate.model_validate(
        {"metrics": ["f1"], "n_boot": 10, "splits": {"all": {"overall": cell, "task_type": {"UPR": cell}}}}
    )
    assert agg.overall("f1").mean == 0.25 and agg.overall("f1", split="dyadic") is None
    assert agg.splits["all"].cell("task_type", "UPR").failed == 1
    assert agg.splits["all"].cell("task_type", "AR") is None and agg.splits["all"].cell().n_total == 4
    # macro fields exist on overall cells only: a group cell is written without them
    assert "macro" not in agg.model_dump()["splits"]["all"]["task_type"]["UPR"]["metrics"]["f1"]


def test_a_version_1_manifest_loads_in_the_version_2_shape(tmp_path):
    old = {
        "schema": "h2hmem.manifest/1",
        "method": "naive-rag",
        "model": "openai:gpt-4o-mini",
        "preset": "paper",
        "config": {"concurrency": 8},
        "models": {"answer": "openai:gpt-4o-mini", "build": None, "embedder": "minilm"},
        "method_arguments": {"top_k": 5, "min_similarity": 0.1, "layout": "official"},
        "options": {"layout": "official"},
        "method_description": {"method": "naive-rag", "options": {"layout": "official"}, "stats": {"n": 2}},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    m = read_manifest(tmp_path)
    assert m.preset == "paper" and m.config.preset == "paper"
    memory = m.component("memory")
    assert memory is not None and memory.name == "naive-rag"
    assert memory.options == {"top_k": 5, "min_similarity": 0.1, "layout": "official"}
    assert {k: c.name for k, c in m.components.items()} == {
        "memory": "naive-rag",
        "answer_model": "openai:gpt-4o-mini",
        "embedder": "minilm",
    }
    assert m.model_extra == {} and m.method_description.stats == {"n": 2}
    write_manifest(tmp_path, m)
    again = json.loads((tmp_path / "manifest.json").read_text())
    assert again["schema"] == "h2hmem.manifest/2" and "options" not in again and "method_arguments" not in again
    assert "options" not in again["method_description"] and read_manifest(tmp_path) == m
