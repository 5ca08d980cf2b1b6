"""The answer request of the official scripts (preset ``paper``): one user message, image after the text.

The official Full (Text) and Naive RAG scripts (``_call_vlm_api``) send ``[{"role": "user",
"content": [{"type": "text", "text": prompt}, {"type": "image_url", …}]}]`` when the question has
an image file, else the prompt as a plain string. Only the question's first image is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..data import ImageRef
from ..llm import ContentPart, ImagePart, Message, TextPart
from ._paper import load_prompt, official_instruction
from ._protocol import CaptionLookup
from ._render import QUESTION_IMAGE_LABEL
from ._view import QuestionImage, QuestionView

QUESTION_IMAGE_NAME = QUESTION_IMAGE_LABEL
"""What a text-only model is told the substituted image is (never its file name or session)."""


def question_caption(image: ImageRef | QuestionImage, captions: CaptionLookup | None) -> str | None:
    """A question image's caption: the one its :class:`~h2hmem.memory.QuestionImage` was built with, else the
    caption lookup's (a dataset :class:`~h2hmem.data.ImageRef`, in tests)."""
    if isinstance(image, QuestionImage):
        return image.caption
    return captions(image) if captions else None


def question_image_parts(
    images: Sequence[ImageRef | QuestionImage], captions: CaptionLookup | None, *, encoding: str = "jpeg1024"
) -> list[ImagePart]:
    """The question's first image that exists on disk as an :class:`ImagePart` (none when no file exists).

    The part is named :data:`QUESTION_IMAGE_NAME`, so a text-only backend substitutes
    ``[Image the question's image: <caption>]`` without revealing where the image came from.
    ``encoding``: ``jpeg1024`` (re-encoded JPEG, long side ≤ 1,024 px, no ``detail``) or ``raw``
    (the file's bytes, MIME type from its extension, ``"detail": "auto"``: A-Mem's official part).
    """
    for ref in images:
        if ref.path is not None:
            part = ImagePart(name=QUESTION_IMAGE_NAME, path=ref.path, caption=question_caption(ref, captions))
            if encoding == "raw":
                part = part.model_copy(update={"encoding": "raw", "detail": "auto"})
            return [part]
    return []


def official_prompt(
    name: str,
    question: QuestionView,
    context: str,
    *,
    truncated: bool = False,
    original_tokens: int = 0,
    truncated_tokens: int = 0,
) -> str:
    """The official prompt text of ``prompts/paper/<name>.json`` for ``question`` and ``context``.

    ``full_text``: the template with ``context_section`` and the truncation note (empty when not
    truncated); ``naive_rag``: the template with the retrieved context.
    """
    data = load_prompt(name)
    instruction, format_requirement = official_instruction(data, question.task_type)
    fields = {"instruction": instruction, "question": question.text, "format_requirement": format_requirement}
    if "context_heading" in data:
        note = data["truncation_note"].format(original_tokens=original_tokens, truncated_tokens=truncated_tokens)
        fields.update(context_section=data["context_heading"] + context, context_note=note if truncated else "")
    else:
        fields["context"] = context
    template: str = data["template"]
    return template.format(**fields)


def official_messages(
    name: str, question: QuestionView, context: str, images: Sequence[ImagePart], **note: int | bool
) -> list[Message]:
    """``[user]`` with the official prompt, then the image part(s) when there are any."""
    prompt = official_prompt(name, question, context, **note)  # type: ignore[arg-type]
    if not images:
        return [Message(role="user", content=prompt)]
    parts: list[ContentPart] = [TextPart(text=prompt), *images]
    return [Message(role="user", content=parts)]
