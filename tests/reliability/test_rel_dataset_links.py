"""Dataset folders that lie through the file system: FIFOs and devices as JSON files, session
folders that are links (outside the root, or to a sibling), two names for one session index, and
two sessions sharing a ``session_id``. Each is named precisely; none hangs or is read silently.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from relkit import make_dataset

from h2hmem.data import DatasetError, IssueLog, load_dataset

SCENES = Path("dyadic/dialogue1/scenes")


def _load(root: Path) -> tuple[IssueLog, object]:
    log = IssueLog()
    ds = load_dataset(root, strict=False, log=log)
    return log, ds


def _codes(issues) -> list[tuple[str, str]]:
    return [(i.code, i.file) for i in issues]


@pytest.fixture
def synth(tmp_path):
    return make_dataset(tmp_path / "data", dialogues=1, sessions=3, questions_per_session=2, multi_party=False)


@pytest.mark.timeout(30)
def test_a_fifo_as_session_json_is_an_error_not_an_absent_session_and_never_blocks(synth):
    sf = synth.root / SCENES / "session2" / "session.json"
    sf.unlink()
    os.mkfifo(sf)  # opening it for reading would block forever: the loader must not open it
    log, _ = _load(synth.root)
    assert _codes(log.errors) == [("not-a-file", str(SCENES / "session2" / "session.json"))]
    assert "is a FIFO, not a regular JSON file" in log.errors[0].message
    assert not [i for i in log.warnings if i.code == "absent-session"]


@pytest.mark.timeout(30)
def test_a_link_to_dev_zero_as_session_json_is_an_error(synth):
    sf = synth.root / SCENES / "session1" / "session.json"
    sf.unlink()
    sf.symlink_to("/dev/zero")
    log, _ = _load(synth.root)
    assert _codes(log.errors) == [("unsafe-path", str(SCENES / "session1" / "session.json"))]
    assert "link to /dev/zero, outside the dataset root" in log.errors[0].message
    assert not [i for i in log.warnings if i.code == "absent-session"]


@pytest.mark.timeout(30)
def test_a_fifo_as_questions_json_is_an_error(synth):
    qf = synth.root / SCENES / "session1" / "questions.json"
    qf.unlink()
    os.mkfifo(qf)
    log, _ = _load(synth.root)
    assert _codes(log.errors) == [("not-a-file", str(SCENES / "session1" / "questions.json"))]
    assert not [i for i in log.warnings if i.code == "missing-questions"]


def test_a_session_folder_linked_outside_the_root_is_an_error(synth, tmp_path):
    outside = tmp_path / "elsewhere" / "session4"
    shutil.copytree(synth.root / SCENES / "session3", outside)
    (synth.root / SCENES / "session4").symlink_to(outside, target_is_directory=True)
    log, ds = _load(synth.root)
    assert _codes(log.errors) == [("unsafe-session-folder", str(SCENES / "session4"))]
    assert "outside the dataset root" in log.errors[0].message
    assert [s.name for s in ds.dialogues[0].sessions] == ["session1", "session2", "session3"]
    with pytest.raises(DatasetError, match="session4: folder is a link to .*, outside the dataset root"):
        load_dataset(synth.root)


def test_a_session_folder_linked_to_a_sibling_is_refused_as_a_duplicate(synth):
    """Before: ``session30 → session3`` added session3's questions again under new ids."""
    (synth.root / SCENES / "session30").symlink_to("session3", target_is_directory=True)
    log, ds = _load(synth.root)
    assert _codes(log.errors) == [("duplicate-session-folder", str(SCENES / "session30"))]
    assert "link to session3 (the same session twice)" in log.errors[0].message
    assert ds.dialogues == ()  # the dialogue is refused, not loaded with duplicated questions
    with pytest.raises(DatasetError, match=r"session30: folder is a link to session3 \(the same session twice\)"):
        load_dataset(synth.root)


def test_session01_beside_session1_is_an_ambiguous_index_without_misleading_warnings(synth):
    """Before: one of them was kept and every question naming the other as its answer session
    gave an ``unknown-answer-session`` warning."""
    shutil.copytree(synth.root / SCENES / "session1", synth.root / SCENES / "session01")
    log, ds = _load(synth.root)
    assert _codes(log.errors) == [("duplicate-session-number", str(SCENES / "session1"))]
    msg = log.errors[0].message
    assert "ambiguous session index" in msg and "session1" in msg and "session01" in msg
    assert log.warnings == [] and ds.dialogues == ()


def test_two_sessions_with_one_session_id_get_a_warning(synth):
    import json

    sf = synth.root / SCENES / "session2" / "session.json"
    data = json.loads(sf.read_text())
    data["session_id"] = "topic_1"  # that of session1
    sf.write_text(json.dumps(data))
    log, ds = _load(synth.root)
    assert log.errors == []
    dup = [i for i in log.warnings if i.code == "duplicate-session-id"]
    assert _codes(dup) == [("duplicate-session-id", str(SCENES / "session2" / "session.json"))]
    assert dup[0].field == "session_id" and "'topic_1' is also that of session1" in dup[0].message
    assert len(ds.dialogues[0].sessions) == 3
