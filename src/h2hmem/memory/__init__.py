"""Memory systems: the method base, the registry, the shared answer prompt and the baselines.

A method subclasses :class:`MemoryMethod` (one instance per dialogue, built as ``cls(ctx, options)``)
with ``async observe(session)`` and ``async answer(question: QuestionView) -> Answer``; it declares
its options as a :class:`MethodOptions` model (``Options``), filled from the run's preset and
validated from ``--param``; optional hooks: ``retrieve_evidence`` (``--retrieval-only``),
``describe()`` (facts and stats for the manifest), ``question_fields``, ``aclose()``.
"""

from ._method import MemoryMethod
from ._options import (
    AttachQuestionImage,
    DateFormat,
    MethodOptions,
    MethodOptionsError,
    TopK,
    TopP,
    method_options,
    preset_option,
)
from ._paper import paper_prompt_hashes
from ._prompt import ANSWER_CONFIG, SYSTEM_PROMPT, build_answer_messages, prompt_hash, task_instruction
from ._protocol import Answer, CaptionLookup, Evidence, MemoryContext
from ._registry import ENTRY_POINT_GROUP, UnknownMethodError, available_methods, resolve_method
from ._render import QUESTION_IMAGE_LABEL, image_label, image_part, image_text, render_turn, session_header
from ._view import GRANTABLE, WITHHELD, QuestionImage, QuestionView, check_fields, question_view

__all__ = [
    "ANSWER_CONFIG",
    "ENTRY_POINT_GROUP",
    "GRANTABLE",
    "QUESTION_IMAGE_LABEL",
    "QuestionImage",
    "QuestionView",
    "SYSTEM_PROMPT",
    "WITHHELD",
    "check_fields",
    "question_view",
    "Answer",
    "AttachQuestionImage",
    "CaptionLookup",
    "DateFormat",
    "Evidence",
    "MemoryContext",
    "MemoryMethod",
    "MethodOptions",
    "MethodOptionsError",
    "TopK",
    "TopP",
    "UnknownMethodError",
    "available_methods",
    "build_answer_messages",
    "image_label",
    "image_part",
    "image_text",
    "method_options",
    "paper_prompt_hashes",
    "preset_option",
    "prompt_hash",
    "render_turn",
    "resolve_method",
    "session_header",
    "task_instruction",
]
