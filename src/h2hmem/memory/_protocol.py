"""What a memory method gets and returns: :class:`MemoryContext` (from the runner) and :class:`Answer`.

The hooks themselves are declared by :class:`~._method.MemoryMethod`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..data import ImageRef
from ..llm import ChatModel, GenerationConfig
from ..presets import DEFAULT_PRESET, Preset
from ..records import Evidence as Evidence
from ._prompt import ANSWER_CONFIG
from ._view import QuestionImage


class Answer(BaseModel):
    """What ``answer`` returns: the text, the ranked evidence and the method's details. Token usage
    and cache hits are tallied by the runner from the calls the method made (not reported here)."""

    text: str
    evidence: list[Evidence] = []
    """Memory units in the order the method ranked them (for evidence recall@k)."""
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
    """``paper`` (send what the official script sends) or ``harmonized``: the preset the method's
    ``Options`` were filled from."""
    product_endpoint: Any = None
    """An OpenAI-compatible endpoint (:class:`h2hmem.memory.products.Endpoint`) that memory products
    call instead of the model gateway the adapter starts by default (tests point it at a mock
    server); None = start the gateway over ``build_chat``/``chat`` and the run's embedder."""
