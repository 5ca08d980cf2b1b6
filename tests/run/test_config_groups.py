"""RunConfig's groups (answer generation, models, execution): flat keywords and flat reads keep
working, and the run id / identity / recorded config of an unchanged configuration do not change.

The pinned values below were computed with the flat ``RunConfig`` before it was grouped; a change
here would make existing run directories stop resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from h2hmem.run import RunConfig, Selection

CUSTOM = dict(
    data_root="d",
    method="a-mem",
    model="openai:gpt-4o-mini",
    split="dyadic",
    answer_max_tokens=512,
    answer_temperature=0.0,
    embedder="openai:text-embedding-3-small",
    build_model="openai:x",
    method_params={"top_k": 3},
    limit=5,
    retrieval_only=True,
    preset="harmonized",
    concurrency=3,
    timeout_s=9,
    max_retries=1,
)

DEFAULT_RECORDED = {
    "data_root": "d",
    "split": "all",
    "method": "naive-rag",
    "method_params": {},
    "preset": "paper",
    "model": "local:smollm2",
    "base_url": None,
    "build_model": None,
    "embedder": "minilm",
    "protocol": "full",
    "answer_max_tokens": 1024,
    "answer_temperature": 0.1,
    "out_dir": "runs",
    "run_id": None,
    "limit": None,
    "concurrency": 8,
    "dialogue_concurrency": 4,
    "cache_path": None,
    "use_cache": True,
    "refresh_cache": False,
    "captions_dir": None,
    "retry_failed": False,
    "timeout_s": 120.0,
    "max_retries": 5,
    "retrieval_only": False,
    "selection": {"task_types": [], "dialogues": [], "question_ids": [], "difficulties": [], "sample": None, "seed": 0},
    "max_cost_usd": None,
    "prices": {},
    "transcripts": True,
}


def test_pinned_run_ids_and_identities_of_flat_configs():
    default = RunConfig(data_root="d")
    assert default.resolved_run_id == "naive-rag_local-smollm2_all_full"
    assert default.identity() == {
        "split": "all",
        "method": "naive-rag",
        "method_params": {},
        "preset": "paper",
        "model": "local:smollm2",
        "build_model": None,
        "embedder": "minilm",
        "protocol": "full",
        "limit": None,
        "answer_max_tokens": 1024,
        "answer_temperature": 0.1,
    }
    custom = RunConfig(**CUSTOM)
    assert custom.resolved_run_id == "a-mem_openai-gpt-4o-mini_dyadic_full_harmonized_limit5_retrieval_h7426a2cf"
    assert custom.identity()["answer_temperature"] == 0.0
    assert custom.identity()["retrieval_only"] is True
    sampled = RunConfig(data_root="d", selection=Selection(task_types=["CD"], sample=10, seed=2))
    assert sampled.resolved_run_id == "naive-rag_local-smollm2_all_full_tt-CD_s10-seed2"


def test_recorded_config_stays_flat():
    recorded = RunConfig(data_root="d").recorded()
    assert recorded == DEFAULT_RECORDED  # the manifest's "config": each setting once, by its flat name
    json.dumps(recorded)  # JSON-ready


def test_flat_keywords_land_in_their_groups():
    c = RunConfig(**CUSTOM)
    assert (c.generation.temperature, c.generation.max_tokens) == (0.0, 512)
    assert (c.models.model, c.models.build_model, c.models.embedder) == (
        "openai:gpt-4o-mini",
        "openai:x",
        "openai:text-embedding-3-small",
    )
    assert (c.execution.concurrency, c.execution.timeout_s, c.execution.max_retries) == (3, 9.0, 1)
    # settings are read from their group only: the flat read-back layer is gone
    assert not hasattr(c, "concurrency") and not hasattr(c, "answer_temperature")


def test_grouped_and_flat_forms_build_the_same_config():
    grouped = RunConfig(
        data_root="d",
        generation={"temperature": 0.0, "max_tokens": 512},
        models={"model": "openai:gpt-4o-mini"},
        execution={"concurrency": 3},
    )
    flat = RunConfig(
        data_root="d", answer_temperature=0.0, answer_max_tokens=512, model="openai:gpt-4o-mini", concurrency=3
    )
    assert grouped == flat
    assert grouped.resolved_run_id == flat.resolved_run_id
    # a group given in part plus a flat key of the same group: both apply
    mixed = RunConfig(data_root="d", execution={"concurrency": 3}, timeout_s=9)
    assert (mixed.execution.concurrency, mixed.execution.timeout_s) == (3, 9.0)


def test_recorded_config_round_trips(tmp_path: Path):
    c = RunConfig(**CUSTOM)
    again = RunConfig.model_validate(c.recorded())
    assert again == c
    assert RunConfig.model_validate_json(c.model_dump_json()) == c


def test_one_key_given_both_ways_and_unknown_keys_are_refused():
    with pytest.raises(ValidationError, match="concurrency"):
        RunConfig(data_root="d", concurrency=2, execution={"concurrency": 3})
    with pytest.raises(ValidationError, match="out"):
        RunConfig(data_root="d", out="runs")  # a misspelt out_dir is still refused
    with pytest.raises(ValidationError, match="concurrency must be at least 1"):
        RunConfig(data_root="d", concurrency=0)


def test_replace_takes_flat_names():
    c = RunConfig(data_root="d").replace(run_id="x", retry_failed=True, answer_temperature=0.3)
    assert (c.run_id, c.execution.retry_failed, c.generation.temperature) == ("x", True, 0.3)


def test_cli_error_names_the_option_of_a_grouped_setting():
    from h2hmem.cli._run import config_error_message

    with pytest.raises(ValidationError) as bad:
        RunConfig(data_root="d", concurrency=0, answer_temperature="hot", limit=0)
    msg = config_error_message(bad.value)
    assert "--concurrency: concurrency must be at least 1 (got 0)" in msg
    assert "--temperature: " in msg and "--limit: limit must be at least 1" in msg
    assert RunConfig.flat_name(("generation", "max_tokens")) == "answer_max_tokens"
    assert RunConfig.flat_default("timeout_s") == 120.0 and RunConfig.flat_default("split") == "all"
    with pytest.raises(KeyError, match="data_root"):
        RunConfig.flat_default("data_root")


def test_answer_generation_range_and_a_single_base_url():
    """Temperature 0–2 and at least one new token, in RunConfig as in GenerationConfig (the limits
    are accepted, one step past them is not); one server given as a string is the one-server list."""
    from h2hmem.llm import GenerationConfig

    ok = RunConfig(data_root="d", method="full-text", answer_temperature=0, answer_max_tokens=1)
    assert (ok.generation.temperature, ok.generation.max_tokens) == (0, 1)
    assert RunConfig(data_root="d", method="full-text", answer_temperature=2).generation.temperature == 2
    for bad in ({"answer_temperature": -0.01}, {"answer_temperature": 2.01}, {"answer_max_tokens": 0}):
        with pytest.raises(ValidationError):
            RunConfig(data_root="d", method="full-text", **bad)
    with pytest.raises(ValidationError):
        GenerationConfig(max_tokens=0)
    with pytest.raises(ValidationError):
        GenerationConfig(temperature=-1)
    assert GenerationConfig(max_tokens=None).max_tokens is None  # no limit sent (the judge)
    assert RunConfig(data_root="d", method="full-text", base_url="http://h:1/v1").models.base_url == ["http://h:1/v1"]
    assert RunConfig(data_root="d", method="full-text", models={"base_url": "http://h:1/v1"}).models.base_url == [
        "http://h:1/v1"
    ]


def test_the_run_timeout_bounds_embedding_requests_too(tmp_path):
    # an openai: embedder was built with its own 60 s, whatever --timeout said
    from h2hmem.run._runner import _load_embedder

    cfg = RunConfig(data_root=tmp_path, embedder="openai:e", base_url="http://127.0.0.1:9/v1", timeout_s=7.0)
    assert _load_embedder(cfg).timeout_s == 7.0
    assert _load_embedder(cfg.replace(timeout_s=120.0, use_cache=False)).timeout_s == 120.0
