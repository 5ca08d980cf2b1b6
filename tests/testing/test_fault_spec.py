"""Fault specs (``KIND[:ARGS][@WHICH][~RATE]``): parsed into Rules, served by MockOpenAIServer, errors named."""

from __future__ import annotations

import random

import httpx
import pytest

from h2hmem.testing import Fault, FaultSpecError, MockOpenAIServer, parse_fault_spec


@pytest.mark.parametrize(
    "spec,fault",
    [
        ("http:503", Fault.http(503)),
        ("http:429:2", Fault.http(429, retry_after=2)),
        ("reset", Fault.reset()),
        ("timeout", Fault.timeout(30.0)),
        ("timeout:0.5", Fault.timeout(0.5)),
        ("malformed_json", Fault.malformed_json()),
        ("truncated_body", Fault.truncated_body()),
        ("empty_choices", Fault.empty_choices()),
        ("missing_choices", Fault.missing_choices()),
        ("finish:length", Fault.finish("length")),
        ("finish:content_filter", Fault.finish("content_filter")),
    ],
)
def test_kinds(spec, fault):
    rule = parse_fault_spec(spec)
    assert rule.fault == fault and rule.path == "chat" and rule.requests is None and rule.when is None


def test_which_selects_request_numbers():
    assert list(parse_fault_spec("reset@3").requests) == [3]
    assert list(parse_fault_spec("reset@2-4").requests) == [2, 3, 4]
    every = parse_fault_spec("reset@%3").requests
    assert [n for n in range(1, 10) if n in every] == [3, 6, 9]
    later = parse_fault_spec("reset@5-").requests
    assert 4 not in later and 5 in later and 10**6 in later


def _statuses(specs: list[str], n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    with MockOpenAIServer(script=[parse_fault_spec(s, rng) for s in specs]) as srv:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client() as client:
            return [client.post(f"{srv.base_url}/chat/completions", json=body).status_code for _ in range(n)]


def test_served_in_order_first_match_wins():
    # request 2 → 503 (first rule), requests 4 and 6 → 429 (every 2nd, the 2nd already taken)
    assert _statuses(["http:503@2", "http:429@%2"], 6) == [200, 503, 200, 429, 200, 429]


def test_rate_is_seeded():
    a = _statuses(["http:500~0.5"], 20, seed=7)
    rng = random.Random(7)
    assert a == [500 if rng.random() < 0.5 else 200 for _ in range(20)]  # one draw per request, in order
    assert a == _statuses(["http:500~0.5"], 20, seed=7) and 0 < a.count(500) < 20


@pytest.mark.parametrize(
    "spec,message",
    [
        ("", "expected KIND[:ARGS][@WHICH][~RATE]"),
        ("http", "write http:STATUS or http:STATUS:RETRY_AFTER"),
        ("http:abc", "STATUS must be an integer, got 'abc'"),
        ("http:200", "STATUS must be an HTTP error status 400-599, got 200"),
        ("http:429:-1", "RETRY_AFTER must be >= 0"),
        ("reset:1", "reset takes no argument"),
        ("timeout:soon", "SECONDS must be a number, got 'soon'"),
        ("finish:stop", "write finish:length or finish:content_filter"),
        ("reset@x", "WHICH must be an integer, got 'x'"),
        ("reset@4-2", "range '4-2' ends before it starts"),
        ("reset@%0", "%K needs K >= 1"),
        ("reset~0", "RATE must be in (0, 1]"),
        ("explode", "unknown kind 'explode'"),
    ],
)
def test_errors_name_the_spec_and_the_part(spec, message):
    with pytest.raises(FaultSpecError, match="fault spec") as err:
        parse_fault_spec(spec)
    assert message in str(err.value) and repr(spec) in str(err.value)
