"""Facts the runner records about a method itself, the same way for every method.

- :class:`CountedCaptions` wraps the caption lookup a method gets: it counts each distinct image
  asked for and those without a caption (manifest ``images_without_caption``), whatever the method
  does with the answer, and finds a question image's caption by its content hash;
- :func:`run_components`: the run's components (method with its resolved options, models) as specs;
- :func:`run_environment`: the software the run ran on, a plugin method's distribution included;
- :func:`summed_stats`: the numeric ``describe()["stats"]`` of every dialogue's memory, added up
  (A-Mem's ``analysis_failures`` = its fallback notes, all dialogues).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..data import ImageRef, Question
from ..memory import MemoryMethod, MethodOptions, QuestionImage, QuestionView, question_view
from ..records import CaptionUse, ComponentSpec, Environment, capture_environment, component_spec, distribution_of
from ._config import RunConfig


class CountedCaptions:
    """The caption lookup of one dialogue as a method sees it (``MemoryContext.captions``).

    Accepts an :class:`ImageRef` (memory images) or a :class:`QuestionImage` (by content hash:
    the image it was made from). ``asked`` / ``missing`` hold the ``"session/file"`` keys of the
    distinct images looked up, and of those that had no caption; ``used`` the caption each of the
    others was given (:class:`~h2hmem.records.CaptionUse`: its source and text hash — manifest
    ``captions_by_dialogue``). The source is the lookup's ``record(ref).source`` when it has one
    (:class:`~h2hmem.caption.DialogueCaptions`), else ``"unknown"``.
    """

    def __init__(self, lookup: Callable[[ImageRef], str | None]):
        self._lookup = lookup
        self._record = getattr(lookup, "record", None)
        self._by_hash: dict[str, ImageRef] = {}
        self.asked: set[str] = set()
        self.missing: set[str] = set()
        self.used: dict[str, CaptionUse] = {}

    def __call__(self, image: ImageRef | QuestionImage) -> str | None:
        if isinstance(image, QuestionImage):
            ref = self._by_hash.get(image.sha256 or "")
            if ref is None:
                return image.caption
            image = ref
        caption = self._lookup(image)
        key = image.key
        if key not in self.asked:
            self.asked.add(key)
            if not caption:
                self.missing.add(key)
            else:
                rec = self._record(image) if self._record is not None else None
                source = getattr(rec, "source", None) or "unknown"
                digest = hashlib.sha256(caption.encode("utf-8", "surrogatepass")).hexdigest()[:16]
                self.used[key] = CaptionUse(source=source, sha256=digest)
        return caption

    def view(self, q: Question, image_dir: Path, fields: tuple[str, ...] = ()) -> QuestionView:
        """The :class:`QuestionView` of ``q`` with a fresh opaque key; its images' captions are looked
        up (and counted) here, and remembered by content hash for later lookups."""
        view = question_view(q, self, image_dir=image_dir, fields=fields)
        for ref, img in zip(q.images, view.images):
            if img.sha256 is not None:
                self._by_hash[img.sha256] = ref
        return view


def run_components(
    config: RunConfig, method_cls: type[MemoryMethod[Any]], options: MethodOptions, chat: Any, builder: Any
) -> dict[str, ComponentSpec]:
    """The run's components, each once: the memory method (its class, distribution and resolved
    options, the preset excluded: it is ``config.preset``), the answer model, the build model (when
    the method has its own) and the embedder (by the specs the loaded models give themselves)."""
    values = options.values()
    values.pop("preset", None)
    out = {"memory": component_spec("memory", config.method, method_cls, values)}
    out["answer_model"] = component_spec("answer_model", str(getattr(chat, "spec", config.models.model)))
    if builder is not None:
        out["build_model"] = component_spec("build_model", str(getattr(builder, "spec", config.models.build_model)))
    out["embedder"] = component_spec("embedder", config.models.embedder)
    return out


def run_environment(method_cls: type) -> Environment:
    """:func:`~h2hmem.records.capture_environment` plus the distribution of a plugin method and the
    third-party distributions the method runs on (:meth:`~h2hmem.memory.MemoryMethod.third_party`:
    a memory product's package)."""
    dist, _ = distribution_of(method_cls.__module__)
    extra = (dist,) if dist and dist != "h2hmem" else ()
    third = getattr(method_cls, "third_party", None)
    extra += tuple(d for d in (third() if third is not None else ()) if d not in extra)
    return capture_environment(extra_distributions=extra)


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
