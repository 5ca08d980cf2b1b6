"""Typed view of the H2HMem dataset: turns, sessions, dialogues, questions.

Layout and field meanings: ``docs/dataset-format.md``. Objects are immutable pydantic models, so
they serialise to plain JSON (``model_dump(mode="json")``) and cannot be changed by a method.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ._taxonomy import MainCategory, TaskType

Split = Literal["dyadic", "multi-party"]
SPLITS: tuple[Split, ...] = ("dyadic", "multi-party")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ImageRef(_Frozen):
    """One image, always qualified by the session whose ``image/`` folder holds it.

    File names repeat in every session (``1.png``), so ``(session, file)`` is the identity
    (docs/official-pitfalls.md #4).
    """

    session: str
    """Session folder name, e.g. ``"session3"``."""
    file: str
    """File name inside ``scenes/<session>/image/``, e.g. ``"1.png"``."""
    path: Path | None = None
    """Absolute path of the file when it exists on disk, else ``None``."""

    @property
    def exists(self) -> bool:
        return self.path is not None

    @property
    def key(self) -> str:
        """``"session3/1.png"``: a name unique within a dialogue."""
        return f"{self.session}/{self.file}"


class Turn(_Frozen):
    """One utterance, with an optional shared image."""

    index: int
    """Position in the session (0-based); turn order = list order in ``session.json``."""
    speaker: str
    """The ``role`` field, kept as given (names are not always consistent)."""
    text: str
    image: ImageRef | None = None

    @property
    def has_image(self) -> bool:
        return self.image is not None


class Session(_Frozen):
    """One dated session (``scenes/sessionK``). ``absent`` when ``session.json`` is missing."""

    name: str
    """Folder name, ``"sessionK"``."""
    number: int
    """K, used for ordering (``session10`` after ``session9``)."""
    label: str | None = None
    """``session_id`` from ``session.json`` (``"health_1"``, ``"S4-3"``)."""
    date: dt.date | None = None
    """Leading ``YYYY-MM-DD`` of ``timeline_date``; ``None`` when missing or unparseable."""
    raw_date: str | None = None
    """``timeline_date`` exactly as written ("2024-02-20 (正月十一)")."""
    title: str | None = None
    turns: tuple[Turn, ...] = ()
    absent: bool = False
    """True when the folder has no ``session.json`` (e.g. a partial download)."""

    @property
    def images(self) -> list[ImageRef]:
        return [t.image for t in self.turns if t.image is not None]


class Question(_Frozen):
    """One benchmark question with its gold answer and labels."""

    id: str
    """Stable id ``"{split}/dialogue{N}/session{K}/q{index}"`` (index = position in the file)."""
    split: Split
    dialogue: str
    """``"dialogueN"``."""
    session: str
    """Source session folder (``"session0"`` for the cross-session pool)."""
    index: int
    text: str
    images: tuple[ImageRef, ...] = ()
    """The question's own image(s) (``question.image``), resolved; usually zero or one."""
    gold: str
    """``original_answer``."""
    answer_sessions: tuple[str, ...] = ()
    """Evidence sessions as folder names (labels such as ``"S3-2"`` are mapped to folders)."""
    raw_answer_sessions: tuple[str, ...] = ()
    """``answer_session`` exactly as written."""
    task_type: TaskType
    main_category: MainCategory
    difficulty: str = "unknown"
    """``easy``/``medium``/``hard``, or ``unknown`` when the file has none."""
    validated: bool | None = None
    original_question_id: str | None = None

    @property
    def is_cross_session(self) -> bool:
        """True for questions of the ``session0`` pool."""
        return self.session == "session0"


class Dialogue(_Frozen):
    """All sessions (numeric order, session0 excluded) and questions of one dialogue."""

    split: Split
    name: str
    """``"dialogueN"``."""
    number: int
    sessions: tuple[Session, ...] = ()
    questions: tuple[Question, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.split}/{self.name}"

    def session(self, name: str) -> Session | None:
        """The session with folder name ``name``, or ``None``."""
        for s in self.sessions:
            if s.name == name:
                return s
        return None

    @property
    def present_sessions(self) -> list[Session]:
        return [s for s in self.sessions if not s.absent]


class Dataset(_Frozen):
    """Every dialogue loaded from one dataset root."""

    root: Path
    dialogues: tuple[Dialogue, ...] = ()

    def split(self, split: str) -> list[Dialogue]:
        """Dialogues of one split (``"dyadic"``/``"multi-party"``), or all for ``"all"``."""
        if split == "all":
            return list(self.dialogues)
        return [d for d in self.dialogues if d.split == split]

    @property
    def questions(self) -> list[Question]:
        return [q for d in self.dialogues for q in d.questions]
