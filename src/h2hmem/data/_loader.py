"""Load an H2HMem dataset folder into :class:`Dataset`, collecting every problem as an :class:`Issue`.

Rules (``docs/dataset-format.md``):
- sessions sort numerically (``session10`` after ``session9``);
- ``session0`` has no ``session.json``: it is the pool of cross-session questions;
- a missing ``session.json`` elsewhere makes the session *absent* (a warning, not fatal);
- a missing image is a warning; invalid JSON or an unknown task type is an error naming the file
  (and line / question index).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import stat
import time
from collections import defaultdict
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from . import _load_cache
from ._files import field_errors, read_json, rel
from ._issues import DatasetError, IssueLog
from ._raw import RawQuestion, RawQuestionsFile, RawSession
from ._schema import SPLITS, Dataset, Dialogue, ImageRef, Question, Session, Split, Turn
from ._taxonomy import TaskType, UnknownLabelError, parse_difficulty, parse_main_category

_M = TypeVar("_M", bound=BaseModel)
_DIALOGUE_DIR = re.compile(r"^dialogue(\d+)$")
_SESSION_DIR = re.compile(r"^session(\d+)$")
_DATE = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})")
_QUALIFIED_IMAGE = re.compile(r"^(session\d+)/([^/\\]+)$")
_SESSION_LABEL = re.compile(r"^S(\d+)-(\d+)$")
_REAL_PATHS: ContextVar[dict[Path, Path] | None] = ContextVar("h2hmem_dataset_real_paths", default=None)
MAX_TEXT_CHARS = 20_000
"""Texts longer than this are reported (a warning): genuine turns are at most a few hundred words."""


def find_root(root: str | Path) -> Path:
    """The folder holding ``dyadic/`` and/or ``multi-party/``: ``root`` itself or ``root/dataset``.

    Raises:
        FileNotFoundError: neither holds a split folder.
    """
    root = Path(root)
    for cand in (root, root / "dataset"):
        if any((cand / s).is_dir() for s in SPLITS):
            return cand
    if not root.exists():
        raise FileNotFoundError(f"dataset root {root} does not exist")
    raise FileNotFoundError(f"{root}: no 'dyadic/' or 'multi-party/' folder (nor under {root / 'dataset'})")


def load_dataset(
    root: str | Path, split: str = "all", *, strict: bool = True, log: IssueLog | None = None, cache: bool = True
) -> Dataset:
    """Read every dialogue of ``split`` (``"dyadic"``, ``"multi-party"`` or ``"all"``) under ``root``.

    Args:
        root: dataset root (or its parent holding ``dataset/``).
        split: which split(s) to load.
        strict: raise :class:`DatasetError` when any error was found (after reading everything,
            so the message lists all of them). With ``strict=False`` the bad files/questions are
            skipped and the errors stay in ``log``.
        log: where issues are collected (a new one when omitted).
        cache: reuse the parsed dataset of an earlier load when no file under ``root`` changed
            since (``h2hmem.data._load_cache``: keyed by every file's name, size and modification
            time and by this reader's code; only error-free, settled datasets are stored; the
            warnings of that load are added to ``log`` again). ``H2HMEM_DATASET_CACHE=0`` turns it
            off everywhere.

    Raises:
        FileNotFoundError: no split folder under ``root``.
        DatasetError: ``strict`` and at least one error.
        ValueError: unknown ``split``.
    """
    if split not in (*SPLITS, "all"):
        raise ValueError(f"unknown split {split!r}; expected dyadic, multi-party or all")
    base = find_root(root)
    log = log if log is not None else IssueLog()
    started = time.time()  # the clock file modification times are measured by
    before = _fingerprint(base, split) if cache and _load_cache.enabled() else None
    if before is not None:
        hit = _load_cache.lookup(before)
        if hit is not None:
            ds, warnings = hit
            log.issues.extend(warnings)
            return ds
    first = len(log.issues)
    dialogues: list[Dialogue] = []
    with _memoised_real_paths():
        for sp in SPLITS:
            if split not in ("all", sp):
                continue
            sdir = base / sp
            if not sdir.is_dir():
                if split == sp:
                    log.error("missing-split", sp, f"split folder {sp}/ not found under {base}")
                continue
            for number, ddir in _numbered_dirs(sdir, _DIALOGUE_DIR, base, log, "dialogue")[0]:
                d = _load_dialogue(base, sp, ddir, number, log)
                if d is not None:
                    dialogues.append(d)
    if strict and log.errors:
        raise DatasetError(log.errors)
    ds = Dataset(root=base.resolve(), dialogues=tuple(dialogues))
    found = log.issues[first:]
    if before is not None and not any(i.severity == "error" for i in found):
        _load_cache.store(before, started, base, split, ds, found)
    return ds


def _fingerprint(base: Path, split: str) -> _load_cache.Fingerprint | None:
    try:
        return _load_cache.fingerprint(base, split)
    except OSError:  # a folder that cannot be listed: the reader reports it, without the cache
        return None


@contextlib.contextmanager
def _memoised_real_paths() -> Iterator[None]:
    """While active (one :func:`load_dataset` call), :func:`_real` remembers each folder's real path."""
    token = _REAL_PATHS.set({})
    try:
        yield
    finally:
        _REAL_PATHS.reset(token)


def _real(path: Path) -> Path:
    """``path.resolve()`` (the real path, links followed). Inside one :func:`load_dataset` call a
    path that is not itself a link is its parent's real path plus its name, and each folder's real
    path is worked out once: the loader checks thousands of files of the same few folders (an image
    link leading outside the root is an error), and ``resolve()`` reads every component each time."""
    memo = _REAL_PATHS.get()
    if memo is None:
        return path.resolve()
    hit = memo.get(path)
    if hit is None:
        parent = path.parent
        if parent == path or path.name in ("", ".", "..") or os.path.islink(path):
            hit = path.resolve()
        else:
            hit = _real(parent) / path.name
        memo[path] = hit
    return hit


def _numbered_dirs(
    parent: Path, pattern: re.Pattern[str], root: Path, log: IssueLog, kind: str
) -> tuple[list[tuple[int, Path]], bool]:
    """The ``<kind><number>`` folders of ``parent`` by number, and whether any was refused as
    ambiguous (two names for one number, or a link to a sibling folder: errors naming both).

    A folder that is a symlink leading outside the dataset root is an error and skipped (as an
    image link is); a link to a sibling (``session30 → session3``) would add its questions twice.
    """
    found: dict[int, Path] = {}
    real_of: dict[Path, Path] = {}
    ambiguous = False
    real_root = _real(root)
    for child in sorted(parent.iterdir()):
        if not child.is_dir():
            if pattern.match(child.name):  # `session2` as a file: the session would vanish without a word
                log.warning(
                    f"unexpected-{kind}-folder", rel(child, root), f"a file where a {kind} folder belongs; ignored"
                )
            continue
        m = pattern.match(child.name)
        if not m:
            log.warning(f"unexpected-{kind}-folder", rel(child, root), f"folder name is not '{kind}<number>'; ignored")
            continue
        real = _real(child)
        if not _inside(real, real_root):
            log.error(
                f"unsafe-{kind}-folder", rel(child, root), f"folder is a link to {real}, outside the dataset root"
            )
            continue
        if real in real_of:
            log.error(
                f"duplicate-{kind}-folder",
                rel(child, root),
                f"folder is a link to {real_of[real].name} (the same {kind} twice); remove the link",
            )
            ambiguous = True
            continue
        real_of[real] = child
        n = int(m.group(1))
        if n in found:
            log.error(
                f"duplicate-{kind}-number",
                rel(child, root),
                f"ambiguous {kind} index: {child.name} and {found[n].name} are both {kind} {n}; rename or remove one",
            )
            ambiguous = True
            continue
        found[n] = child
    return sorted(found.items()), ambiguous


def _load_dialogue(root: Path, split: Split, ddir: Path, number: int, log: IssueLog) -> Dialogue | None:
    scenes = ddir / "scenes"
    if not scenes.is_dir():
        log.error("missing-scenes", rel(ddir, root), "no scenes/ folder")
        return None
    sessions: list[Session] = []
    question_files: list[tuple[str, Path]] = []
    numbered, ambiguous = _numbered_dirs(scenes, _SESSION_DIR, root, log, "session")
    if ambiguous:  # its questions cannot be told apart or would count twice: the error says why
        return None
    for k, sdir in numbered:
        qf = sdir / "questions.json"
        if _regular_file(qf, root, log):
            question_files.append((sdir.name, qf))
        if k == 0:
            continue
        sessions.append(_load_session(root, sdir, k, log))
        if not _exists(qf):
            log.warning("missing-questions", rel(sdir, root), "no questions.json")
    if not sessions:
        log.error("empty-dialogue", rel(ddir, root), "dialogue has no sessions")
    _check_dates(root, ddir, sessions, log)
    _check_speakers(root, ddir, sessions, log)
    by_label: dict[str, str] = {}
    for s in sessions:
        if s.label and s.label in by_label:
            log.warning(
                "duplicate-session-id",
                rel(scenes / s.name / "session.json", root),
                f"session_id {s.label!r} is also that of {by_label[s.label]}; answer sessions naming it "
                f"resolve to {by_label[s.label]}",
                field="session_id",
            )
        elif s.label:
            by_label[s.label] = s.name
    names = {s.name: s for s in sessions}
    questions: list[Question] = []
    for sname, qf in question_files:
        questions.extend(_load_questions(root, split, ddir.name, scenes, sname, qf, names, by_label, log))
    return Dialogue(split=split, name=ddir.name, number=number, sessions=tuple(sessions), questions=tuple(questions))


def _exists(path: Path) -> bool:
    """Whether anything is at ``path`` (a dangling symlink counts: it is reported, not taken as absent)."""
    return path.exists() or path.is_symlink()


def _regular_file(path: Path, root: Path, log: IssueLog) -> bool:
    """Whether ``path`` is a regular file inside the dataset root. Anything else that is there (a
    FIFO, a device such as ``/dev/zero``, a folder, a dangling link, a link leading outside the
    root) is an error naming it; it is never opened, so a FIFO cannot block the loader. Absent:
    False without an issue."""
    if not _exists(path):
        return False
    name = rel(path, root)
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        log.error("not-a-file", name, f"cannot be read: {type(e).__name__}: {e} (a dangling or looping link?)")
        return False
    if not _inside(real, _real(root)):
        log.error("unsafe-path", name, f"is a link to {real}, outside the dataset root")
        return False
    if not real.is_file():
        kind = (
            "a FIFO"
            if real.is_fifo()
            else "a device"
            if real.is_char_device() or real.is_block_device()
            else ("a folder" if real.is_dir() else "not a regular file")
        )
        log.error("not-a-file", name, f"is {kind}, not a regular JSON file")
        return False
    return True


def _validated(model: type[_M], data: object, fname: str, log: IssueLog, prefix: str = "") -> _M | None:
    """``model.model_validate(data)``, or None after logging one error per invalid field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        for path, msg in field_errors(prefix, e.errors()):
            log.error("invalid-field", fname, msg, field=path)
        return None


def parse_date(raw: str | None) -> dt.date | None:
    """Leading ``YYYY-MM-DD`` of a ``timeline_date`` ("2025-01-01 上午" → 2025-01-01), else None."""
    if not raw:
        return None
    m = _DATE.match(raw)
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _load_session(root: Path, sdir: Path, k: int, log: IssueLog) -> Session:
    sf = sdir / "session.json"
    name = sdir.name
    if not _exists(sf):
        log.warning("absent-session", rel(sdir, root), "no session.json: session is absent (its turns are unknown)")
        return Session(name=name, number=k, absent=True)
    if not _regular_file(sf, root, log):
        return Session(name=name, number=k, absent=True)
    data = read_json(sf, root, log)
    if data is None:
        return Session(name=name, number=k, absent=True)
    fname = rel(sf, root)
    raw = _validated(RawSession, data, fname, log)
    if raw is None:
        return Session(name=name, number=k, absent=True)
    date = parse_date(raw.timeline_date)
    if raw.timeline_date is None:
        log.warning("missing-date", fname, "no timeline_date", field="timeline_date")
    elif date is None:
        why = "is not a calendar date" if _DATE.match(raw.timeline_date) else "does not start with YYYY-MM-DD"
        log.warning("bad-date", fname, f"timeline_date {raw.timeline_date!r} {why}", field="timeline_date")
    elif (m := _DATE.match(raw.timeline_date)) is not None and raw.timeline_date != m.group(0):  # m: date parsed
        log.warning(
            "odd-date",
            fname,
            f"timeline_date {raw.timeline_date!r} has extra text; using {date}",
            field="timeline_date",
        )
    turns: list[Turn] = []
    if not raw.dialogue:
        log.warning("empty-session", fname, "session has no turns", field="dialogue")
    for i, t in enumerate(raw.dialogue):
        field = f"dialogue[{i}]"
        image = None
        if t.content.image:
            image = resolve_image(root, sdir.parent, name, t.content.image, log, fname, f"{field}.content.image")
        if not t.content.text.strip() and image is None:
            log.warning("empty-text", fname, "turn has neither text nor image", field=f"{field}.content.text")
        if len(t.content.text) > MAX_TEXT_CHARS:
            log.warning("huge-text", fname, f"text has {len(t.content.text)} characters", field=f"{field}.content.text")
        if not t.role.strip():
            log.warning("empty-speaker", fname, "turn has an empty role", field=f"{field}.role")
        turns.append(Turn(index=i, speaker=t.role, text=t.content.text, image=image))
    label = None if raw.session_id is None else str(raw.session_id)
    return Session(
        name=name,
        number=k,
        label=label,
        date=date,
        raw_date=raw.timeline_date,
        title=raw.session_title,
        turns=tuple(turns),
    )


def image_field(question_session: str, keys: list[str] | tuple[str, ...]) -> str:
    """``question_image`` as the dataset writes it, from ``"sessionK/<file>"`` image keys (the inverse
    of :func:`resolve_image` for a question's field; used by the leaderboard and the official exports).

    Questions of a normal session name their own session's image by its bare file name;
    ``session0`` questions (the cross-session pool) keep ``"sessionK/<file>"``. Several images are
    joined with ``","`` (the loader splits on commas). No image → ``""``.

    >>> image_field("session3", ["session3/2.png"]), image_field("session0", ["session3/2.png"])
    ('2.png', 'session3/2.png')
    """
    out = []
    for key in keys:
        session, _, file = key.partition("/")
        out.append(file if file and session == question_session and question_session != "session0" else key)
    return ",".join(out)


def resolve_image(
    root: Path, scenes: Path, own_session: str, value: str, log: IssueLog, file: str, field: str
) -> ImageRef | None:
    """Resolve one image name in any of its forms to an :class:`ImageRef`.

    Forms: a bare file name (``"1.png"``: an image of ``own_session``) or ``"sessionK/<file>"``
    (used by ``session0`` questions to name another session's image). Names that are absolute,
    contain ``..`` or lead outside the dataset root through a symlink are errors (returns None).
    A file that does not exist, is empty or is not an image Pillow can open (header check) is a
    warning; the returned reference then has ``path=None``.
    """
    value = value.strip()
    if not value:
        return None
    if value.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", value) or re.match(r"^[A-Za-z]:", value):
        log.error("unsafe-image-path", file, f"image name {value!r} is absolute or contains '..'", field=field)
        return None
    m = _QUALIFIED_IMAGE.match(value)
    if m:
        session, fname = m.group(1), m.group(2)
    elif "/" in value or "\\" in value:
        log.error(
            "bad-image-name", file, f"image name {value!r} is neither '<file>' nor 'sessionK/<file>'", field=field
        )
        return None
    else:
        session, fname = own_session, value
    path = scenes / session / "image" / fname
    try:
        st = os.lstat(path)
        link = stat.S_ISLNK(st.st_mode)
        if link:
            st = os.stat(path)  # links followed, as is_file() does
    except (OSError, ValueError):
        st = None
    if st is None or not stat.S_ISREG(st.st_mode):
        log.warning("missing-image", file, f"image {session}/{fname} not found", field=field)
        return ImageRef(session=session, file=fname)
    # a file that is not a link is its folder's real path plus its name (one lstat, no realpath)
    real = path.resolve() if link else _real(path.parent) / fname
    if not _inside(real, _real(root)):
        log.error(
            "unsafe-image-path",
            file,
            f"image {session}/{fname} is a link to {real}, outside the dataset root",
            field=field,
        )
        return ImageRef(session=session, file=fname)
    if st.st_size == 0:
        log.warning("empty-image", file, f"image {session}/{fname} is a zero-byte file", field=field)
        return ImageRef(session=session, file=fname)
    problem = _unreadable_image(real)
    if problem:
        log.warning("corrupt-image", file, f"image {session}/{fname} is not a readable image ({problem})", field=field)
        return ImageRef(session=session, file=fname)
    return ImageRef(session=session, file=fname, path=real)


_FORMAT_OF_SUFFIX = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".gif": "GIF", ".webp": "WEBP", ".bmp": "BMP"}
"""Pillow's format for the usual image suffixes: tried first, so Pillow does not probe every plugin."""


def _unreadable_image(path: Path) -> str | None:
    """Why ``path`` is not an image Pillow can open (its header only: cheap), or None. The format
    its suffix names is tried first; a file whose suffix lies (a PNG named ``.jpg``) is then opened
    with every format Pillow knows, as a plain ``Image.open`` would."""
    from PIL import Image

    expected = _FORMAT_OF_SUFFIX.get(path.suffix.lower())
    if expected is not None:
        try:
            with Image.open(path, formats=[expected]) as im:
                im.size  # noqa: B018 - the header was parsed
            return None
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError):
            pass
    try:
        with Image.open(path) as im:
            im.size  # noqa: B018 - the header was parsed
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _inside(real: Path, real_root: Path) -> bool:
    """``real.is_relative_to(real_root)`` for two real (resolved, absolute) paths, without building
    a relative path (``is_relative_to`` raises and catches an exception for every path outside)."""
    inner, outer = os.path.normcase(real), os.path.normcase(real_root)
    return inner == outer or inner.startswith(outer if outer.endswith(os.sep) else outer + os.sep)


def _load_questions(
    root: Path,
    split: Split,
    dialogue: str,
    scenes: Path,
    sname: str,
    qf: Path,
    sessions: dict[str, Session],
    by_label: dict[str, str],
    log: IssueLog,
) -> list[Question]:
    data = read_json(qf, root, log)
    if data is None:
        return []
    fname = rel(qf, root)
    raw_file = _validated(RawQuestionsFile, data, fname, log)
    if raw_file is None:
        return []
    out: list[Question] = []
    for idx, item in enumerate(raw_file.questions):
        field = f"questions[{idx}]"
        rq = _validated(RawQuestion, item, fname, log, field)
        if rq is None:
            continue
        try:
            task = TaskType.parse(rq.question_type.sub_type)
        except UnknownLabelError as e:
            log.error("unknown-task-type", fname, f"question {idx}: {e}", field=f"{field}.question_type.sub_type")
            continue
        if rq.question_type.main_type is not None:
            try:
                main = parse_main_category(rq.question_type.main_type)
                if main != task.main_category:
                    log.warning(
                        "category-mismatch",
                        fname,
                        f"main_type {rq.question_type.main_type!r} disagrees with sub-type {task.value} "
                        f"({task.main_category.value}); using the sub-type's",
                        field=f"{field}.question_type.main_type",
                    )
            except UnknownLabelError as e:
                log.error(
                    "unknown-main-category", fname, f"question {idx}: {e}", field=f"{field}.question_type.main_type"
                )
                continue
        try:
            difficulty = parse_difficulty(rq.difficulty)
        except UnknownLabelError as e:
            log.warning(
                "unknown-difficulty", fname, f"question {idx}: {e}; counted as unknown", field=f"{field}.difficulty"
            )
            difficulty = "unknown"
        if not rq.question.text.strip():
            log.warning("empty-text", fname, f"question {idx} has empty text", field=f"{field}.question.text")
        elif len(rq.question.text) > MAX_TEXT_CHARS:
            log.warning(
                "huge-text",
                fname,
                f"question {idx} text has {len(rq.question.text)} characters",
                field=f"{field}.question.text",
            )
        if not rq.original_answer.strip():
            log.warning(
                "empty-gold", fname, f"question {idx} has an empty original_answer", field=f"{field}.original_answer"
            )
        if rq.validated is False:
            log.warning(
                "unvalidated-question",
                fname,
                f"question {idx} is marked validated: false (kept)",
                field=f"{field}.validated",
            )
        images = _question_images(root, scenes, sname, rq.question.image, log, fname, f"{field}.question.image")
        raw_sessions = (rq.answer_session,) if isinstance(rq.answer_session, str) else tuple(rq.answer_session)
        resolved = _answer_sessions(raw_sessions, sessions, by_label, log, fname, f"{field}.answer_session")
        out.append(
            Question(
                id=f"{split}/{dialogue}/{sname}/q{idx}",
                split=split,
                dialogue=dialogue,
                session=sname,
                index=idx,
                text=rq.question.text,
                images=tuple(images),
                gold=rq.original_answer,
                answer_sessions=tuple(resolved),
                raw_answer_sessions=raw_sessions,
                task_type=task,
                main_category=task.main_category,
                difficulty=difficulty,
                validated=rq.validated,
                original_question_id=rq.original_question_id,
            )
        )
    return out


def _question_images(
    root: Path, scenes: Path, sname: str, value: str | list[str] | None, log: IssueLog, file: str, field: str
) -> list[ImageRef]:
    if not value:
        return []
    parts = value if isinstance(value, list) else value.split(",")
    refs = []
    for p in parts:
        ref = resolve_image(root, scenes, sname, p, log, file, field)
        if ref is not None:
            refs.append(ref)
    return refs


def _answer_sessions(
    raw: tuple[str, ...], sessions: dict[str, Session], by_label: dict[str, str], log: IssueLog, file: str, field: str
) -> list[str]:
    """Map ``answer_session`` entries to session folder names; ``session0`` names no evidence."""
    out: list[str] = []
    for label in raw:
        label = label.strip()
        if label == "session0" or not label:
            continue
        name = label if _SESSION_DIR.match(label) else by_label.get(label)
        if name is None and (m := _SESSION_LABEL.match(label)):
            name = f"session{int(m.group(2))}"
        if name is None or name not in sessions:
            log.warning(
                "unknown-answer-session",
                file,
                f"answer_session {label!r} names no session of this dialogue",
                field=field,
            )
            continue
        if sessions[name].absent:
            log.warning(
                "absent-answer-session", file, f"answer_session {label!r} is absent (no session.json)", field=field
            )
        if name not in out:
            out.append(name)
    return out


def _check_dates(root: Path, ddir: Path, sessions: list[Session], log: IssueLog) -> None:
    prev: Session | None = None
    for s in sessions:
        if s.date is None:
            continue
        if prev is not None and prev.date is not None and s.date < prev.date:
            log.warning("date-order", rel(ddir, root), f"{s.name} ({s.date}) is dated before {prev.name} ({prev.date})")
        prev = s


def _speaker_key(name: str) -> str:
    name = re.sub(r"^[A-Z]_", "", name.strip())
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _check_speakers(root: Path, ddir: Path, sessions: list[Session], log: IssueLog) -> None:
    variants: dict[str, set[str]] = defaultdict(set)
    for s in sessions:
        for t in s.turns:
            variants[_speaker_key(t.speaker)].add(t.speaker)
    for names in variants.values():
        if len(names) > 1:
            log.warning(
                "speaker-variants", rel(ddir, root), f"speaker names that look like one person: {sorted(names)}"
            )
