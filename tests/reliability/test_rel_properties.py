"""Property-based tests (hypothesis): random JSON-ish dataset files never crash the loader (nor
``h2hmem data validate``), and random submission files never crash the submission validator.

Invariants checked on every example:
- loader: ``load_dataset(strict=False)`` returns; ``strict=True`` returns the same or raises
  ``DatasetError`` only; every issue names a file and prints as UTF-8; question ids are unique and
  well formed; every resolved image path lies inside the dataset root; the CLI prints valid JSON
  and exits 0 (no errors) or 1 (errors), never a traceback.
- submission validator: ``check_submission`` returns; every problem names its file and a row
  inside the file; for each submitted split, matched and missing question ids partition the split;
  a question is matched at most once; rows copied from the dataset validate without error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from relkit import SUB_TYPES, cli, make_dataset

from h2hmem.data import DatasetError, IssueLog, load_dataset

PROFILE = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# ----- strategies --------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=12,
)
tricky_text = st.sampled_from(["", " ", "caf\udce9", "\x00", "a" * 30_000, "\u202e evil", "日本語", "\ufeff"])
texts = st.text(max_size=40) | tricky_text
image_names = st.sampled_from(
    [
        "",
        "1.png",
        "session1/1.png",
        "session2/1.png",
        "../1.png",
        "/etc/passwd",
        "C:\\boot.ini",
        "a/b/1.png",
        "1.png,session2/1.png",
        "session1/../../x",
        "\x00.png",
        "sessionX/1.png",
        "session1\\1.png",
        " 1.png ",
    ]
) | st.text(max_size=10)
labels = st.sampled_from(["session1", "session2", "session0", "S1-1", "S9-9", "topic_1", "", "session01"])


def _slots(value) -> list[tuple[object, object]]:
    """Every (container, key) pair inside a JSON value: dict keys and list indexes, at any depth."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        keys = list(v) if isinstance(v, dict) else range(len(v)) if isinstance(v, list) else []
        for k in keys:
            out.append((v, k))
            stack.append(v[k])
    return out


@st.composite
def perturbed(draw, strategy):
    """A schema-valid value with 0–2 random breaks: a key deleted or any value replaced by junk."""
    value = draw(strategy)
    for _ in range(draw(st.integers(0, 2))):
        slots = _slots(value)
        if not slots:
            break
        container, key = draw(st.sampled_from(slots))
        if isinstance(container, dict) and draw(st.booleans()):
            del container[key]
        else:
            container[key] = draw(json_values)
    return value


turns = st.fixed_dictionaries(
    {"role": st.text(max_size=8), "content": st.fixed_dictionaries({"text": texts, "image": image_names})}
)
sessions = st.fixed_dictionaries(
    {
        "dialogue": st.lists(turns, max_size=4),
        "timeline_date": st.sampled_from(["2024-01-01", "2024-13-45 x", "", " 2024-2-3 上午", "yesterday"]),
    },
    optional={"session_id": labels, "session_title": texts},
)
questions = st.fixed_dictionaries(
    {
        "question": st.fixed_dictionaries({"text": texts, "image": image_names | st.lists(image_names, max_size=2)}),
        "original_answer": texts,
        "answer_session": st.lists(labels, max_size=3) | labels,
        "question_type": st.fixed_dictionaries(
            {"sub_type": st.sampled_from([*SUB_TYPES, "upr", "Temporal reasoning (TR)", "Vibes", ""])},
            optional={"main_type": st.sampled_from(["Memory Recall", "memory reasoning", "Recall", "??"])},
        ),
    },
    optional={"difficulty": st.sampled_from(["easy", "Hard", "", "extreme"]), "validated": st.booleans()},
)
question_files = st.fixed_dictionaries(
    {"questions": st.lists(questions, max_size=4)}, optional={"metadata": json_values}
)


def encoded(strategy):
    """File bytes: JSON of a drawn value (sometimes ASCII-escaped, which keeps lone surrogates as
    escapes), or raw bytes now and then."""

    def dump(pair):
        value, ascii_ = pair
        try:
            return json.dumps(value, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")
        except ValueError:
            return b"{}"

    values = st.one_of(perturbed(strategy), perturbed(strategy), perturbed(strategy), json_values)
    return st.one_of(
        st.tuples(values, st.booleans()).map(dump),
        st.tuples(values, st.booleans()).map(dump),
        st.tuples(values, st.booleans()).map(dump),
        st.binary(max_size=40),
    )


# ----- loader ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_dataset(
        tmp_path_factory.mktemp("prop") / "data", dialogues=1, sessions=2, questions_per_session=1, multi_party=False
    ).root


QID = re.compile(r"^dyadic/dialogue1/session\d+/q\d+$")


@PROFILE
@given(session=encoded(sessions), qfile=encoded(question_files), s0=encoded(question_files))
def test_random_dataset_files_load_or_report_issues(base, session, qfile, s0):
    scenes = base / "dyadic" / "dialogue1" / "scenes"
    (scenes / "session1" / "session.json").write_bytes(session)
    (scenes / "session1" / "questions.json").write_bytes(qfile)
    (scenes / "session0" / "questions.json").write_bytes(s0)

    log = IssueLog()
    ds = load_dataset(base, strict=False, log=log)
    for issue in log.issues:
        assert issue.file and issue.severity in ("error", "warning")
        str(issue).encode("utf-8")  # printable: no lone surrogates
    ids = [q.id for q in ds.questions]
    event(f"errors: {bool(log.errors)}, session1 questions: {sum('session1/' in i for i in ids)}")
    assert len(ids) == len(set(ids)) and all(QID.match(i) for i in ids)
    root = base.resolve()
    for q in ds.questions:
        for ref in q.images:
            assert ref.path is None or ref.path.resolve().is_relative_to(root)
    for s in (s for d in ds.dialogues for s in d.sessions):
        for t in s.turns:
            assert t.image is None or t.image.path is None or t.image.path.is_relative_to(root)
    ds.model_dump_json().encode("utf-8")

    try:
        strict = load_dataset(base, strict=True)
        assert not log.errors and strict == ds
    except DatasetError as e:
        assert log.errors and len(e.issues) == len(log.errors)

    res = cli("data", "validate", base, "--json")
    assert "Traceback" not in res.output and res.code == (1 if log.errors else 0), res.output[-3000:]
    report = json.loads(res.output)
    assert report["errors"] == len(log.errors) and report["warnings"] == len(log.warnings)


# ----- submission validator ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = make_dataset(tmp_path_factory.mktemp("sub") / "data", dialogues=2, sessions=2, questions_per_session=2).root
    return load_dataset(root)


def _valid_rows(dataset, split: str, with_ids: bool) -> list[dict]:
    from h2hmem.data import image_field

    return [
        {
            "question_text": q.text,
            "question_image": image_field(q.session, [i.key for i in q.images]),
            "system_answer": f"answer {q.index}",
            "original_answer": q.gold,
            "category": q.task_type.value,
            **({"question_id": q.id} if with_ids else {}),
        }
        for q in dataset.questions
        if q.split == split
    ]


row_like = perturbed(
    st.fixed_dictionaries(
        {
            "question_text": texts,
            "question_image": image_names,
            "system_answer": texts,
            "original_answer": texts,
            "category": st.sampled_from([*SUB_TYPES, "??", ""]),
        },
        optional={
            "question_id": st.sampled_from(
                [
                    "dyadic/dialogue1/session1/q0",
                    "multi-party/dialogue1/session2/q1",
                    "dyadic/dialogue9/session1/q0",
                    "",
                    "../../etc",
                ]
            )
        },
    )
)
file_names = st.sampled_from(
    [
        "prediction_dyadic.json",
        "prediction_multiparty.json",
        "prediction_multi_party.json",
        "my_dyadic_run.json",
        "predictions.json",
        "dyadic_multiparty.json",
    ]
)


@st.composite
def submission_files(draw, dataset):
    files = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(file_names)
        kind = draw(st.sampled_from(["random", "rows", "mutated"]))
        if kind == "random":
            content = draw(encoded(json_values))
        else:
            split = draw(st.sampled_from(["dyadic", "multi-party"]))
            rows = _valid_rows(dataset, split, draw(st.booleans()))
            rows = draw(st.permutations(rows))[: draw(st.integers(0, len(rows)))]
            if kind == "mutated":
                rows = rows + draw(st.lists(row_like, max_size=3))
                if rows and draw(st.booleans()):
                    rows.append(dict(rows[0]))  # a duplicate row
            content = draw(encoded(st.just({"predictions": rows})))
        files.append((name, content))
    return files


@PROFILE
@given(data=st.data())
def test_random_submission_files_never_crash_the_validator(dataset, data):
    from h2hmem.leaderboard._validate import UploadedFile, check_submission

    files = data.draw(submission_files(dataset))
    report = check_submission([UploadedFile(name=n, content=c) for n, c in files], dataset)
    report.model_dump_json().encode("utf-8")
    names = {n for n, _ in files}
    for p in report.problems:
        assert p.file in names or re.match(r"^<(dyadic|multi-party)>$", p.file), p
        str(p).encode("utf-8")
    matched = [m.question_id for m in report.matched]
    assert len(matched) == len(set(matched))
    for split, n in report.expected.items():
        ids = {q.id for q in dataset.questions if q.split == split}
        got = {m for m in matched if m in ids}
        missing = {m for m in report.missing if m in ids}
        assert got | missing == ids and not got & missing and n == len(ids)


@PROFILE
@given(data=st.data())
def test_rows_copied_from_the_dataset_validate_cleanly(dataset, data):
    from h2hmem.leaderboard._validate import UploadedFile, check_submission

    files, expected = [], set()
    for split, name in (("dyadic", "prediction_dyadic.json"), ("multi-party", "prediction_multiparty.json")):
        rows = data.draw(st.permutations(_valid_rows(dataset, split, data.draw(st.booleans()))))
        keep = rows[: data.draw(st.integers(1, len(rows)))]
        files.append(UploadedFile(name=name, content=json.dumps({"predictions": keep}).encode()))
        expected |= {
            q.id
            for q in dataset.questions
            if q.split == split and any(r["question_text"] == q.text and r["original_answer"] == q.gold for r in keep)
        }
    report = check_submission(files, dataset)
    assert report.errors == [], report.errors
    assert {m.question_id for m in report.matched} == expected
    assert set(report.missing) == {q.id for q in dataset.questions} - expected
