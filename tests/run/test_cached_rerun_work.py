"""A fully cached rerun costs what reading the run costs: no tokenizer call per cached question
(counted, not timed). Full (Text) under the ``paper`` preset tokenizes its context once per
dialogue state (under the ``full`` protocol: once per dialogue), whether replies are paid or cached."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tiktoken

from h2hmem.run import RunConfig, run_benchmark
from h2hmem.testing import MockOpenAIServer

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from relkit import make_dataset


def test_a_cached_rerun_tokenizes_once_per_dialogue_not_per_question(tmp_path, monkeypatch):
    synth = make_dataset(tmp_path / "data", dialogues=2, sessions=3, questions_per_session=3)
    encodes: list[int] = []
    real = tiktoken.Encoding.encode

    def counting(self, text, *args, **kwargs):
        encodes.append(len(text))
        return real(self, text, *args, **kwargs)

    def run(run_id: str) -> dict:
        cfg = RunConfig(
            data_root=synth.root,
            method="full-text",
            model="openai:mock",
            base_url=[srv.base_url],
            out_dir=tmp_path / "runs",
            run_id=run_id,
            cache_path=tmp_path / "cache.sqlite",
            concurrency=4,
        )
        run_benchmark(cfg, progress=False)
        return json.loads((cfg.run_dir / "manifest.json").read_text(encoding="utf-8"))

    with MockOpenAIServer() as srv:
        cold = run("cold")
        paid = srv.endpoints.count("chat")
        monkeypatch.setattr(tiktoken.Encoding, "encode", counting)
        rerun = run("rerun")  # a new run dir, the same request cache
        assert srv.endpoints.count("chat") == paid  # nothing was sent again
    questions = len(synth.question_ids)
    dialogues = len({q.rsplit("/", 2)[0] for q in synth.question_ids})
    assert cold["counts"]["recorded"] == rerun["counts"]["recorded"] == questions == paid
    assert rerun["usage"]["answer"]["cached_calls"] == questions and rerun["usage"]["answer"]["calls"] == 0
    # one tokenization of each dialogue's whole history, none per question
    assert questions > 3 * dialogues and len(encodes) == dialogues
