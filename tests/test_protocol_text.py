"""Protocol data files: the official strings ship as package data naming their source and commit."""

from __future__ import annotations

import pytest

from h2hmem._protocol_text import load_protocol_text

COMMIT = "b6070899e9c20949f2f8d585f8a19062bb6faafb"


@pytest.mark.parametrize(
    "package,name,path,start,end",
    [
        (
            "h2hmem.caption",
            "official_caption_prompt.txt",
            "caption/gpt_4o_caption.py",
            "Please describe this image in a concise manner",
            "it will be truncated.",
        ),
        (
            "h2hmem.metrics",
            "official_judge_prompt.txt",
            "evaluate_metrics/LLM-as-judge/LLM_as_judge.py",
            "You are an impartial judge evaluating",
            "Here are the questions to evaluate:\n",
        ),
    ],
)
def test_official_strings_name_their_source(package, name, path, start, end):
    data = load_protocol_text(package, name)
    assert data.source == f"varib1/H2HMEM {path} @ {COMMIT}"
    assert data.text.startswith(start) and data.text.endswith(end) and not data.text.endswith(end + "\n")


def test_missing_file_is_a_clear_error():
    with pytest.raises(FileNotFoundError):
        load_protocol_text("h2hmem.metrics", "no_such_prompt.txt")
