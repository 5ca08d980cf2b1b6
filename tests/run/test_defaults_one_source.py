"""Every default has one owner (:mod:`h2hmem.defaults`): the command-line options, ``RunConfig``, the
model clients, the answer settings of the methods, the judge, the captioner and the report agree."""

from __future__ import annotations

import inspect

import typer.main

from h2hmem import defaults
from h2hmem.caption import CaptionSettings, caption_dataset
from h2hmem.cli import app
from h2hmem.llm import GenerationConfig
from h2hmem.memory import ANSWER_CONFIG
from h2hmem.metrics import DEFAULT_JUDGE_SPEC, evaluate_run
from h2hmem.run import RunConfig

# `h2hmem run` option (click parameter name) → RunConfig flat setting
RUN_OPTION_SETTING = {
    "split": "split",
    "method": "method",
    "model": "model",
    "embedder": "embedder",
    "protocol": "protocol",
    "answer_max_tokens": "answer_max_tokens",
    "temperature": "answer_temperature",
    "out": "out_dir",
    "concurrency": "concurrency",
    "max_retries": "max_retries",
    "timeout": "timeout_s",
    "preset": "preset",
    "run_id": "run_id",
    "limit": "limit",
    "build_model": "build_model",
    "captions_dir": "captions_dir",
    "cache_path": "cache_path",
}


def _option_defaults(command: str) -> dict[str, object]:
    click_app = typer.main.get_command(app)
    cmd = click_app.commands[command]  # type: ignore[attr-defined]
    return {p.name: p.default for p in cmd.params}


def test_published_answer_defaults_are_the_hand_checked_values():
    # spec/baselines.md: temperature 0.1, at most 1,024 new tokens
    assert (defaults.ANSWER_TEMPERATURE, defaults.ANSWER_MAX_TOKENS) == (0.1, 1024)


def test_run_command_defaults_equal_the_run_config_defaults():
    options = _option_defaults("run")
    for option, setting in RUN_OPTION_SETTING.items():
        assert options[option] == RunConfig.flat_default(setting), option
    # the negated switches: --no-cache / --no-transcripts off = use_cache / transcripts on
    assert options["no_cache"] is False and RunConfig.flat_default("use_cache") is True
    assert options["no_transcripts"] is False and RunConfig.flat_default("transcripts") is True
    assert options["temperature"] == 0.1 and options["answer_max_tokens"] == 1024


def test_answer_settings_agree_everywhere():
    cfg = RunConfig(data_root="d")
    assert (cfg.generation.temperature, cfg.generation.max_tokens) == (0.1, 1024)
    assert (ANSWER_CONFIG.temperature, ANSWER_CONFIG.max_tokens) == (0.1, 1024)
    assert (GenerationConfig().temperature, GenerationConfig().max_tokens) == (0.1, 1024)


def test_evaluate_caption_and_report_defaults_come_from_the_owner():
    ev = _option_defaults("evaluate")
    assert ev["judge_model"] == DEFAULT_JUDGE_SPEC == defaults.JUDGE_MODEL == "openai:gpt-4o-mini"
    assert ev["bootstrap"] == inspect.signature(evaluate_run).parameters["n_boot"].default == defaults.N_BOOT == 1000
    assert ev["concurrency"] == defaults.CONCURRENCY
    cap = _option_defaults("caption")
    settings = CaptionSettings()
    sig = inspect.signature(caption_dataset).parameters
    assert cap["model"] == defaults.CAPTION_MODEL == "openai:gpt-4o"
    assert cap["max_tokens"] == settings.max_tokens == sig["max_tokens"].default == 256
    assert cap["temperature"] == settings.temperature == sig["temperature"].default == 0.7
    assert settings.max_new_tokens == sig["max_new_tokens"].default == 1200
    assert cap["concurrency"] == sig["concurrency"].default == defaults.CONCURRENCY
    assert _option_defaults("report")["bootstrap"] == defaults.N_BOOT
    demo = _option_defaults("demo")
    assert (demo["method"], demo["model"]) == (RunConfig.flat_default("method"), RunConfig.flat_default("model"))
