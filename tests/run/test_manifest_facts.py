"""Manifest facts recorded by the runner, the same way for every method, on the real sample:
the uncaptioned-image count (by wrapping the caption lookup), A-Mem's note failures (equal to the
fallback notes in its note stores), resolved constructor arguments, describe() read after build."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fakes import fake_chat

from h2hmem.data import load_dataset
from h2hmem.run import RunConfig, run_benchmark, select_questions
from h2hmem.testing import hashed_embedding

SIX = ("full-text", "naive-rag", "a-mem", "full-mm", "murag", "ngm")
LIMIT = 20


class HashEmbedder:
    name = "hash-64"

    async def embed(self, texts):
        return np.array([hashed_embedding(t, 64) for t in texts], dtype=np.float32).reshape(len(texts), 64)


def _expected_uncaptioned(sample_root) -> int:
    """By hand: the distinct images of the dialogues the run builds (their present sessions' turns and
    the selected questions' own images). The sample has no captions, so none has one."""
    ds = load_dataset(sample_root, "multi-party")
    qs = select_questions(ds, LIMIT)
    built = {q.dialogue for q in qs}
    keys = {
        (d.name, t.image.key)
        for d in ds.dialogues
        if d.name in built
        for s in d.present_sessions
        for t in s.turns
        if t.image
    }
    keys |= {(q.dialogue, i.key) for q in qs for i in q.images}
    return len(keys)


@pytest.fixture(scope="module")
def manifests(sample_root, tmp_path_factory):
    out = {}
    root = tmp_path_factory.mktemp("facts")
    for method in SIX:
        params = {"encoder": "text"} if method in ("murag", "ngm") else {}
        cfg = RunConfig(
            data_root=sample_root,
            split="multi-party",
            method=method,
            method_params=params,
            limit=LIMIT,
            out_dir=root / "runs",
            use_cache=False,
        )
        summary = run_benchmark(cfg, chat_model=fake_chat(), embedder=HashEmbedder(), progress=False)
        out[method] = (summary, json.loads((summary.run_dir / "manifest.json").read_text()))
    return out


def test_same_uncaptioned_count_for_every_method(manifests, sample_root):
    expected = _expected_uncaptioned(sample_root)
    # multi-party/dialogue1: 29 image turns in its present sessions, plus the image of question
    # session3/q1 (session3 is absent from the sample); the sample has no captions
    assert expected == 30
    counts = {m: man["images_without_caption"] for m, (_, man) in manifests.items()}
    assert counts == dict.fromkeys(SIX, expected)
    assert all(s.images_without_caption == expected for s, _ in manifests.values())


def test_amem_failures_reach_the_manifest(manifests):
    summary, man = manifests["a-mem"]
    # the scripted answer model cannot write JSON notes: every note is a fallback note
    stores = list((summary.run_dir / "state").rglob("amem_notes.json"))
    in_stores = sum(sum(n["fallback"] for n in json.loads(p.read_text())["notes"]) for p in stores)
    assert stores and in_stores > 0
    assert man["method_stats"]["analysis_failures"] == in_stores == summary.method_stats["analysis_failures"]
    assert man["method_description"]["stats"]["analysis_failures"] == in_stores  # read after the build
    by_dialogue = man["method_stats_by_dialogue"]
    assert sum(s["analysis_failures"] for s in by_dialogue.values()) == in_stores


def test_runner_records_each_component_once(manifests):
    _, man = manifests["naive-rag"]
    # every option with its resolved value under the preset paper (docs/method-options.md), once
    memory = man["components"]["memory"]
    assert memory["target"] == "h2hmem.memory.naive_rag._memory:NaiveRAGMemory"
    assert memory["distribution"] == "h2hmem" and memory["version"]
    assert memory["options"] == {
        "top_k": 5,
        "min_similarity": 0.1,
        "layout": "official",
        "prompt": "official",
        "answer_format": "json",
        "query_format": "official",
        "date_format": "raw",
        "attach_question_image": True,
        "top_p": 0.9,
    }
    assert "options" not in man and "method_arguments" not in man and "preset" not in man
    assert "options" not in man["method_description"] and "top_k" not in man["method_description"]
    assert man["components"]["embedder"]["name"] == man["config"]["embedder"]
    assert man["question_fields"] == []
    env = man["environment"]
    assert env["python"] and env["platform"] and env["distributions"]["pydantic"]
    _, man = manifests["murag"]
    assert man["components"]["memory"]["options"]["encoder"] == "text"
    assert man["components"]["memory"]["options"]["top_k"] == 5


def test_run_closing_lines_show_method_stats(sample_root, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from h2hmem.cli import _run as run_cli
    from h2hmem.cli import app

    seen = {}

    def fake_run(config, progress=True):
        summary = run_benchmark(config, chat_model=fake_chat(), embedder=HashEmbedder(), progress=False)
        seen["summary"] = summary
        return summary

    monkeypatch.setattr("h2hmem.run.run_benchmark", fake_run)
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--data",
            str(sample_root),
            "--split",
            "multi-party",
            "--method",
            "a-mem",
            "--limit",
            "3",
            "--out",
            str(tmp_path / "runs"),
            "--no-cache",
            "--quiet",
        ],
        env={"COLUMNS": "300"},
    )
    assert res.exit_code == 0, res.output
    n = seen["summary"].method_stats["analysis_failures"]
    assert n > 0 and f"a-mem (all dialogues): analysis_failures {n:,}" in res.output
    assert f"{seen['summary'].images_without_caption} images had no caption" in res.output
    assert run_cli  # imported for the monkeypatch target's module
