"""Generate the JSON Schemas of the run records into ``docs/schemas/``.

``python -m h2hmem.records.schemas --write [DIR]`` writes them (default ``docs/schemas``);
``--check`` exits 1 when a file there differs from what the models give (CI, tests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ._manifest import Manifest
from ._prediction import Prediction
from ._scores import EvidenceScore, JudgeScore, LexicalScore, TurnEvidenceScore
from ._summary import ScoresSummary

RECORDS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "prediction": Prediction,
    "lexical-score": LexicalScore,
    "evidence-score": EvidenceScore,
    "turn-evidence-score": TurnEvidenceScore,
    "judge-score": JudgeScore,
    "scores-summary": ScoresSummary,
}
"""Schema file stem → record model (``docs/schemas/<stem>.schema.json``)."""
_FILES = {
    "manifest": "runs/<run-id>/manifest.json",
    "prediction": "each line of runs/<run-id>/predictions.jsonl",
    "lexical-score": "each line of runs/<run-id>/scores/lexical.jsonl",
    "evidence-score": "each line of runs/<run-id>/scores/evidence.jsonl",
    "turn-evidence-score": "each line of runs/<run-id>/scores/turn_evidence.jsonl",
    "judge-score": "each line of runs/<run-id>/scores/judge.jsonl",
    "scores-summary": "runs/<run-id>/scores/summary.json",
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """File name (``manifest.schema.json``…) → JSON Schema (draft 2020-12) of the record as written."""
    out = {}
    for stem, model in RECORDS.items():
        schema = model.model_json_schema(mode="serialization", by_alias=True)
        out[f"{stem}.schema.json"] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "description": f"{_FILES[stem]} (h2hmem record {model.__name__}). " + (schema.pop("description", "") or ""),
            **schema,
        }
    return out


def render(schema: dict[str, Any]) -> str:
    """The committed text of one schema file."""
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_json_schemas(directory: str | Path) -> list[Path]:
    """Write every record's schema into ``directory``; returns the paths written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in json_schemas().items():
        (d / name).write_text(render(schema), encoding="utf-8")
        paths.append(d / name)
    return paths


def outdated_json_schemas(directory: str | Path) -> list[str]:
    """Names of the schema files in ``directory`` that are missing or differ from the models."""
    d = Path(directory)
    return [
        n
        for n, s in json_schemas().items()
        if not (d / n).is_file() or (d / n).read_text(encoding="utf-8") != render(s)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m h2hmem.records.schemas", description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", default="docs/schemas")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the schema files")
    mode.add_argument("--check", action="store_true", help="exit 1 when a schema file is out of date")
    args = ap.parse_args(argv)
    if args.write:
        for p in write_json_schemas(args.directory):
            print(p)
        return 0
    stale = outdated_json_schemas(args.directory)
    for n in stale:
        print(f"{Path(args.directory) / n}: out of date; run `python -m h2hmem.records.schemas --write`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
