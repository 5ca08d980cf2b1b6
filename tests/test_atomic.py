"""The one atomic-write helper every store uses."""

import os
import stat

import pytest

from h2hmem._atomic import atomic_write_text


def test_replaces_whole_file_and_creates_folders(tmp_path):
    target = tmp_path / "a" / "b" / "x.json"
    atomic_write_text(target, "old")
    atomic_write_text(target, "névé", fsync=True)
    assert target.read_text(encoding="utf-8") == "névé"
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]  # no temporary file left


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "x.txt"
    atomic_write_text(target, "old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "bad \udce9")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_replaced_files_get_the_mode_open_gives_not_owner_only(tmp_path):
    # mkstemp makes 0600 and the rename keeps it: manifests, scores and reports were unreadable to a
    # group or a web server while predictions.jsonl (opened with open()) beside them was not
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    target = tmp_path / "atomic.json"
    atomic_write_text(target, "{}")
    atomic_write_text(target, "{}")  # a replacement too
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask
