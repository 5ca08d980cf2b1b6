"""The published JSON Schemas (docs/schemas/) are current and validate every artifact of a real run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from h2hmem.embed import load_embedder
from h2hmem.llm import load_chat_model
from h2hmem.metrics import evaluate_run
from h2hmem.records.schemas import json_schemas, outdated_json_schemas
from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer, default_responder

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "docs" / "schemas"
ITEM = re.compile(r"\[(q\d+)\]\nQuestion: ")


def test_committed_schemas_are_current():
    stale = outdated_json_schemas(SCHEMAS)
    assert not stale, f"{stale}: regenerate with `python -m h2hmem.records.schemas --write`"
    assert set(json_schemas()) == {
        "manifest.schema.json",
        "prediction.schema.json",
        "lexical-score.schema.json",
        "evidence-score.schema.json",
        "turn-evidence-score.schema.json",
        "judge-score.schema.json",
        "scores-summary.schema.json",
    }


def test_outdated_schema_is_reported(tmp_path):
    from h2hmem.records.schemas import main

    assert main(["--write", str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    (tmp_path / "manifest.schema.json").write_text("{}")
    (tmp_path / "prediction.schema.json").unlink()
    assert outdated_json_schemas(tmp_path) == ["manifest.schema.json", "prediction.schema.json"]
    assert main(["--check", str(tmp_path)]) == 1


def _responder(body: dict) -> str:
    """Answers: the mock's default; judge requests (harmonized format, ``[qN]`` items): score 1 each."""
    system = body["messages"][0]
    if system["role"] == "system" and "judgments" in str(system["content"]):
        items = ITEM.findall(str(body["messages"][-1]["content"]))
        return json.dumps({"judgments": [{"question_id": i, "score": 1, "reasoning": "r"} for i in items]})
    return default_responder(body)


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_schemas_validate_every_artifact_of_a_real_run(sample_root, tmp_path):
    with MockOpenAIServer(responder=_responder) as srv:
        cfg = RunConfig(
            data_root=sample_root,
            split="multi-party",
            method="naive-rag",
            limit=12,
            out_dir=tmp_path / "runs",
            use_cache=False,
            embedder="openai:mock",
        )
        chat = load_chat_model("openai:mock", base_url=srv.base_url)
        summary = run_benchmark(
            cfg, chat_model=chat, embedder=load_embedder("openai:mock", base_url=srv.base_url), progress=False
        )
        judge = load_chat_model("openai:mock", base_url=srv.base_url)
        evaluate_run(
            summary.run_dir, ["lexical", "evidence", "judge"], judge_model=judge, n_boot=20, preset="harmonized"
        )
    d = summary.run_dir
    checked: dict[str, int] = {}

    def check(name: str, records: list[dict]) -> None:
        v = _validator(name)
        for r in records:
            errors = sorted(v.iter_errors(r), key=lambda e: e.path)
            assert not errors, f"{name}: {errors[0].message} at {list(errors[0].path)}"
        checked[name] = len(records)

    check("manifest.schema.json", [json.loads((d / "manifest.json").read_text())])
    check("prediction.schema.json", _lines(d / "predictions.jsonl"))
    for stem in ("lexical", "evidence", "turn_evidence", "judge"):
        check(f"{stem.replace('_', '-')}-score.schema.json", _lines(d / "scores" / f"{stem}.jsonl"))
    check("scores-summary.schema.json", [json.loads((d / "scores" / "summary.json").read_text())])
    # every file was there and held every selected question (12 predictions, one score line each)
    assert checked == {
        "manifest.schema.json": 1,
        "prediction.schema.json": 12,
        "lexical-score.schema.json": 12,
        "evidence-score.schema.json": 12,
        "turn-evidence-score.schema.json": 12,
        "judge-score.schema.json": 12,
        "scores-summary.schema.json": 1,
    }
    summary_json = json.loads((d / "scores" / "summary.json").read_text())
    assert summary_json["schema"] == "h2hmem.scores-summary/2"
    assert set(summary_json["metrics"]) == {"lexical", "evidence", "turn_evidence", "judge"}
    assert summary_json["metrics"]["judge"]["coverage"]["judged"] == 12
    # provenance: each scorer once, then the judge model with its resolved options; the environment
    comps = [(c["kind"], c["name"]) for c in summary_json["components"]]
    judge_spec = summary_json["metrics"]["judge"]["model"]
    assert comps == [*(("scorer", n) for n in ("lexical", "evidence", "turn_evidence", "judge")), ("judge", judge_spec)]
    assert summary_json["components"][0]["target"] == "h2hmem.metrics._scorer_lexical:LexicalScorer"
    assert summary_json["components"][-1]["options"]["preset"] == summary_json["metrics"]["judge"]["preset"]
    assert summary_json["environment"]["python"] and "pydantic" in summary_json["environment"]["distributions"]


@pytest.mark.parametrize(
    ("name", "record"),
    [
        ("prediction.schema.json", {"question_id": "x"}),  # required fields missing
        ("manifest.schema.json", {"counts": {"questions": "many"}}),
        ("scores-summary.schema.json", {"schema": "h2hmem.scores-summary/3", "metrics": {}}),
        ("lexical-score.schema.json", {"schema": "h2hmem.manifest/1"}),
    ],
)
def test_schemas_reject_what_the_readers_reject(name, record):
    assert list(_validator(name).iter_errors(record))
