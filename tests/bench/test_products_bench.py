"""bench.products: per-dialogue call statistics from transcripts, the prefix a KV cache reuses, the
fitted model rates and the table (hand-computed values)."""

from __future__ import annotations

import pytest

from bench.products import call_stats, estimate_s, fit_rates, flat_prompt, shared_prefix, table


def _call(system: str, user: str, prompt: int, completion: int, latency: float, **extra):
    return {
        "stage": "memory_build",
        "dialogue": "multi-party/dialogue3",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        "latency_s": latency,
        **extra,
    }


def test_shared_prefix_and_flat_prompt():
    assert shared_prefix("abcd", "abxy") == 2
    assert shared_prefix("", "abc") == 0
    assert shared_prefix("abc", "abc") == 3
    parts = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "name": "x"}]}]
    assert flat_prompt(parts) == "<user>a"


def test_call_stats_count_paid_cached_failed_and_the_unshared_prompt():
    sys90 = "S" * 90
    first = _call(sys90, "0123456789", 100, 10, 20.0)  # "<system>" + 90 + "<user>" + 10 = 114 characters
    second = _call(sys90, "abcdefghij", 100, 30, 5.0)  # shares the 104 chars before the user text
    cached = _call(sys90, "abcdefghij", 100, 30, 0.0, cached=True)
    failed = _call(sys90, "zz", 0, 0, 1.0, error="ModelError: x")
    other = {**_call("x", "y", 7, 7, 1.0), "stage": "answer"}
    stats = call_stats([first, second, cached, failed, other])["multi-party/dialogue3"]
    n = len(flat_prompt(first["messages"]))
    assert n == 8 + 90 + 6 + 10 == 114
    # first: nothing before it → all 100 tokens new; second: 10 of its 114 characters are new
    assert stats["new_prompt_tokens"] == round(100 + 100 * 10 / 114) == 109
    assert (stats["calls"], stats["cached"], stats["failed"]) == (2, 1, 1)
    assert (stats["prompt_tokens"], stats["completion_tokens"], stats["model_s"]) == (200, 40, 25.0)
    assert stats["latencies_s"] == [20.0, 5.0]


def test_fit_rates_recovers_the_rates_of_exact_latencies():
    # latency = 0.02 s per new prompt token + 0.1 s per generated token. Each prompt reads
    # "<system>" + 10 digits + "<user>u" (25 characters); consecutive calls share "<system>" (8),
    # so after the first call 17/25 of a prompt's tokens are new
    calls = [_call(f"{i}" * 10, "u", 100 * (i + 1), 10 * (i + 2) ** 2, 0.0) for i in range(4)]
    for i, c in enumerate(calls):
        new = c["usage"]["prompt_tokens"] * (1 if i == 0 else 17 / 25)
        c["latency_s"] = 0.02 * new + 0.1 * c["usage"]["completion_tokens"]
    rates = fit_rates(calls)
    assert rates is not None and rates["calls"] == 4
    assert rates["s_per_prompt_token"] == pytest.approx(0.02)
    assert rates["s_per_generated_token"] == pytest.approx(0.1)
    assert fit_rates(calls[:2]) is None
    stats = {"new_prompt_tokens": 1000, "calls": 4}
    assert estimate_s(stats, rates, completion_per_call=50) == pytest.approx(1000 * 0.02 + 4 * 50 * 0.1)


def test_table_hides_mock_recall_and_estimates_its_time_from_the_real_model():
    per = {"calls": 2, "cached": 0, "failed": 0, "prompt_tokens": 200, "completion_tokens": 40}
    real = {
        "label": "mem0 qwen",
        "model": "local:qwen2.5-coder-1.5b",
        "dialogues": ["d"],
        "turn_recall@5": 0.5,
        "hit@5": 1.0,
        "n_turn": 6,
        "n_session": 33,
        "wall_s": 30.0,
        "calls_by_dialogue": {"d": {**per, "new_prompt_tokens": 120, "model_s": 25.0}},
        "rates": {"s_per_prompt_token": 0.02, "s_per_generated_token": 0.1, "calls": 2},
    }
    mock = {
        **real,
        "label": "graphiti mock",
        "model": "openai:mock (h2hmem.testing)",
        "turn_recall@5": 0.9,
        "calls_by_dialogue": {"d": {**per, "calls": 10, "new_prompt_tokens": 1000, "model_s": 0.1}},
        "rates": None,
    }
    md = table([real, mock]).splitlines()
    assert (
        md[2] == "| mem0 qwen | local:qwen2.5-coder-1.5b | 1 | 0.500 | 1.000 | 6 / 33 | 2.0 | 100 | 120 | 25 | 30.0 |"
    )
    # mock: 1000 new tokens × 0.02 + 10 calls × 20 generated tokens (the real model's mean) × 0.1 = 40 s
    assert md[3] == (
        "| graphiti mock | openai:mock (h2hmem.testing) | 1 | mock: not a quality figure | – | 6 / 33 | 10.0 | 20 "
        "| 1,000 | ~40 (Qwen, estimated) | 30.0 |"
    )
