"""The shared answer prompt (all six methods), with the per-task instruction.

Source: docs/baselines.md "Shared answer step", restated in our own words. The per-task
instruction is chosen from the canonical :class:`TaskType` — the official code looked it up under
inconsistent keys, so many questions never got it (docs/official-pitfalls.md #8).
"""

from __future__ import annotations

import hashlib

from .. import defaults
from ..data import Question, TaskType
from ..llm import ContentPart, GenerationConfig, ImagePart, Message, TextPart
from ._view import QuestionView

SYSTEM_PROMPT = (
    "You are being tested on your memory of conversations you observed between other people. "
    "Answer the question using only the memory shown to you. Reply with the answer alone, with no "
    "reasoning or explanation, in English, in at most 100 words."
)

TASK_INSTRUCTIONS: dict[TaskType, str] = {
    TaskType.CD: 'Reply with exactly one word: "Yes" or "No".',
    TaskType.AR: 'If the memory contains the answer, give it; if it does not, reply exactly "Not mentioned."',
}
DEFAULT_INSTRUCTION = "Give a clear and precise answer."

ANSWER_CONFIG = GenerationConfig(temperature=defaults.ANSWER_TEMPERATURE, max_tokens=defaults.ANSWER_MAX_TOKENS)
"""Answer generation settings of the paper: temperature 0.1, at most 1,024 new tokens."""


def task_instruction(task: TaskType) -> str:
    """The per-task instruction: CD → Yes/No; AR → "Not mentioned." when absent; others → precise answer."""
    return TASK_INSTRUCTIONS.get(task, DEFAULT_INSTRUCTION)


def build_answer_messages(
    question: Question | QuestionView,
    memory: str | list[ContentPart],
    question_images: list[ImagePart] | None = None,
    *,
    memory_intro: str = "Memory:",
) -> list[Message]:
    """Messages for one answer call.

    Args:
        question: the question (its text and task type are used; never its gold answer).
        memory: the memory context as text, or as interleaved text and image parts (native methods).
        question_images: the question's own image(s); placed first, before the memory (Full (MM) rule).
        memory_intro: heading line before the memory.

    Returns:
        ``[system, user]`` messages; the user content is a string when there are no image parts.
    """
    parts: list[ContentPart] = []
    if question_images:
        parts.append(TextPart(text="Image attached to the question:"))
        parts.extend(question_images)
    parts.append(TextPart(text=memory_intro))
    if isinstance(memory, str):
        parts.append(TextPart(text=memory if memory.strip() else "(empty)"))
    else:
        parts.extend(memory)
    parts.append(TextPart(text=f"Question: {question.text.strip()}\n{task_instruction(question.task_type)}\nAnswer:"))
    if all(isinstance(p, TextPart) for p in parts):
        content: str | list[ContentPart] = "\n".join(p.text for p in parts)  # type: ignore[union-attr]
    else:
        content = _merge_text(parts)
    return [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=content)]


def _merge_text(parts: list[ContentPart]) -> list[ContentPart]:
    out: list[ContentPart] = []
    for p in parts:
        if isinstance(p, TextPart) and out and isinstance(out[-1], TextPart):
            out[-1] = TextPart(text=out[-1].text + "\n" + p.text)
        else:
            out.append(p)
    return out


def prompt_hash() -> str:
    """SHA-256 (first 16 hex) of the system prompt and instructions: proves two runs used the same prompt."""
    blob = "\x1e".join(
        [SYSTEM_PROMPT, DEFAULT_INSTRUCTION, *(f"{k.abbr}={v}" for k, v in sorted(TASK_INSTRUCTIONS.items()))]
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
