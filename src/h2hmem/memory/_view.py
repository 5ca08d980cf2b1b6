"""What a memory method is told about a question: a :class:`QuestionView`, never the dataset record.

The dataset's :class:`~h2hmem.data.Question` carries the gold answer, the gold sessions and the
question's home session (``question.session`` and the id ``…/session3/q2``). In H2HMem the gold
session is the home session for 98% of the questions, so any of these locates the answer. The
question's image leaks it too when it is named ``session12/1.png``: a retrieval query carrying
that name matches the very turn that shared the file. So a method gets a view built for it:

- ``text``, ``task_type`` (and ``main_category``, derived from it): the official prompts choose
  their instructions by type;
- ``images``: :class:`QuestionImage` objects, by content only: the bytes (``read_bytes()``, or
  ``path``, a copy named by its SHA-256), the caption, the content hash — never the dataset file
  name or its session (matching a question image to a memory image *by content* is legitimate
  cross-modal retrieval; matching by name is not);
- ``dialogue_id`` (``"dyadic/dialogue5"``, as ``MemoryContext.dialogue_id``) and ``key``, an
  opaque token by which the runner joins the answer back to the question.

Reading any other field raises an :class:`AttributeError` that says why methods do not get it.
A method whose published protocol needs one more fact declares it in ``question_fields`` (see
``docs/protocol.md``); the runner then passes exactly that and records it in the manifest.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._atomic import mkstemp_shared
from ..data import ImageRef, MainCategory, Question, TaskType

_LEAKS = "it locates the answer (the gold session is the question's own session for 98% of the questions)"
WITHHELD: dict[str, str] = {
    "gold": "the gold answer is what the answer is scored against",
    "answer_sessions": "the gold (evidence) sessions are what evidence recall is scored against",
    "raw_answer_sessions": "the gold (evidence) sessions are what evidence recall is scored against",
    "session": f"the question's home session is withheld: {_LEAKS}",
    "is_cross_session": f"whether the question belongs to the session0 pool tells its home session: {_LEAKS}",
    "id": "the question id names the home session ('…/session3/q2'); the runner joins answers by `key`",
    "index": "the position in the session's question file is part of the question id",
    "original_question_id": "the dataset's own question id can name the session",
    "difficulty": "the difficulty is a label of the gold data",
    "validated": "the validation flag is a label of the gold data",
}
"""Question fields a method never gets, each with the reason shown in the AttributeError."""

GRANTABLE: dict[str, Callable[[Question], Any]] = {
    "home_session": lambda q: q.session,
}
"""Facts a method may ask for in ``question_fields`` when its published protocol used them
(documented per method in ``docs/protocol.md``); ``home_session`` = the question's session folder."""

_IMAGE_WITHHELD = {
    "session": "a question image comes by content only: its session would name the question's home session",
    "file": "a question image comes by content only: its dataset file name matches the memory turn that shared it",
    "key": "a question image comes by content only: use `sha256` (its 'session/file' key names the session)",
}


@dataclass(frozen=True)
class QuestionImage:
    """One image of the question, by content.

    ``path`` is a copy of the image named by its SHA-256 (under the run directory), so models and
    encoders can read it; ``None`` when the dataset file is missing (then ``sha256`` is ``None`` too).
    """

    sha256: str | None
    """SHA-256 (hex) of the image bytes, or None when the file is missing."""
    path: Path | None = None
    caption: str | None = None
    """The image's caption, or None when it has none (also returned by ``ctx.captions(image)``)."""

    @property
    def exists(self) -> bool:
        return self.path is not None

    def read_bytes(self) -> bytes:
        """The image file's bytes. Raises FileNotFoundError when the dataset file was missing."""
        if self.path is None:
            raise FileNotFoundError("the question's image file is missing from the dataset")
        return self.path.read_bytes()

    def __getattr__(self, name: str) -> Any:
        if name in _IMAGE_WITHHELD:
            raise AttributeError(f"QuestionImage.{name}: methods do not get it: {_IMAGE_WITHHELD[name]}")
        raise AttributeError(
            f"QuestionImage has no attribute {name!r} (it has sha256, path, caption, exists, read_bytes())"
        )


@dataclass(frozen=True)
class QuestionView:
    """The question as a memory method sees it (frozen; see the module docstring)."""

    key: str
    """Opaque token of this question within the run (random; joins the answer back)."""
    text: str
    task_type: TaskType
    images: tuple[QuestionImage, ...] = ()
    dialogue_id: str = ""
    """``"dyadic/dialogue5"``: the dialogue whose memory is asked."""
    granted: tuple[tuple[str, Any], ...] = field(default=(), repr=False)
    """Extra facts granted to this method through ``question_fields``, as ``(name, value)`` pairs
    (usually none); read them as attributes (``question.home_session``)."""

    @property
    def main_category(self) -> MainCategory:
        """Memory Recall / Reasoning / Application, derived from ``task_type``."""
        return self.task_type.main_category

    def __getattr__(self, name: str) -> Any:
        granted = dict(self.__dict__.get("granted") or ())
        if name in granted:
            return granted[name]
        if name in WITHHELD:
            raise AttributeError(
                f"QuestionView.{name}: memory methods do not get this field: {WITHHELD[name]}. "
                "A method whose published protocol needs a fact declares it in question_fields "
                "(docs/custom-memory.md)"
            )
        if name in GRANTABLE:
            raise AttributeError(
                f"QuestionView.{name}: not granted to this method; declare "
                f"question_fields = ({name!r},) on the class if its published protocol used it"
            )
        raise AttributeError(
            f"QuestionView has no attribute {name!r}; a method gets key, text, task_type, "
            "main_category, images and dialogue_id"
        )


def check_fields(fields: tuple[str, ...], owner: str) -> None:
    """Raise ValueError naming ``owner`` when ``fields`` holds a name that is not in :data:`GRANTABLE`."""
    unknown = [f for f in fields if f not in GRANTABLE]
    if unknown:
        raise ValueError(f"{owner} names {unknown}: not grantable (grantable: {', '.join(GRANTABLE)})")


def new_key() -> str:
    """A fresh opaque question key (96 random bits, URL-safe)."""
    return secrets.token_urlsafe(12)


def default_image_dir() -> Path:
    """Folder for content-named copies of question images outside a run (tests, notebooks)."""
    return Path(tempfile.gettempdir()) / "h2hmem-question-images"


def content_copy(path: Path, image_dir: Path) -> tuple[str, Path]:
    """``(sha256, copy)``: the file copied once to ``image_dir/<sha256>`` (no extension: the dataset's
    name would otherwise show through). Written to a temporary name first, then renamed."""
    from ..llm import file_sha256

    sha = file_sha256(path)
    target = image_dir / sha
    if not target.is_file():
        image_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = mkstemp_shared(image_dir, ".copy-")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return sha, target


def question_image(ref: ImageRef, captions: Callable[[Any], str | None] | None, image_dir: Path) -> QuestionImage:
    """The content-only form of a question's :class:`ImageRef` (caption looked up through ``captions``)."""
    caption = captions(ref) if captions is not None else None
    if ref.path is None:
        return QuestionImage(sha256=None, path=None, caption=caption)
    sha, copy = content_copy(ref.path, image_dir)
    return QuestionImage(sha256=sha, path=copy, caption=caption)


def question_view(
    question: Question,
    captions: Callable[[Any], str | None] | None = None,
    *,
    image_dir: Path | None = None,
    dialogue_id: str | None = None,
    key: str | None = None,
    fields: tuple[str, ...] = (),
) -> QuestionView:
    """Build the :class:`QuestionView` of ``question`` (what the runner passes to ``answer``).

    Args:
        question: the dataset record.
        captions: caption lookup for its images (``MemoryContext.captions``), or None.
        image_dir: where content-named copies of its images go (default: a temporary folder).
        dialogue_id: default ``"{split}/{dialogue}"``.
        key: the opaque key (default: a fresh random one).
        fields: extra facts granted (names of :data:`GRANTABLE`).

    Raises:
        ValueError: a name in ``fields`` that is not grantable.
    """
    check_fields(fields, "question_fields")
    folder = image_dir if image_dir is not None else default_image_dir()
    images = tuple(question_image(ref, captions, folder) for ref in question.images)
    granted = tuple((f, GRANTABLE[f](question)) for f in fields)
    return QuestionView(
        key=key or new_key(),
        text=question.text,
        task_type=question.task_type,
        images=images,
        dialogue_id=dialogue_id or f"{question.split}/{question.dialogue}",
        granted=granted,
    )
