"""--dry-run counts the real prompts without sending any; --max-cost stops cleanly and resumes."""

import json
import sys
from pathlib import Path

import pytest

from h2hmem.data import synthesize_dataset
from h2hmem.records import read_predictions
from h2hmem.run import RunConfig, Selection, estimate_run, run_benchmark
from h2hmem.testing import MockOpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
from mm_fakes import HashEmbedder


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth") / "data"
    synthesize_dataset(root, scale="small", seed=0)
    return root


def _cfg(root, tmp_path, server, **kw):
    # "mock" counts with cl100k, like the mock server (gpt-4.1-nano would count with o200k); priced like gpt-4.1-nano
    base = dict(
        data_root=root,
        method="full-text",
        model="openai:mock",
        prices={"mock": (0.10, 0.40)},
        base_url=[server.base_url],
        out_dir=tmp_path / "runs",
        cache_path=tmp_path / "cache.sqlite",
        concurrency=4,
    )
    base.update(kw)
    return RunConfig(**base)


@pytest.mark.parametrize("method", ["full-text", "naive-rag"])
def test_dry_run_sends_nothing_and_counts_what_the_real_run_sends(synth, tmp_path, method):
    with MockOpenAIServer() as server:
        # preset harmonized: system + user messages, question images as caption text (the mock counts an image
        # part as 85 tokens, the estimate as 765: see the paper variant below)
        cfg = _cfg(synth, tmp_path, server, method=method, preset="harmonized")
        est = estimate_run(cfg, embedder=HashEmbedder())
        assert server.calls == 0 and not cfg.run_dir.exists() and not (tmp_path / "cache.sqlite").exists()
        answer = est.stages["answer"]
        assert est.questions == 60 and answer.calls == 60 and answer.cached_calls == 0
        run_benchmark(cfg, embedder=HashEmbedder(), progress=False)
        assert server.calls == 60
        sent = json.loads((cfg.run_dir / "manifest.json").read_text())["usage"]["answer"]["prompt_tokens"]
        # same tokenizer (cl100k for the mock), same prompts: equal, not just within 1%
        assert answer.prompt_tokens == sent
        assert answer.format_tokens == 60 * 3 * 3  # system + user message + the reply priming
        want = ((answer.prompt_tokens + answer.format_tokens) * 0.10 + answer.completion_tokens * 0.40) / 1e6
        assert answer.cost_usd == pytest.approx(want)

        # after the run: its questions are recorded (not counted); a new run id over the same cache is all cached
        assert estimate_run(cfg, embedder=HashEmbedder()).already_recorded == 60
        fresh = estimate_run(cfg.model_copy(update={"run_id": "other"}), embedder=HashEmbedder()).stages["answer"]
        assert fresh.calls == 0 and fresh.cached_calls == 60 and fresh.cached_prompt_tokens == sent
        assert server.calls == 60


def test_unknown_model_needs_a_price(synth, tmp_path):
    with MockOpenAIServer() as server:
        cfg = _cfg(synth, tmp_path, server, model="openai:mystery", prices={}, selection=Selection(sample=20))
        est = estimate_run(cfg)
        assert est.unpriced == ["mystery"] and est.stages["answer"].cost_usd is None
        nano = estimate_run(cfg.model_copy(update={"model": "openai:gpt-4.1-nano"})).stages["answer"]
        assert nano.cost_usd == pytest.approx(
            ((nano.prompt_tokens + nano.format_tokens) * 0.10 + nano.completion_tokens * 0.40) / 1e6
        )  # built-in price
        priced = estimate_run(cfg.model_copy(update={"prices": {"mystery": (1.0, 2.0)}})).stages["answer"]
        assert priced.cost_usd == pytest.approx(
            ((priced.prompt_tokens + priced.format_tokens) * 1.0 + priced.completion_tokens * 2.0) / 1e6
        )
        with pytest.raises(ValueError, match="--price mystery=IN/OUT"):
            run_benchmark(cfg.model_copy(update={"max_cost_usd": 1.0}), progress=False)


def test_max_cost_stops_then_resumes_without_losing_or_repeating(synth, tmp_path):
    with MockOpenAIServer() as server:
        cfg = _cfg(synth, tmp_path, server, concurrency=2)
        # one full-text answer call's worst case is ~ (prompt · 0.10 + 1024 · 0.40) / 1e6 ≈ $0.0005
        stopped = run_benchmark(cfg.model_copy(update={"max_cost_usd": 0.004}), progress=False)
        assert stopped.stopped and "budget of $0.0040 cannot cover the next" in stopped.stopped
        first = read_predictions(cfg.run_dir)
        assert 0 < len(first) < 60 and not any(p.failed for p in first)
        assert server.calls == len(first)  # every paid call is recorded
        m = json.loads((cfg.run_dir / "manifest.json").read_text())
        assert m["status"] == "incomplete" and m["budget"][0]["spent_usd"] <= 0.004
        done = run_benchmark(cfg, progress=False)
        assert done.stopped is None and done.skipped == len(first) and done.answered_now == 60 - len(first)
        lines = (cfg.run_dir / "predictions.jsonl").read_text().splitlines()
        ids = [json.loads(x)["question_id"] for x in lines]
        assert len(ids) == 60 == len(set(ids)) and server.calls == 60


def test_caption_stage_counts_one_call_per_uncaptioned_image(synth, tmp_path):
    from h2hmem.caption._run import dataset_images
    from h2hmem.caption._settings import CaptionSettings
    from h2hmem.llm._tokens import count_tokens

    with MockOpenAIServer() as server:
        cfg = _cfg(synth, tmp_path, server, selection=Selection(dialogues=["dyadic/1"]))
        est = estimate_run(cfg, embedder=HashEmbedder(), caption_model="openai:gpt-4o")
        assert server.calls == 0
    _, images = dataset_images(synth)
    n = sum(
        1
        for iid, ref in images.items()
        if ref.path is not None and (iid.split, iid.dialogue) == ("dyadic", "dialogue1")
    )
    cap = est.stages["caption"]
    assert n > 0 and cap.calls == n and cap.model == "gpt-4o"
    # each: the prompt (gpt-4o counts with o200k) + one image at 765 tokens; 3 + 3 chat-format tokens
    assert cap.prompt_tokens == n * (count_tokens(CaptionSettings().rendered_prompt, "o200k_base") + 765)
    assert cap.format_tokens == n * 6
    assert cap.cost_usd == pytest.approx(
        ((cap.prompt_tokens + cap.format_tokens) * 2.50 + cap.completion_tokens * 10.0) / 1e6
    )


def test_a_mem_note_writing_is_counted_as_memory_build(synth, tmp_path):
    # plain-text replies (no schema instance): the notes are unusable, as in the dry run
    with MockOpenAIServer(responder=lambda body: "not a note") as server:
        cfg = _cfg(synth, tmp_path, server, method="a-mem", selection=Selection(dialogues=["dyadic/1"]))
        est = estimate_run(cfg, embedder=HashEmbedder())
        assert server.calls == 0
        run_benchmark(cfg, embedder=HashEmbedder(), progress=False)
        usage = json.loads((cfg.run_dir / "manifest.json").read_text())["usage"]
        images = sum(
            1
            for b in server.requests
            for m in b.get("messages", [])
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "image_url"
        )  # question images (preset paper)
    from h2hmem.llm._estimate import IMAGE_TOKENS
    from h2hmem.testing._mock_server import IMAGE_PART_TOKENS

    # the mock's notes are unusable JSON, like the dry run's empty replies: both fall back alike, so the
    # answers' prompts are equal (an image part: 765 tokens in the estimate, 85 at the mock)
    answer = est.stages["answer"]
    assert answer.calls == usage["answer"]["calls"] > 0
    assert answer.prompt_tokens - (IMAGE_TOKENS - IMAGE_PART_TOKENS) * images == usage["answer"]["prompt_tokens"]
    # the note writer's re-asks of an unusable reply (paper: 3 tries) are not counted: the estimate assumes
    # usable replies, as a real model's are (counting them doubled the build calls of a run with a real model)
    stats = json.loads((cfg.run_dir / "manifest.json").read_text())["method_stats"]
    build = est.stages["memory_build"]
    assert stats["analysis_retries"] > 0
    assert build.calls == usage["memory_build"]["calls"] - stats["analysis_retries"] > 0
    assert 0 < build.prompt_tokens < usage["memory_build"]["prompt_tokens"]


def test_dry_run_under_paper_counts_the_question_images(synth, tmp_path):
    """Preset paper: one user message per request and the question image as an image part; the estimate
    charges IMAGE_TOKENS per image where the mock server charges IMAGE_PART_TOKENS, text tokens agree."""
    from h2hmem.llm._estimate import IMAGE_TOKENS
    from h2hmem.testing._mock_server import IMAGE_PART_TOKENS

    with MockOpenAIServer() as server:
        cfg = _cfg(synth, tmp_path, server, method="full-text")
        answer = estimate_run(cfg, embedder=HashEmbedder()).stages["answer"]
        run_benchmark(cfg, embedder=HashEmbedder(), progress=False)
        images = sum(
            1
            for b in server.requests
            for m in b["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p.get("type") == "image_url"
        )
        sent = json.loads((cfg.run_dir / "manifest.json").read_text())["usage"]["answer"]["prompt_tokens"]
    assert images > 0 and answer.format_tokens == 60 * 2 * 3  # user message + the reply priming
    assert answer.prompt_tokens - (IMAGE_TOKENS - IMAGE_PART_TOKENS) * images == sent


def test_budget_amounts_keep_their_digits_below_four_decimals():
    # a $0.0001 budget is spent by calls costing millionths: four decimals printed them all as $0.0000
    from h2hmem.run._spend import _usd

    assert [_usd(v) for v in (0.0, 1.0, 0.004, 0.0001, 0.0000123456, 0.00002345678, 12.5)] == [
        "$0.0000",
        "$1.0000",
        "$0.0040",
        "$0.0001",
        "$0.0000123456",
        "$0.0000234568",
        "$12.5000",
    ]


def test_a_budget_stop_during_the_build_keeps_the_method_stats(synth, tmp_path):
    # the manifest's method_stats were all 0 when --max-cost stopped A-Mem while it wrote notes
    with MockOpenAIServer() as server:
        cfg = _cfg(
            synth, tmp_path, server, method="a-mem", selection=Selection(dialogues=["dyadic/1"]), max_cost_usd=0.002
        )
        stopped = run_benchmark(cfg, embedder=HashEmbedder(), progress=False)
    manifest = json.loads((cfg.run_dir / "manifest.json").read_text())
    assert stopped.stopped and manifest["usage"]["memory_build"]["calls"] > 0
    assert manifest["method_stats"]["construction_calls"] == manifest["usage"]["memory_build"]["calls"]
