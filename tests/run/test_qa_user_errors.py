"""User mistakes with `h2hmem run` / RunConfig / prediction files: a clear message naming the
option, setting, file and line — never a silently ignored argument or a pydantic dump."""

import json

import pytest
from fakes import fake_chat
from pydantic import ValidationError
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.memory import MemoryMethod, method_options, resolve_method
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, RunConflictError, run_benchmark

runner = CliRunner()


def test_runconfig_refuses_a_misspelt_keyword(tmp_path):
    # `out=` is not a field (the field is out_dir): it used to be dropped silently, writing to runs/
    with pytest.raises(ValidationError, match="out"):
        RunConfig(data_root=tmp_path, out=tmp_path / "elsewhere")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--split", "dyadc"], "--split: Input should be 'dyadic', 'multi-party' or 'all' (got 'dyadc')"),
        (["--protocol", "onlin"], "--protocol: Input should be 'full' or 'online' (got 'onlin')"),
        (["--limit", "0"], "--limit: limit must be at least 1 (got 0)"),
        (["--concurrency", "0"], "--concurrency: concurrency must be at least 1 (got 0)"),
        # refused before any call (a server would fail every question instead)
        (["--answer-max-tokens", "-5"], "--answer-max-tokens: Input should be greater than or equal to 1 (got -5)"),
        (["--answer-max-tokens", "0"], "--answer-max-tokens: Input should be greater than or equal to 1 (got 0)"),
        (["--temperature", "-1"], "--temperature: Input should be greater than or equal to 0 (got -1.0)"),
        (["--temperature", "7"], "--temperature: Input should be less than or equal to 2 (got 7.0)"),
        (["--model", "gpt4"], "--model: invalid model spec 'gpt4'; model specs: 'openai:<model>'"),
        # a NaN price made every cost NaN: --max-cost never stopped and manifest.json held NaN (not JSON)
        (["--price", "mock=nan/nan"], "--price 'mock=nan/nan': expected MODEL=IN/OUT"),
        (["--price", "mock=1/inf"], "--price 'mock=1/inf': expected MODEL=IN/OUT"),
        (["--build-model", "vllm:qwen"], "--build-model: unknown model backend 'vllm' in spec 'vllm:qwen'"),
    ],
)
def test_run_option_errors_name_the_option(tmp_path, args, message):
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--out", str(tmp_path / "runs"), *args])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert message in out
    assert "pydantic" not in out and "validation error" not in out
    assert not (tmp_path / "runs").exists()


def test_runconfig_refuses_prices_and_a_cost_limit_that_are_not_numbers(tmp_path):
    with pytest.raises(ValidationError, match=r"prices must be finite and not negative .*got m=nan/1.0"):
        RunConfig(data_root=tmp_path, prices={"m": (float("nan"), 1.0)})
    with pytest.raises(ValidationError, match="max cost must be >= 0"):
        RunConfig(data_root=tmp_path, max_cost_usd=float("nan"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "naive-ragg"], "unknown method 'naive-ragg'. Did you mean naive-rag?"),
        (["--param", "top_k=0"], "method 'naive-rag' option top_k: expected int >= 1, got 0"),
        (["--data", "no-such-folder-xyz"], "--data: dataset root no-such-folder-xyz does not exist"),
    ],
)
def test_misspelt_method_or_option_is_refused_before_the_run_line(tmp_path, args, message):
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--out", str(tmp_path / "runs"), *args])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert message in out
    assert "→" not in out  # no run line for a run that is not made
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "method, params, message",
    [
        ("naive-rag", {"top_k": "abc"}, "method 'naive-rag' option top_k: expected int >= 1, got 'abc'"),
        ("naive-rag", {"top_k": True}, "method 'naive-rag' option top_k: expected int >= 1, got True"),
        ("naive-rag", {"top_k": 0}, "method 'naive-rag' option top_k: expected int >= 1, got 0"),
        ("naive-rag", {"min_similarity": "x"}, "option min_similarity: expected float >= -1.0, <= 1.0, got 'x'"),
        ("a-mem", {"evolve": "yes"}, "method 'a-mem' option evolve: expected bool, got 'yes'"),
        ("ngm", {"recall": "dsf"}, "method 'ngm' option recall: expected 'neighbours' | 'dfs', got 'dsf'"),
        ("full-text", {"top_k": 3}, "method 'full-text' has no option top_k; its options: layout, prompt,"),
    ],
)
def test_method_parameter_values_checked_up_front(method, params, message):
    cls = resolve_method(method)
    with pytest.raises(ValueError) as e:
        method_options(method, cls.Options, params, "paper")
    assert message in str(e.value)


@pytest.mark.parametrize(
    "method, params",
    [
        ("naive-rag", {"top_k": 3, "min_similarity": 0}),  # an int is a valid float
        ("a-mem", {"follow_links": True, "alpha": 1}),
        ("ngm", {"recall": "dfs", "temporal": "both", "time_scale_s": 60}),
        ("full-text", {"context_tokens": 2048}),
    ],
)
def test_valid_method_parameters_pass(method, params):
    options = method_options(method, resolve_method(method).Options, params, "paper")
    assert {k: getattr(options, k) for k in params} == params


def test_bad_param_value_fails_before_any_question(tmp_path):
    result = runner.invoke(
        app,
        [
            "run",
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "runs"),
            "--param",
            "top_k=abc",
            "--model",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    )
    assert result.exit_code == 2
    assert "method 'naive-rag' option top_k: expected int >= 1, got 'abc'" in " ".join(result.output.split())
    assert not list((tmp_path / "runs").rglob("predictions.jsonl"))


def test_top_k_given_twice_with_two_values_is_refused(tmp_path):
    """`--param top_k=3 --top-k 4` silently ran with 4; the same value twice is accepted."""
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--param", "top_k=3", "--top-k", "4", "--dry-run"])
    assert result.exit_code == 2
    assert "--top-k 4 and --param top_k=3 disagree; give one" in " ".join(result.output.split())
    same = runner.invoke(app, ["run", "--data", str(tmp_path), "--param", "top_k=4", "--top-k", "4", "--dry-run"])
    assert "disagree" not in same.output


def test_top_k_below_one_is_refused_by_the_cli(tmp_path):
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--top-k", "0"])
    assert result.exit_code == 2
    assert "--top-k" in result.output


def test_conflict_names_the_differing_settings(sample_root, tmp_path):
    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="full-text",
        out_dir=tmp_path,
        use_cache=False,
        limit=2,
        run_id="fixed",
    )
    run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    other = cfg.model_copy(update={"method": "naive-rag", "limit": 3})
    with pytest.raises(RunConflictError) as e:
        run_benchmark(other, chat_model=fake_chat(), progress=False)
    msg = str(e.value)
    assert "method: recorded 'full-text', this run 'naive-rag'" in msg
    assert "limit: recorded 2, this run 3" in msg
    assert "split" not in msg  # unchanged settings are not listed


def test_damaged_prediction_line_is_described_by_field(tmp_path):
    good = {
        "question_id": "dyadic/dialogue1/session1/q0",
        "split": "dyadic",
        "dialogue": "dialogue1",
        "session": "session1",
        "task_type": "UPR",
        "main_category": "Memory Recall",
        "difficulty": "easy",
        "question": "q?",
        "gold": "g",
        "answer": "a",
    }
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "latency_s": "fast"}) + "\n")
    with pytest.raises(ValueError) as e:
        read_predictions(tmp_path)
    assert str(e.value) == (
        f"{path}: line 2 is not a prediction record: "
        "latency_s: Input should be a valid number, unable to parse string as a number (got 'fast')"
    )
    path.write_text(json.dumps(good)[:30] + "\n" + json.dumps(good) + "\n")
    with pytest.raises(ValueError) as e:
        read_predictions(tmp_path)
    assert str(e.value).startswith(f"{path}: line 1 is not a prediction record: Invalid JSON: ")
    assert "pydantic" not in str(e.value)


@pytest.mark.parametrize("command", [["export"], ["submission", "export"]])
def test_export_of_a_folder_without_predictions_says_so(tmp_path, command):
    result = runner.invoke(app, [*command, str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert f"{tmp_path / 'nope'}: no predictions.jsonl (is this a run directory?)" in " ".join(result.output.split())
    assert "Errno" not in result.output


def test_missing_captions_folder_is_refused_before_the_run_starts(sample_root, tmp_path):
    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="full-text",
        out_dir=tmp_path / "runs",
        use_cache=False,
        limit=1,
        captions_dir=tmp_path / "no-captions",
    )
    with pytest.raises(FileNotFoundError, match=f"captions folder {tmp_path / 'no-captions'} does not exist"):
        run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert not (tmp_path / "runs").exists()


async def test_run_benchmark_inside_an_event_loop_points_to_arun_benchmark(tmp_path):
    # pytest-asyncio runs this test inside a loop, like a notebook cell
    cfg = RunConfig(data_root=tmp_path, out_dir=tmp_path / "runs")
    with pytest.raises(RuntimeError, match=r"use `await arun_benchmark\(config, \.\.\.\)`"):
        run_benchmark(cfg, chat_model=fake_chat(), progress=False)


def test_run_cli_notes_uncaptioned_images_and_whole_run_usage(tmp_path, monkeypatch):
    from h2hmem.data import synthesize_dataset
    from h2hmem.testing import MockOpenAIServer

    synthesize_dataset(tmp_path / "data", "small", 0)
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    with MockOpenAIServer() as srv:
        args = [
            "run",
            "--data",
            str(tmp_path / "data"),
            "--method",
            "full-text",
            "--model",
            "openai:mock",
            "--base-url",
            srv.base_url,
            "--out",
            str(tmp_path / "runs"),
            "--limit",
            "1",
            "--quiet",
        ]
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "1 model calls" in out and "tokens (whole run)" in out
    manifest = json.loads(next((tmp_path / "runs").glob("*/manifest.json")).read_text())
    missing = manifest["images_without_caption"]
    assert missing > 0  # synthetic images, never captioned
    assert f"note: {missing} images had no caption (shown by file name only)" in out


class StringAnswerMemory(MemoryMethod):
    """A plugin mistake: answer() returns a plain string instead of an Answer."""

    name = "string-answer"

    async def observe(self, session) -> None:
        pass

    async def answer(self, question):
        return "just a string"


def test_plugin_returning_a_non_answer_is_recorded_not_a_crash(sample_root, tmp_path):
    cfg = RunConfig(
        data_root=sample_root,
        split="multi-party",
        method="test_qa_user_errors:StringAnswerMemory",
        out_dir=tmp_path,
        use_cache=False,
        limit=2,
    )
    summary = run_benchmark(cfg, chat_model=fake_chat(), progress=False)
    assert summary.failed == 2
    assert set(summary.failed_questions.values()) == {
        "StringAnswerMemory.answer() returned str, not h2hmem.memory.Answer"
    }
    assert [p.answer for p in read_predictions(summary.run_dir)] == [None, None]


@pytest.mark.parametrize("run_id", ["../escape", "a/b", ".", "..", "a\\b"])
def test_run_id_must_be_one_folder_name(tmp_path, run_id):
    with pytest.raises(ValidationError, match="must be a single folder name"):
        RunConfig(data_root=tmp_path, run_id=run_id)
    result = runner.invoke(app, ["run", "--data", str(tmp_path), "--out", str(tmp_path / "runs"), "--run-id", run_id])
    assert result.exit_code == 2
    assert f"--run-id: run id {run_id!r} must be a single folder name" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists() and not (tmp_path / "escape").exists()
