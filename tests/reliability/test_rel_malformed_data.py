"""Malformed datasets: every broken copy gives a clear error or warning naming file and field, and
neither ``h2hmem data validate`` nor ``h2hmem run`` prints a traceback.

Each case starts from a fresh, valid synthetic dataset (``relkit.make_dataset``) in ``tmp_path`` and
breaks one thing. Expected: the exit code (validate: 1 on errors, 0 on warnings only; run: 2 on
errors, 0 on warnings), the issue code, the file (relative to the root) and the field.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from relkit import Synth, cli, cli_subprocess, make_dataset, write_json

from h2hmem.testing import MockOpenAIServer

S1 = "dyadic/dialogue1/scenes/session1"
SESSION = f"{S1}/session.json"
QUESTIONS = f"{S1}/questions.json"
S0Q = "dyadic/dialogue1/scenes/session0/questions.json"


def _edit(rel: str, fn: Callable[[dict], object]) -> Callable[[Synth], None]:
    """Load the JSON at ``rel``, let ``fn`` change it in place, write it back."""

    def mutate(s: Synth) -> None:
        p = s.root / rel
        data = json.loads(p.read_text(encoding="utf-8"))
        fn(data)
        write_json(p, data)

    return mutate


def _raw(rel: str, content: bytes) -> Callable[[Synth], None]:
    def mutate(s: Synth) -> None:
        (s.root / rel).write_bytes(content)

    return mutate


def _turn(i: int, **changes) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        d["dialogue"][i].update(changes)

    return fn


def _content(i: int, **changes) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        d["dialogue"][i]["content"].update(changes)

    return fn


def _q(i: int, fn2: Callable[[dict], None]) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        fn2(d["questions"][i])

    return fn


def _rename(src: str, dst: str) -> Callable[[Synth], None]:
    def mutate(s: Synth) -> None:
        os.rename(s.root / src, s.root / dst)

    return mutate


def _copy_dir(src: str, dst: str) -> Callable[[Synth], None]:
    def mutate(s: Synth) -> None:
        shutil.copytree(s.root / src, s.root / dst)

    return mutate


def _symlink_outside(s: Synth) -> None:
    outside = s.root.parent / "secret.png"
    outside.write_bytes((s.root / S1 / "image" / "1.png").read_bytes())
    (s.root / S1 / "image" / "1.png").unlink()
    (s.root / S1 / "image" / "1.png").symlink_to(outside)


def _only_session0(s: Synth) -> None:
    scenes = s.root / "dyadic/dialogue1/scenes"
    for k in (1, 2):
        shutil.rmtree(scenes / f"session{k}")


def _no_scenes(s: Synth) -> None:
    _rename("dyadic/dialogue1/scenes", "dyadic/dialogue1/scenez")(s)


def _session_file_not_folder(s: Synth) -> None:
    (s.root / "dyadic/dialogue1/scenes/session7").write_text("{}")


def _drop_session_json(s: Synth) -> None:
    (s.root / SESSION).unlink()


def _deep_json(s: Synth) -> None:
    (s.root / SESSION).write_text("[" * 200_000 + "]" * 200_000)


def _corrupt_image(s: Synth) -> None:
    (s.root / S1 / "image" / "1.png").write_bytes(b"\x89PNG not really an image" * 3)


def _zero_image(s: Synth) -> None:
    (s.root / S1 / "image" / "1.png").write_bytes(b"")


def _missing_image(s: Synth) -> None:
    (s.root / S1 / "image" / "1.png").unlink()


def _non_utf8_folder(s: Synth) -> None:
    os.rename(s.root / S1, os.fsencode(s.root / "dyadic/dialogue1/scenes") + b"/session\xff1")


@dataclass
class Case:
    id: str
    mutate: Callable[[Synth], None]
    severity: str
    code: str
    file: str
    field: str | None = None
    text: str = ""
    """A fragment the message must contain."""
    dropped: str = ""
    """Prefix of the question ids the break removes from the dataset (their folder is ignored)."""


def _set(key: str, value: object) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        d[key] = value

    return fn


def _del(key: str) -> Callable[[dict], None]:
    def fn(d: dict) -> None:
        del d[key]

    return fn


def _qset(path: str, value: object) -> Callable[[dict], None]:
    def fn(q: dict) -> None:
        *head, last = path.split(".")
        for k in head:
            q = q[k]
        q[last] = value

    return fn


def _qdel(path: str) -> Callable[[dict], None]:
    def fn(q: dict) -> None:
        *head, last = path.split(".")
        for k in head:
            q = q[k]
        del q[last]

    return fn


CASES = [
    # ----- unreadable files ---------------------------------------------------------------------
    Case(
        "invalid-json-session",
        _raw(SESSION, b'{"dialogue": [,]}'),
        "error",
        "invalid-json",
        SESSION,
        "line 1, column 15",
        "invalid JSON",
    ),
    Case(
        "invalid-json-questions",
        _raw(QUESTIONS, b'{"questions": [\n  {"question": }\n]}'),
        "error",
        "invalid-json",
        QUESTIONS,
        "line 2, column 16",
        "invalid JSON",
    ),
    Case("zero-byte-json", _raw(SESSION, b""), "error", "invalid-json", SESSION, None, "file is empty"),
    Case(
        "non-utf8-bytes",
        _raw(SESSION, '{"dialogue": [], "session_title": "Café"}'.encode("latin-1")),
        "error",
        "not-utf8",
        SESSION,
        None,
        "not valid UTF-8",
    ),
    Case("nesting-too-deep", _deep_json, "error", "invalid-json", SESSION, None, "nesting too deep"),
    # ----- wrong types and missing fields in session.json ----------------------------------------
    Case("session-is-a-list", _raw(SESSION, b"[1, 2]"), "error", "invalid-field", SESSION, None, "dictionary"),
    Case(
        "dialogue-not-a-list",
        _edit(SESSION, _set("dialogue", "hello")),
        "error",
        "invalid-field",
        SESSION,
        "dialogue",
        "list",
    ),
    Case(
        "missing-dialogue", _edit(SESSION, _del("dialogue")), "error", "invalid-field", SESSION, "dialogue", "required"
    ),
    Case(
        "turn-missing-role",
        _edit(SESSION, lambda d: d["dialogue"][0].pop("role")),
        "error",
        "invalid-field",
        SESSION,
        "dialogue[0].role",
        "required",
    ),
    Case(
        "role-is-number",
        _edit(SESSION, _turn(2, role=7)),
        "error",
        "invalid-field",
        SESSION,
        "dialogue[2].role",
        "string",
    ),
    Case(
        "text-is-number",
        _edit(SESSION, _content(0, text=3.5)),
        "error",
        "invalid-field",
        SESSION,
        "dialogue[0].content.text",
        "string",
    ),
    Case(
        "turn-missing-content",
        _edit(SESSION, lambda d: d["dialogue"][3].pop("content")),
        "error",
        "invalid-field",
        SESSION,
        "dialogue[3].content",
        "required",
    ),
    Case(
        "date-is-number",
        _edit(SESSION, _set("timeline_date", 20240101)),
        "error",
        "invalid-field",
        SESSION,
        "timeline_date",
        "string",
    ),
    # ----- wrong types and missing fields in questions.json --------------------------------------
    Case(
        "questions-key-missing",
        _edit(QUESTIONS, _del("questions")),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions",
        "required",
    ),
    Case(
        "questions-not-a-list",
        _edit(QUESTIONS, _set("questions", {"a": 1})),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions",
        "list",
    ),
    Case(
        "missing-gold",
        _edit(QUESTIONS, _q(1, _qdel("original_answer"))),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[1].original_answer",
        "required",
    ),
    Case(
        "question-text-number",
        _edit(QUESTIONS, _q(0, _qset("question.text", 12))),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[0].question.text",
        "string",
    ),
    Case(
        "missing-sub-type",
        _edit(QUESTIONS, _q(0, _qdel("question_type.sub_type"))),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[0].question_type.sub_type",
        "required",
    ),
    Case(
        "unknown-task-type",
        _edit(QUESTIONS, _q(1, _qset("question_type.sub_type", "Vibe Check"))),
        "error",
        "unknown-task-type",
        QUESTIONS,
        "questions[1].question_type.sub_type",
        "Vibe Check",
    ),
    Case(
        "unknown-main-type",
        _edit(QUESTIONS, _q(0, _qset("question_type.main_type", "Memory Dancing"))),
        "error",
        "unknown-main-category",
        QUESTIONS,
        "questions[0].question_type.main_type",
        "Memory Dancing",
    ),
    Case(
        "answer-session-number",
        _edit(QUESTIONS, _q(0, _qset("answer_session", 3))),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[0].answer_session",
        "",
    ),
    Case(
        "validated-is-string",
        _edit(QUESTIONS, _q(0, _qset("validated", "yes"))),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[0].validated",
        "boolean",
    ),
    Case(
        "question-is-a-string",
        _edit(QUESTIONS, lambda d: d["questions"].append("what?")),
        "error",
        "invalid-field",
        QUESTIONS,
        "questions[2]",
        "dictionary",
    ),
    # ----- unsafe or odd image names -------------------------------------------------------------
    Case(
        "image-dotdot",
        _edit(SESSION, _content(1, image="../../session2/image/1.png")),
        "error",
        "unsafe-image-path",
        SESSION,
        "dialogue[1].content.image",
        "'..'",
    ),
    Case(
        "image-absolute",
        _edit(SESSION, _content(1, image="/etc/passwd")),
        "error",
        "unsafe-image-path",
        SESSION,
        "dialogue[1].content.image",
        "absolute",
    ),
    Case(
        "image-windows-absolute",
        _edit(SESSION, _content(1, image="C:\\Windows\\win.ini")),
        "error",
        "unsafe-image-path",
        SESSION,
        "dialogue[1].content.image",
        "absolute",
    ),
    Case(
        "question-image-dotdot",
        _edit(S0Q, _q(1, _qset("question.image", "session1/../../../../etc/hosts"))),
        "error",
        "unsafe-image-path",
        S0Q,
        "questions[1].question.image",
        "'..'",
    ),
    Case(
        "image-symlink-outside",
        _symlink_outside,
        "error",
        "unsafe-image-path",
        SESSION,
        "dialogue[1].content.image",
        "outside the dataset root",
    ),
    Case(
        "image-subfolder",
        _edit(SESSION, _content(1, image="deep/er/1.png")),
        "error",
        "bad-image-name",
        SESSION,
        "dialogue[1].content.image",
        "deep/er/1.png",
    ),
    # ----- folder structure ----------------------------------------------------------------------
    Case(
        "duplicate-session-number",
        _copy_dir(S1, "dyadic/dialogue1/scenes/session01"),
        "error",
        "duplicate-session-number",
        "dyadic/dialogue1/scenes/session1",
        None,
        "session01",
    ),
    Case(
        "duplicate-dialogue-number",
        _copy_dir("dyadic/dialogue1", "dyadic/dialogue001"),
        "error",
        "duplicate-dialogue-number",
        "dyadic/dialogue1",
        None,
        "dialogue001",
    ),
    Case("no-scenes-folder", _no_scenes, "error", "missing-scenes", "dyadic/dialogue1", None, "scenes"),
    Case("only-session0", _only_session0, "error", "empty-dialogue", "dyadic/dialogue1", None, "no sessions"),
    # ----- warnings: the data is usable, the problem is reported -----------------------------------
    Case(
        "questions-without-session-file", _drop_session_json, "warning", "absent-session", S1, None, "no session.json"
    ),
    Case(
        "non-numeric-session-folder",
        _copy_dir(S1, "dyadic/dialogue1/scenes/session_extra"),
        "warning",
        "unexpected-session-folder",
        "dyadic/dialogue1/scenes/session_extra",
        None,
        "session<number>",
    ),
    Case(
        "session-file-not-folder",
        _session_file_not_folder,
        "warning",
        "unexpected-session-folder",
        "dyadic/dialogue1/scenes/session7",
        None,
        "a file where a session folder belongs",
    ),
    Case(
        "empty-dialogue-list",
        _edit(SESSION, _set("dialogue", [])),
        "warning",
        "empty-session",
        SESSION,
        "dialogue",
        "no turns",
    ),
    Case(
        "empty-turn-text",
        _edit(SESSION, _content(0, text="   ")),
        "warning",
        "empty-text",
        SESSION,
        "dialogue[0].content.text",
        "neither text nor image",
    ),
    Case(
        "huge-text",
        _edit(SESSION, _content(2, text="blah " * 10_000)),
        "warning",
        "huge-text",
        SESSION,
        "dialogue[2].content.text",
        "50000 characters",
    ),
    Case(
        "huge-question-text",
        _edit(QUESTIONS, _q(0, _qset("question.text", "why " * 6_000))),
        "warning",
        "huge-text",
        QUESTIONS,
        "questions[0].question.text",
        "question 0 text has 24000 characters",
    ),
    Case(
        "empty-question-text",
        _edit(QUESTIONS, _q(0, _qset("question.text", ""))),
        "warning",
        "empty-text",
        QUESTIONS,
        "questions[0].question.text",
        "empty text",
    ),
    Case(
        "missing-image",
        _missing_image,
        "warning",
        "missing-image",
        SESSION,
        "dialogue[1].content.image",
        "session1/1.png not found",
    ),
    Case("zero-byte-image", _zero_image, "warning", "empty-image", SESSION, "dialogue[1].content.image", "zero-byte"),
    Case(
        "corrupt-image",
        _corrupt_image,
        "warning",
        "corrupt-image",
        SESSION,
        "dialogue[1].content.image",
        "session1/1.png",
    ),
    Case(
        "bad-date",
        _edit(SESSION, _set("timeline_date", "spring 2024")),
        "warning",
        "bad-date",
        SESSION,
        "timeline_date",
        "'spring 2024' does not start with YYYY-MM-DD",
    ),
    Case(
        "impossible-date",
        _edit(SESSION, _set("timeline_date", "2024-02-30")),
        "warning",
        "bad-date",
        SESSION,
        "timeline_date",
        "'2024-02-30' is not a calendar date",
    ),
    Case(
        "unknown-difficulty",
        _edit(QUESTIONS, _q(0, _qset("difficulty", "brutal"))),
        "warning",
        "unknown-difficulty",
        QUESTIONS,
        "questions[0].difficulty",
        "brutal",
    ),
    Case(
        "surrogate-escape",
        _raw(
            SESSION,
            json.dumps(
                {
                    "timeline_date": "2024-01-01",
                    "dialogue": [{"role": "Ann", "content": {"text": "caf\udce9", "image": ""}}],
                },
                ensure_ascii=True,
            ).encode(),
        ),
        "warning",
        "invalid-unicode",
        SESSION,
        "dialogue[0].content.text",
        "U+FFFD",
    ),
    Case(
        "non-utf8-folder-name",
        _non_utf8_folder,
        "warning",
        "unexpected-session-folder",
        "dyadic/dialogue1/scenes/session\\xff1",
        None,
        "session<number>",
        dropped="dyadic/dialogue1/session1/",
    ),
    Case(
        "unknown-answer-session",
        _edit(QUESTIONS, _q(0, _qset("answer_session", ["session9"]))),
        "warning",
        "unknown-answer-session",
        QUESTIONS,
        "questions[0].answer_session",
        "session9",
    ),
]


def _broken(tmp_path: Path, case: Case) -> Synth:
    s = make_dataset(tmp_path / "data", dialogues=1, sessions=2, questions_per_session=2, multi_party=False)
    case.mutate(s)
    return s


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_names_file_and_field(tmp_path, case):
    s = _broken(tmp_path, case)
    res = cli("data", "validate", s.root, "--show", "100")
    assert "Traceback" not in res.output, res.output
    assert res.code == (1 if case.severity == "error" else 0), res.output
    assert case.file in res.output and case.code in res.output
    if case.field:
        assert f"[{case.field}]" in res.output, res.output

    as_json = cli("data", "validate", s.root, "--json")
    report = json.loads(as_json.output)
    hits = [
        i
        for i in report["issues"]
        if i["code"] == case.code
        and i["severity"] == case.severity
        and i["file"] == case.file
        and (case.field is None or i["field"] == case.field)
    ]
    assert hits, f"no {case.severity} {case.code} for {case.file} [{case.field}] in {report['issues']}"
    assert case.text in hits[0]["message"], hits[0]
    if case.severity == "warning":
        assert report["errors"] == 0, report["issues"]


ERRORS = [c for c in CASES if c.severity == "error"]
WARNINGS = [c for c in CASES if c.severity == "warning"]


@pytest.mark.parametrize("case", ERRORS, ids=[c.id for c in ERRORS])
def test_run_refuses_broken_dataset_with_a_named_error(tmp_path, case):
    s = _broken(tmp_path, case)
    res = cli(
        "run",
        "--data",
        s.root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--no-cache",
        "--out",
        tmp_path / "runs",
        "--quiet",
    )
    assert "Traceback" not in res.output, res.output
    assert res.code == 2, res.output
    assert "error" in res.output and case.file in res.output, res.output
    if case.field:
        assert f"[{case.field}]" in res.output, res.output


@pytest.fixture(scope="module")
def mock_server():
    with MockOpenAIServer() as srv:
        yield srv


@pytest.mark.parametrize("case", WARNINGS, ids=[c.id for c in WARNINGS])
def test_run_answers_every_question_despite_warnings(tmp_path, case, mock_server):
    from h2hmem.records import read_predictions

    s = _broken(tmp_path, case)
    res = cli(
        "run",
        "--data",
        s.root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        mock_server.base_url,
        "--no-cache",
        "--out",
        tmp_path / "runs",
        "--run-id",
        "w",
        "--quiet",
    )
    assert "Traceback" not in res.output, res.output
    assert res.code == 0, res.output
    preds = read_predictions(tmp_path / "runs" / "w")
    expected = [q for q in s.question_ids if not (case.dropped and q.startswith(case.dropped))]
    assert sorted(p.question_id for p in preds) == sorted(expected)
    assert not any(p.failed for p in preds), [p.error for p in preds if p.failed]


def test_missing_or_empty_root_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    for root, text in ((tmp_path / "nowhere", "does not exist"), (tmp_path / "empty", "no 'dyadic/'")):
        for args in (
            ("data", "validate", root),
            (
                "run",
                "--data",
                root,
                "--model",
                "openai:mock",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--out",
                tmp_path / "runs",
            ),
        ):
            res = cli(*args)
            assert res.code == 2 and text in res.output and "Traceback" not in res.output, res.output


def test_file_over_the_size_limit_is_an_error(tmp_path, monkeypatch):
    import h2hmem.data._files as files

    s = make_dataset(tmp_path / "data", dialogues=1, sessions=1, questions_per_session=1, multi_party=False)
    size = (s.root / SESSION).stat().st_size
    monkeypatch.setattr(files, "MAX_JSON_BYTES", size - 1)
    report = json.loads(cli("data", "validate", s.root, "--json").output)
    hits = [i for i in report["issues"] if i["code"] == "file-too-large" and i["file"] == SESSION]
    assert hits and f"{size} bytes" in hits[0]["message"]


@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.id in ("invalid-json-session", "non-utf8-bytes", "image-symlink-outside", "duplicate-session-number")
    ],
    ids=lambda c: c.id,
)
def test_installed_console_script_gives_the_same_errors(tmp_path, case):
    """The real child process, as users run it: exit codes and messages, no traceback."""
    s = _broken(tmp_path, case)
    res = cli_subprocess("data", "validate", s.root)
    assert res.code == 1 and case.file in res.output and case.code in res.output
    assert "Traceback" not in res.output
    res = cli_subprocess(
        "run",
        "--data",
        s.root,
        "--method",
        "full-text",
        "--model",
        "openai:mock",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--no-cache",
        "--out",
        tmp_path / "runs",
    )
    assert res.code == 2 and case.file in res.output and "Traceback" not in res.output, res.output
