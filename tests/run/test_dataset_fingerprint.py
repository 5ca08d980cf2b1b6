"""The run's dataset fingerprint: found with os.scandir, equal to the pathlib definition earlier
versions recorded (a run they started must resume), on the sample and on a tree of edge cases."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from h2hmem.run import dataset_fingerprint


def _pathlib_fingerprint(root: Path, splits: list[str]) -> str:
    """The definition as it was written before (h2hmem ≤ 8f9b7cf): the oracle."""
    h = hashlib.sha256()
    for sp in splits:
        base = root / sp
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*.json")):
            if "caption" in p.parent.name:
                continue
            h.update(p.relative_to(root).as_posix().encode("utf-8", "surrogateescape") + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def test_the_sample_hashes_as_before(sample_root):
    for splits in (["dyadic"], ["multi-party"], ["dyadic", "multi-party"]):
        assert dataset_fingerprint(sample_root, splits) == _pathlib_fingerprint(sample_root, splits)


@pytest.mark.skipif(os.name != "posix", reason="links and byte file names")
def test_edge_cases_hash_as_before(tmp_path):
    root = tmp_path / "data"
    d = root / "dyadic" / "dialogue1"
    (d / "session1").mkdir(parents=True)
    (d / "captions").mkdir()
    (d / "session_2").mkdir()
    (d / "questions.json").write_text('{"q": 1}')
    (d / "session1" / "session.json").write_text("[1]")
    (d / "session_2" / "a.json").write_text("[2]")  # sorts after session1/ by parts, not by string
    (d / "captions" / "img.json").write_text('"left out"')
    (d / ".hidden.json").write_text("{}")  # dot files match *.json in pathlib
    (d / "UPPER.JSON").write_text("{}")  # case-sensitive: not matched
    (d / "notes.txt").write_text("not json")
    (root / "dyadic" / "top.json").write_text("{}")  # directly in the split: parent is the split
    os.symlink(d / "session1", d / "linked-dir")  # a link to a folder is not descended
    os.symlink(d / "questions.json", d / "linked.json")  # a link to a file is read
    (d / os.fsdecode(b"caf\xe9.json")).write_bytes(b"[3]")  # a name that is not UTF-8
    expected = _pathlib_fingerprint(root, ["dyadic", "multi-party"])
    assert dataset_fingerprint(root, ["dyadic", "multi-party"]) == expected
    # and the fingerprint moves with a byte of any counted file, not with a left-out one
    (d / "captions" / "img.json").write_text('"changed"')
    assert dataset_fingerprint(root, ["dyadic"]) == expected
    (d / "session_2" / "a.json").write_text("[9]")
    assert dataset_fingerprint(root, ["dyadic"]) != expected
