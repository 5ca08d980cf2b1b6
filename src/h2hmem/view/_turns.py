"""The dataset behind a run, for showing evidence as the actual turns (speaker, date, text, image).

Loaded on first use from the run manifest's ``data_root`` (or the viewer's ``--data``), once per
root, leniently (``strict=False``: a run on a partial copy still shows what exists).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data import Dataset, ImageRef, Question, Session, load_dataset
from ..memory import Evidence


@dataclass
class TurnView:
    session: str
    index: int
    speaker: str
    date: str
    text: str
    image: ImageRef | None
    gold: bool
    """The turn lies in one of the question's gold sessions (``answer_session``)."""
    score: float | None = None


@dataclass
class EvidenceView:
    """One evidence unit: a turn, or a whole session (``turns`` = its turns)."""

    session: str
    date: str
    gold: bool
    rank: int
    score: float | None
    turn: TurnView | None = None
    turns: list[TurnView] = field(default_factory=list)
    missing: bool = False
    """The unit names a session or turn the dataset does not have."""


def _date(s: Session) -> str:
    return s.date.isoformat() if s.date else (s.raw_date or "date unknown")


class DatasetLookup:
    """Sessions, questions and image files of one dataset root (``None``: no dataset)."""

    def __init__(self, root: Path | None):
        self.root = Path(root) if root else None
        self._ds: Dataset | None = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str, str], Session] = {}
        self._questions: dict[str, Question] = {}
        self._images: dict[tuple[str, str, str, str], Path] = {}

    @property
    def error(self) -> str | None:
        """Why the dataset could not be loaded (shown on the page), or None."""
        self._load()
        return self._error

    def _load(self) -> None:
        with self._lock:
            if self._ds is not None or self._error is not None:
                return
            if self.root is None or not self.root.is_dir():
                self._error = (
                    f"dataset folder {self.root} not found (start the viewer with --data ROOT)"
                    if self.root
                    else "the run does not name its dataset (start the viewer with --data ROOT)"
                )
                return
            try:
                self._ds = load_dataset(self.root, strict=False)
            except Exception as e:  # a broken dataset must not break the pages that do not need it
                self._error = f"cannot load the dataset at {self.root}: {e}"
                return
            for d in self._ds.dialogues:
                for s in d.sessions:
                    self._sessions[(d.split, d.name, s.name)] = s
                    for ref in s.images:
                        if ref.path is not None:
                            self._images[(d.split, d.name, ref.session, ref.file)] = ref.path
                for q in d.questions:
                    self._questions[q.id] = q
                    for ref in q.images:
                        if ref.path is not None:
                            self._images[(d.split, d.name, ref.session, ref.file)] = ref.path

    def session(self, split: str, dialogue: str, name: str) -> Session | None:
        self._load()
        return self._sessions.get((split, dialogue, name))

    def question(self, question_id: str) -> Question | None:
        self._load()
        return self._questions.get(question_id)

    def image_path(self, split: str, dialogue: str, session: str, file: str) -> Path | None:
        """The file of an image of the dataset, or None: only dataset images are ever served."""
        self._load()
        return self._images.get((split, dialogue, session, file))

    def evidence(self, split: str, dialogue: str, evidence: list[Evidence], gold: list[str]) -> list[EvidenceView]:
        """The evidence units of an answer as turns, in rank order, gold-session units marked."""
        gold_set = set(gold)
        out: list[EvidenceView] = []
        for rank, e in enumerate(evidence, 1):
            s = self.session(split, dialogue, e.session)
            if s is None:
                out.append(
                    EvidenceView(
                        session=e.session, date="", gold=e.session in gold_set, rank=rank, score=e.score, missing=True
                    )
                )
                continue
            view = EvidenceView(session=s.name, date=_date(s), gold=s.name in gold_set, rank=rank, score=e.score)
            if e.turn is None:
                view.turns = [self._turn(s, t.index, view.gold) for t in s.turns]
            elif 0 <= e.turn < len(s.turns):
                view.turn = self._turn(s, e.turn, view.gold, e.score)
            else:
                view.missing = True
            out.append(view)
        return out

    @staticmethod
    def _turn(s: Session, index: int, gold: bool, score: float | None = None) -> TurnView:
        t = s.turns[index]
        return TurnView(
            session=s.name,
            index=index,
            speaker=t.speaker,
            date=_date(s),
            text=t.text,
            image=t.image,
            gold=gold,
            score=score,
        )


class Lookups:
    """One :class:`DatasetLookup` per dataset root, shared by the runs that use it."""

    def __init__(self, override: Path | None = None):
        self.override = override
        self._by_root: dict[Any, DatasetLookup] = {}

    def for_root(self, root: Path | None) -> DatasetLookup:
        root = self.override or root
        key = str(Path(root).resolve()) if root else None
        if key not in self._by_root:
            self._by_root[key] = DatasetLookup(Path(key) if key else None)
        return self._by_root[key]
