"""Memory systems: the protocol, the registry, the shared answer prompt and the six baselines.

A method is a class built as ``cls(ctx: MemoryContext, **params)`` (one instance per dialogue),
with ``async observe(session)`` and ``async answer(question: QuestionView) -> Answer``; optional
``describe() -> dict`` tells the run manifest its parameters and how it handled images.
"""

from ._options import PresetOption, options_table, resolve_options
from ._paper import paper_prompt_hashes
from ._prompt import ANSWER_CONFIG, SYSTEM_PROMPT, build_answer_messages, prompt_hash, task_instruction
from ._protocol import Answer, CaptionLookup, Evidence, MemoryContext, MemorySystem
from ._registry import ENTRY_POINT_GROUP, UnknownMethodError, available_methods, check_params, resolve_method
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
    "CaptionLookup",
    "Evidence",
    "MemoryContext",
    "MemorySystem",
    "UnknownMethodError",
    "available_methods",
    "check_params",
    "build_answer_messages",
    "image_label",
    "image_part",
    "image_text",
    "PresetOption",
    "options_table",
    "paper_prompt_hashes",
    "prompt_hash",
    "resolve_options",
    "render_turn",
    "resolve_method",
    "session_header",
    "task_instruction",
]
