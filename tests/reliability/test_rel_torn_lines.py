"""Torn writes, exhaustively: ``predictions.jsonl`` cut at every byte of its last record.

A crash in the middle of ``write()`` leaves an unterminated tail. Whatever byte the cut falls on
(including right after an inner ``}`` of ``usage`` or ``evidence``, which makes the tail *look*
complete), ``read_predictions`` ignores it and ``RunStore.repair`` cuts exactly it off; a complete
line that is not a record is reported with its line number, never skipped.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from h2hmem.llm import Usage
from h2hmem.memory import Evidence
from h2hmem.records import Prediction, RunStore, read_predictions


def _record(i: int) -> Prediction:
    return Prediction(
        question_id=f"dyadic/dialogue1/session{i}/q0",
        split="dyadic",
        dialogue="dialogue1",
        session=f"session{i}",
        task_type="UPR",
        main_category="Memory Recall",
        difficulty="easy",
        question=f"What happened in session {i}?",
        gold="A kite {flew}.",
        answer="It {flew} away}",
        evidence=[Evidence(session=f"session{i}"), Evidence(session="session1", turn=2)],
        usage=Usage(prompt_tokens=10 * i, completion_tokens=3, calls=1),
        details={"k": {"v": [1]}},
    )


@pytest.fixture
def lines() -> list[bytes]:
    return [_record(i).model_dump_json().encode() + b"\n" for i in range(1, 4)]


def test_every_cut_of_the_last_record_is_ignored_and_repaired(tmp_path, lines):
    head = b"".join(lines[:-1])
    last = lines[-1]
    closing = [k for k in range(1, len(last) - 1) if last[k - 1 : k] == b"}"]
    assert len(closing) >= 4  # cuts that leave a tail ending in '}' are part of the sweep
    run = tmp_path / "run"
    run.mkdir()
    path = run / "predictions.jsonl"
    for cut in range(1, len(last) - 1):  # from 1 byte to the record minus its final '}' and newline
        path.write_bytes(head + last[:cut])
        got = [p.question_id for p in read_predictions(path)]
        assert got == [f"dyadic/dialogue1/session{i}/q0" for i in (1, 2)], f"cut at byte {cut}"
        removed = RunStore(run).repair()
        assert removed == cut and path.read_bytes() == head, f"cut at byte {cut}"


def test_a_complete_record_missing_only_its_newline_is_kept(tmp_path, lines):
    run = tmp_path / "run"
    run.mkdir()
    path = run / "predictions.jsonl"
    path.write_bytes(b"".join(lines)[:-1])
    assert len(read_predictions(path)) == 3
    assert RunStore(run).repair() == 0 and path.read_bytes() == b"".join(lines)


def test_a_bad_complete_line_is_an_error_with_its_line_number(tmp_path, lines):
    path = tmp_path / "predictions.jsonl"
    for bad in (lines[1][:40] + b"\n", lines[1][:40] + b"}\n", b"not json\n"):
        path.write_bytes(lines[0] + bad + lines[2])
        with pytest.raises(ValueError, match="line 2 is not a prediction record"):
            read_predictions(path)
        path.write_bytes(lines[0] + lines[1] + bad)  # the last line, but newline-terminated: not torn
        with pytest.raises(ValueError, match="line 3 is not a prediction record"):
            read_predictions(path)


@settings(max_examples=80, deadline=None, database=None)
@given(tail=st.binary(max_size=300) | st.text(max_size=200).map(str.encode), n_good=st.integers(0, 3))
def test_any_tail_after_complete_records_is_ignored_repaired_or_named(tmp_path_factory, tail, n_good):
    """Random bytes after ``n_good`` complete records: the records are always kept. An unterminated
    tail is ignored by ``read_predictions`` and removed by ``repair`` (unless it is a whole record);
    a bad newline-terminated line is a ``ValueError`` naming its line, never another exception."""
    run = tmp_path_factory.mktemp("tail")
    good = b"".join(_record(i).model_dump_json().encode() + b"\n" for i in range(1, n_good + 1))
    path = run / "predictions.jsonl"
    path.write_bytes(good + tail)
    complete_tail_lines = [l for l in tail.split(b"\n")[:-1] if l.strip()]
    try:
        got = read_predictions(path)
    except ValueError as e:
        assert "is not a prediction record" in str(e) and complete_tail_lines, e
    else:
        assert [p.question_id for p in got][:n_good] == [
            f"dyadic/dialogue1/session{i}/q0" for i in range(1, n_good + 1)
        ]
    removed = RunStore(run).repair()
    after = path.read_bytes()
    assert after.startswith(good) and (not after or after.endswith(b"\n"))
    last = tail.split(b"\n")[-1]
    assert removed in (0, len(last))
