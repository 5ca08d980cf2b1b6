"""Facts the runner records about a method itself, the same way for every method.

- :class:`CountedCaptions` wraps the caption lookup a method gets: it counts each distinct image
  asked for and those without a caption (manifest ``images_without_caption``), whatever the method
  does with the answer, and finds a question image's caption by its content hash;
- :func:`resolved_arguments`: the constructor arguments a method was built with, defaults filled in;
- :func:`summed_stats`: the numeric ``describe()["stats"]`` of every dialogue's memory, added up
  (A-Mem's ``analysis_failures`` = its fallback notes, all dialogues).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..data import ImageRef, Question
from ..memory import QuestionImage, QuestionView, check_fields, question_view


class CountedCaptions:
    """The caption lookup of one dialogue as a method sees it (``MemoryContext.captions``).

    Accepts an :class:`ImageRef` (memory images) or a :class:`QuestionImage` (by content hash:
    the image it was made from). ``asked`` / ``missing`` hold the ``"session/file"`` keys of the
    distinct images looked up, and of those that had no caption.
    """

    def __init__(self, lookup: Callable[[ImageRef], str | None]):
        self._lookup = lookup
        self._by_hash: dict[str, ImageRef] = {}
        self.asked: set[str] = set()
        self.missing: set[str] = set()

    def __call__(self, image: ImageRef | QuestionImage) -> str | None:
        if isinstance(image, QuestionImage):
            ref = self._by_hash.get(image.sha256 or "")
            if ref is None:
                return image.caption
            image = ref
        caption = self._lookup(image)
        self.asked.add(image.key)
        if not caption:
            self.missing.add(image.key)
        return caption

    def view(self, q: Question, image_dir: Path, fields: tuple[str, ...] = ()) -> QuestionView:
        """The :class:`QuestionView` of ``q`` with a fresh opaque key; its images' captions are looked
        up (and counted) here, and remembered by content hash for later lookups."""
        view = question_view(q, self, image_dir=image_dir, fields=fields)
        for ref, img in zip(q.images, view.images):
            if img.sha256 is not None:
                self._by_hash[img.sha256] = ref
        return view


def resolved_arguments(cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every constructor parameter of ``cls`` (``ctx`` excluded) with the value it gets: the given
    one, else its default; values that are not JSON are shown by ``repr``.

    Example: ``NaiveRAGMemory`` with ``{"top_k": 8}`` → ``{"top_k": 8, "min_similarity": 0.1}``.
    """
    out: dict[str, Any] = {}
    try:
        sig = inspect.signature(cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError):
        return dict(params)
    for name, p in sig.parameters.items():
        if name in ("self", "ctx") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name in params:
            out[name] = params[name]
        elif p.default is not p.empty:
            out[name] = p.default
    out.update({k: v for k, v in params.items() if k not in out})  # a **kwargs constructor
    return {k: _jsonable(v) for k, v in out.items()}


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def question_fields(cls: type) -> tuple[str, ...]:
    """The extra question facts a method declares in ``question_fields`` (usually none).

    Raises:
        ValueError: a name that is not grantable (:data:`h2hmem.memory._view.GRANTABLE`).
    """
    fields = tuple(getattr(cls, "question_fields", ()) or ())
    check_fields(fields, f"{cls.__name__}.question_fields")
    return fields


def summed_stats(by_dialogue: Mapping[str, Mapping[str, Any]]) -> dict[str, int | float]:
    """Sum over dialogues of the numeric entries of each memory's ``describe()["stats"]`` (bools excluded).

    Example: ``{"d1": {"analysis_failures": 2}, "d2": {"analysis_failures": 1, "ok": True}}`` →
    ``{"analysis_failures": 3}``.
    """
    out: dict[str, int | float] = {}
    for stats in by_dialogue.values():
        for k, v in (stats or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out
