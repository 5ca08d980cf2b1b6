"""A submission file whose top level is not ``{"predictions": [...]}`` gets one plain message."""

from __future__ import annotations

import json

import pytest

from h2hmem.leaderboard import validate_submission


@pytest.mark.parametrize(
    "content, kind",
    [
        ([{"question_id": "dyadic/dialogue1/session1/q0"}], "array"),
        ("predictions", "string"),
        (3, "number"),
        (None, "null"),
    ],
)
def test_non_object_top_level_is_named(sample_root, tmp_path, content, kind):
    f = tmp_path / "prediction_dyadic.json"
    f.write_text(json.dumps(content), encoding="utf-8")
    r = validate_submission([f], sample_root)
    assert not r.ok
    assert [(e.code, e.message) for e in r.errors] == [
        ("invalid-field", f'the file must hold a JSON object {{"predictions": [...]}}, not a JSON {kind}')
    ]
    assert "SubmissionFile" not in str(r.errors[0])
