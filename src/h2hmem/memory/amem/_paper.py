"""A-Mem's official answer request (preset ``paper``), written anew from ``baselines/A-MEM/A_MEM.py`` @ b6070899.

- query: the question text, plus ``\\nimage description: <caption>`` when the question image has one;
- context: ``[k] [Time:<timeline_date>_<turn>] [Session:<session>] <note content>`` lines;
- with a question image file: ``[system "You are a helpful AI assistant.", user [image, text]]``
  (the image before the text: the file's bytes, MIME type from the extension, ``"detail": "auto"``); without: ``[system "You are a helpful assistant.", user text]``;
  a text-only answer model gets the script's text prompt with the caption after the question (its
  fallback when the backend cannot take images);
- 2,000 new tokens (``llm_controller.py`` @ 47e20bba); the reply, when it is a JSON object with an
  ``answer`` field, is that field, else the stripped reply.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...llm import ContentPart, GenerationConfig, Message, TextPart
from .._paper import load_prompt, official_instruction
from .._paper_answer import question_caption as image_caption
from .._paper_answer import question_image_parts
from .._protocol import CaptionLookup
from .._view import QuestionView
from ._notes import Note, parse_json_object


def question_caption(question: QuestionView, captions: CaptionLookup) -> str | None:
    """The caption of the question's (first) image, or None."""
    return image_caption(question.images[0], captions) if question.images else None


def official_query(question: QuestionView, captions: CaptionLookup) -> str:
    caption = question_caption(question, captions)
    if not caption:
        return question.text
    template: str = load_prompt("amem")["query_with_caption"]
    return template.format(question=question.text, caption=caption)


def official_context(notes: Sequence[Note]) -> str:
    if not notes:
        empty: str = load_prompt("amem")["empty_context"]
        return empty
    lines = []
    for k, n in enumerate(notes, 1):
        line = f"[{k}] "
        if n.time:
            line += f"[Time:{n.time}] "
        if n.session:
            line += f"[Session:{n.session}] "
        lines.append(line + n.content)
    return "\n".join(lines)


def official_messages(
    question: QuestionView,
    notes: Sequence[Note],
    captions: CaptionLookup,
    *,
    attach_image: bool,
    sees_images: bool,
    image_encoding: str = "raw",
) -> tuple[list[Message], int]:
    """The official messages and the number of image parts in them (``image_encoding``: see
    :func:`._paper_answer.question_image_parts`; the script sent the file's bytes, ``raw``)."""
    data = load_prompt("amem")
    instruction, fmt = official_instruction(data, question.task_type)
    context = official_context(notes)
    images = question_image_parts(question.images, captions, encoding=image_encoding) if attach_image else []
    if images and sees_images:
        system = data["multimodal_system"].format(instruction=instruction, format_requirement=fmt)
        text = data["multimodal_prompt"].format(system_prompt=system, context=context, question=question.text)
        parts: list[ContentPart] = [*images, TextPart(text=text)]
        return [
            Message(role="system", content=data["multimodal_system_message"]),
            Message(role="user", content=parts),
        ], len(images)
    q_text = question.text
    caption = question_caption(question, captions) if images else None
    if caption:
        q_text = data["text_question_with_caption"].format(question=question.text, caption=caption)
    system = data["text_system"].format(instruction=instruction, format_requirement=fmt)
    text = data["text_prompt"].format(system_prompt=system, context=context, question=q_text)
    return [Message(role="system", content=data["text_system_message"]), Message(role="user", content=text)], 0


def read_reply(text: str) -> str:
    """``json.loads(reply)["answer"]`` when the reply is a JSON object (the whole reply when it has no
    ``answer``), else the stripped reply — as the script read it."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(parsed, dict):
        value = parsed.get("answer", text)
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.strip()


def _construction_config(schema: dict[str, Any]) -> GenerationConfig:
    gen = load_prompt("amem")["construction_generation"]
    return GenerationConfig(
        temperature=gen["temperature"],
        max_tokens=gen["max_tokens"],
        json_mode=True,
        json_schema=json.dumps(schema),  # the script's key order: a strict schema makes the model follow it
    )


OFFICIAL_FALLBACK: tuple[list[str], list[str], str] = (["对话"], ["对话"], "General")
"""``(keywords, tags, context)`` of the script's note after three unreadable replies (``analyze_content``)."""


def read_official_analysis(text: str) -> tuple[list[str], list[str], str] | None:
    """``(keywords, tags, context)`` as ``analyze_content`` reads a reply, or None when it is unreadable
    (no JSON object: the script asks again). A readable object may lack fields: keywords and tags
    default to ``[]``, the context to ``"General"``; values are coerced to text."""
    obj = parse_json_object(text)
    if obj is None:
        return None

    def words(value: Any) -> list[str]:
        items = value if isinstance(value, list) else [] if value is None else [value]
        return [str(v) for v in items]

    context = obj.get("context", "General")
    return (
        words(obj.get("keywords", [])),
        words(obj.get("tags", [])),
        context if isinstance(context, str) else str(context),
    )


def official_analysis(content: str) -> tuple[list[Message], GenerationConfig]:
    """The script's note-writer request (``LLMController.analyze_content``) for one note's content."""
    data = load_prompt("amem")
    return (
        [
            Message(role="system", content=data["construction_system_message"]),
            Message(role="user", content=data["analysis_prompt"].format(content=content)),
        ],
        _construction_config(data["analysis_schema"]),
    )


def official_evolution(note: Note, neighbours: Sequence[tuple[int, Note]]) -> tuple[list[Message], GenerationConfig]:
    """The script's evolution request: the new note and its neighbours listed by memory index (keywords and tags
    as Python lists, as the script formatted them)."""
    data = load_prompt("amem")
    listing = "".join(
        data["neighbour_line"].format(
            index=i,
            time=n.time,
            content=n.content,
            context=n.context,
            keywords=str(list(n.keywords)),
            tags=str(list(n.tags)),
        )
        for i, n in neighbours
    )
    prompt = data["evolution_prompt"].format(
        context=note.context,
        content=note.content,
        keywords=", ".join(note.keywords),
        nearest_neighbors_memories=listing,
        neighbor_number=len(neighbours),
    )
    return (
        [Message(role="system", content=data["construction_system_message"]), Message(role="user", content=prompt)],
        _construction_config(data["evolution_schema"]),
    )
