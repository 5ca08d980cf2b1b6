"""h2hmem._json: orjson where it gives what the standard encoder gives (cache keys byte for byte)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random

import orjson
import pytest

from h2hmem._json import canonical, dumps_bytes


def _std(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_orjson_string_escapes_equal_the_standard_encoder_for_every_code_point():
    # what canonical() relies on: the two agree on every character outside the surrogates
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(chars)
    assert orjson.dumps(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")


def test_canonical_is_the_standard_text_character_for_character():
    rng = random.Random(3)
    alphabet = 'ab"\\\n\t\x00\x1f\x7fé中😀\u2028/ '

    def word() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))

    payloads = [
        # the shape of a request-cache key payload: floats in config, long strings in messages
        {
            "identity": {
                "backend": "openai",
                "model": "m",
                "base_url": ["http://b", "http://a"],
                "image": {"quality": 85},
            },
            "messages": [
                {"role": "system", "content": word()},
                {"role": "user", "content": [{"type": "text", "text": word()}], "as_parts": True},
            ],
            "config": {"temperature": 0.1, "max_tokens": None, "json_mode": False, "seed": 7, "top_p": 1e-07},
        },
        {"z": [1, 2.5, "x"], "a": {"é": 1, "e": 2, "中": [True, None]}, "m": 10**30, "n": -(2**63)},
        [1.0, 1e16, 0.0001, float("inf"), -0.0],
        {"k": "lone \ud800 surrogate"},
        "plain",
        [],
        {},
    ]
    for _ in range(200):
        payloads.append(
            {word(): [word(), rng.randint(-5, 5), rng.random() if rng.random() < 0.3 else word()] for _ in range(3)}
        )
    for p in payloads:
        assert canonical(p) == _std(p), p


def test_dumps_bytes_parses_to_what_the_standard_encoder_wrote():
    @dataclasses.dataclass
    class Point:
        x: int

    when = dt.datetime(2026, 12, 2, 5, 0, tzinfo=dt.timezone.utc)
    record = {"at": when, "p": Point(1), "text": "é\n中", "n": 10**30, "f": 1e-07, "none": None}
    ours = json.loads(dumps_bytes(record))
    assert ours == json.loads(json.dumps(record, ensure_ascii=False, default=str))
    assert ours["at"] == str(when) and ours["p"] == str(Point(1))  # default=str, as before, not orjson's own forms
    # a lone surrogate is kept as an escape (standard encoder, ASCII output)
    assert dumps_bytes({"t": "a\ud800b"}) == b'{"t": "a\\ud800b"}'
    assert json.loads(dumps_bytes({"t": "a\ud800b"}))["t"] == "a\ud800b"
    # without a default an unknown type is still a TypeError
    with pytest.raises(TypeError):
        dumps_bytes({"x": object()}, default=None)
    # compact UTF-8 on the fast path
    assert dumps_bytes({"a": "é", "b": [1, 2]}) == '{"a":"é","b":[1,2]}'.encode()
