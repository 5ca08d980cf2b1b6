"""The parsed-dataset cache: a settled dataset is read from its files once, then from the cache
until any file changes; warnings come back with it; unsettled, erroneous or changing datasets
and unreadable entries are never served."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from h2hmem.data import IssueLog, _files, _load_cache, load_dataset, synthesize_dataset


@pytest.fixture()
def cached(tmp_path, monkeypatch):
    """A settled synthetic dataset (every file dated an hour back) and a private cache folder;
    returns (root, list of the JSON files the reader opened)."""
    monkeypatch.setenv("H2HMEM_DATASET_CACHE", "1")
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "data"
    synthesize_dataset(root, "small", seed=1)
    _age(root, 3600)
    reads: list[str] = []
    real = _files.read_json

    def counting(path, *args, **kwargs):
        reads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr("h2hmem.data._loader.read_json", counting)
    return root, reads


def _age(root, seconds):
    old = time.time() - seconds
    for dirpath, _, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(dirpath, name), (old, old))


def test_second_load_reads_no_file_and_equals_the_first(cached):
    root, reads = cached
    first = load_dataset(root)
    n_files = len(reads)
    assert n_files > 10
    second = load_dataset(root)
    assert len(reads) == n_files  # served from the cache: no JSON file opened
    assert second == first and second is not first
    assert len(list((root.parent / "cache" / "datasets").glob("*.pickle"))) == 1


def test_any_change_to_a_file_is_a_miss(cached):
    root, reads = cached
    load_dataset(root)
    n = len(reads)
    session = next(root.rglob("session1/*.json"))
    text = session.read_text(encoding="utf-8")
    session.write_text(text.replace('"', '"', 1), encoding="utf-8")  # same bytes, new modification time
    _age(root, 3600 - 60)  # settled again, one minute later than before
    load_dataset(root)
    assert len(reads) == 2 * n  # read from the files again
    load_dataset(root)
    assert len(reads) == 2 * n  # and stored again under the new key
    image = next(p for p in root.rglob("image/*") if p.is_file())
    image.unlink()  # a removed file is a miss too (and its warning is found)
    log = IssueLog()
    load_dataset(root, log=log)
    assert len(reads) == 3 * n and any(i.code == "missing-image" for i in log.warnings)


def test_warnings_come_back_with_a_cached_dataset(cached):
    root, _ = cached
    image = next(p for p in root.rglob("image/*.png"))
    image.write_bytes(b"not an image")
    _age(root, 3600)
    first, second = IssueLog(), IssueLog()
    load_dataset(root, log=first)
    load_dataset(root, log=second)
    assert [i.code for i in first.warnings] == [i.code for i in second.warnings]
    assert "corrupt-image" in [i.code for i in second.warnings]


def test_unsettled_dataset_is_not_stored(cached):
    root, reads = cached
    os.utime(next(root.rglob("*.json")))  # modified just now: could change again within the clock's step
    load_dataset(root)
    n = len(reads)
    load_dataset(root)
    assert n > 10 and len(reads) == 2 * n  # read from the files both times: nothing stored
    assert not list((root.parent / "cache").rglob("*.pickle"))


def test_a_dataset_with_errors_is_never_stored(cached):
    root, reads = cached
    bad = next(root.rglob("session1/*.json"))
    bad.write_text("{ not json", encoding="utf-8")
    _age(root, 3600)
    for _ in range(2):
        log = IssueLog()
        load_dataset(root, strict=False, log=log)
        assert log.errors
    assert not list((root.parent / "cache").rglob("*.pickle"))


def test_a_changed_reader_or_a_torn_entry_is_a_miss(cached, monkeypatch):
    root, reads = cached
    load_dataset(root)
    n = len(reads)
    (entry,) = (root.parent / "cache" / "datasets").glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])  # torn
    load_dataset(root)
    assert len(reads) == 2 * n
    monkeypatch.setattr(_load_cache, "_code_digest", lambda: "another reader")
    load_dataset(root)
    assert len(reads) == 3 * n  # another key: the reader's code is part of it


def test_off_by_switch_and_by_argument(cached, monkeypatch):
    root, reads = cached
    load_dataset(root, cache=False)
    load_dataset(root, cache=False)
    assert not list((root.parent / "cache").rglob("*.pickle"))
    monkeypatch.setenv("H2HMEM_DATASET_CACHE", "0")
    load_dataset(root)
    assert not list((root.parent / "cache").rglob("*.pickle"))


def test_a_moved_dataset_is_another_entry(cached, tmp_path):
    root, reads = cached
    load_dataset(root)
    moved = tmp_path / "moved"
    shutil.copytree(root, moved)  # same files, times kept, another root
    ds = load_dataset(moved)
    assert ds.root == moved.resolve()
    assert len(list((tmp_path / "cache" / "datasets").glob("*.pickle"))) == 2


def test_validation_reads_every_file_even_when_the_dataset_is_cached(cached):
    from h2hmem.data import validate_dataset

    root, reads = cached
    load_dataset(root)
    n = len(reads)
    assert load_dataset(root) and len(reads) == n  # cached
    log, counts = validate_dataset(root)
    assert len(reads) == 2 * n and not log.errors and counts


def test_folders_without_inodes_are_each_walked(cached, monkeypatch):
    # a file system reporting st_ino 0 (some network drives): identifying folders by (device, inode)
    # would walk only the first one, and an edit in any other would be served from the cache
    root, _ = cached
    real_stat = os.stat

    def no_inode(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        return os.stat_result((st.st_mode, 0, *tuple(st)[2:]))

    monkeypatch.setattr(_load_cache.os, "stat", no_inode)
    before = _load_cache.fingerprint(root, "all")
    last = sorted(root.rglob("session*/*.json"))[-1]  # deep in the last dialogue's folders
    last.write_text(last.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert _load_cache.fingerprint(root, "all").key != before.key
