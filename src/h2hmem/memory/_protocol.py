"""The :class:`MemorySystem` protocol every baseline and plugin implements.

One instance per dialogue. The runner calls ``observe(session)`` for every session in time
order, then ``answer(question)`` (protocol ``full``), or interleaves them (protocol ``online``).
Methods never read files: everything they see comes through these calls and :class:`MemoryContext`.
``answer`` gets a :class:`~._view.QuestionView` (text, task type, images by content, an opaque key),
never the dataset's ``Question`` with its gold answer, gold sessions and home session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from ..data import ImageRef, Session
from ..llm import ChatModel, GenerationConfig, Usage
from ..presets import DEFAULT_PRESET, Preset
from ..records import Evidence as Evidence
from ._prompt import ANSWER_CONFIG
from ._view import QuestionImage, QuestionView


class Answer(BaseModel):
    """What ``answer`` returns."""

    text: str
    evidence: list[Evidence] = []
    """Memory units in the order the method ranked them (for evidence recall@k)."""
    usage: Usage = Usage()
    cached: bool = False
    """True when every model call behind this answer was a cache hit."""
    details: dict[str, Any] = {}
    """Method-specific facts worth keeping: context tokens, what was cut or dropped…"""


CaptionLookup = Callable[["ImageRef | QuestionImage"], "str | None"]
"""Caption of a memory image (:class:`ImageRef`) or of a question image (:class:`QuestionImage`,
found by its content hash), or None."""


def no_captions(image: ImageRef | QuestionImage) -> str | None:
    """The lookup of a context built without captions: only a question image's own caption."""
    return image.caption if isinstance(image, QuestionImage) else None


@dataclass
class MemoryContext:
    """What the runner gives a memory system when it builds one for a dialogue."""

    dialogue_id: str
    """``"dyadic/dialogue5"``."""
    chat: ChatModel
    """Model used to answer (and, unless ``build_chat`` is set, to build memory)."""
    captions: CaptionLookup = no_captions
    """Caption of an image, or None when there is none. The runner's lookup counts the images
    asked for without a caption (manifest ``images_without_caption``)."""
    state_dir: Path | None = None
    """Per-dialogue folder in the run directory for stores that must survive a restart."""
    embedder_factory: Callable[[], Any] | None = None
    """Builds the shared text :class:`~h2hmem.embed.Embedder` on first use."""
    build_chat: ChatModel | None = None
    """Separate model for memory construction (A-Mem's note writer); defaults to ``chat``."""
    answer_config: GenerationConfig = ANSWER_CONFIG
    """Generation settings of the answer call (published: temperature 0.1, 1,024 new tokens)."""
    preset: Preset = DEFAULT_PRESET
    """``paper`` (send what the official script sends) or ``harmonized``; a method resolves it into its
    named options (``describe()["options"]``), each overridable by a constructor parameter."""
    extras: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemorySystem(Protocol):
    """A memory for one dialogue.

    Example::

        class RecencyMemory:
            name = "recency"
            def __init__(self, ctx: MemoryContext, window: int = 50): ...
            async def observe(self, session: Session) -> None: ...
            async def answer(self, question: QuestionView) -> Answer: ...
    """

    name: ClassVar[str]

    async def observe(self, session: Session) -> None:
        """Take in one session (turns in order, with its date). Sessions arrive in time order."""
        ...

    async def answer(self, question: QuestionView) -> Answer:
        """Answer ``question`` from memory. Raise on failure: the runner records the error.

        ``question`` is a :class:`QuestionView`: ``text``, ``task_type``, ``images`` (by content),
        ``dialogue_id`` and an opaque ``key``; gold answer, gold sessions and home session are withheld."""
        ...


RETRIEVAL_HOOK = "retrieve_evidence"
"""Optional method of a :class:`MemorySystem`: ``async retrieve_evidence(question) -> list[Evidence]``
returns the memory units ``answer`` would use, in rank order, without calling the answer model
(``run --retrieval-only``). The built-in methods implement it with the same code ``answer`` uses."""
