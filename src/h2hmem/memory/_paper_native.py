"""Answer requests of the official native scripts (preset ``paper``): Full (MM), MuRAG, NGM.

Written anew from the behaviour of ``baselines/FullMM/FullMM.py`` @ b6070899,
``baselines/MuRAG/MuRAG.py`` and ``baselines/NGM/NGM.py`` @ 919db825 (prompt texts in
``prompts/paper/{full_mm,murag,ngm}.json``). Each builds one user message whose content is always
a list of parts (also without an image, as the scripts sent it): the prompt text first, then the
image parts — Full (MM): question image(s), then dialogue images; MuRAG and NGM: memory images,
then the question image. Never reproduced: the extra JSON fields the scripts put on image
parts (``session_id``, ``file_name``, markers naming the question id — not part of the chat API),
dropping a ``session0`` question's image (MuRAG's retrieval query lost it, NGM lost it from query and
request: both compared a full path with "session0") and
Full (MM)'s unordered choice of dialogue images (here: dialogue order, earliest first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..data import ImageRef, Session, Turn
from ..llm import ContentPart, ImagePart, Message, TextPart
from ._paper import load_prompt, official_instruction
from ._paper_answer import question_image_parts
from ._paper_render import DateFormat, head_truncate, session_date
from ._protocol import CaptionLookup
from ._render import image_part
from ._view import QuestionView

MAX_CONTEXT_TOKENS = 4096
"""The scripts' ``--max_context_tokens`` (their evaluate.sh: 4,096)."""


def _message(prompt: str, images: Sequence[ImagePart]) -> list[Message]:
    """One user message whose content is a list of parts, the prompt text first: the scripts always
    sent a list (``[{"type": "text", …}, *images]``), also without an image."""
    parts: list[ContentPart] = [TextPart(text=prompt), *images]
    return [Message(role="user", content=parts, as_parts=True)]


def _turn_text(session: Session, turn: Turn, date_format: DateFormat) -> str:
    return f"{session_date(session, date_format)}:{turn.text}"


# ----- Full (MM) ---------------------------------------------------------------------------------


def full_mm_context(sessions: Sequence[Session], date_format: DateFormat = "raw") -> str:
    """``[Session s Turn i role]: [Image: file] date:text`` lines for every turn, in order (1-based ``i``)."""
    lines = []
    for s in sessions:
        for t in s.turns:
            head = f"[Session {s.name} Turn {t.index + 1} {t.speaker}]: "
            image = f"[Image: {t.image.file}] " if t.image is not None else ""
            lines.append(head + image + _turn_text(s, t, date_format))
    return "\n".join(lines)


def full_mm_request(
    sessions: Sequence[Session],
    question: QuestionView,
    captions: CaptionLookup,
    *,
    max_context_tokens: int,
    max_images: int,
    date_format: DateFormat = "raw",
) -> tuple[list[Message], dict[str, Any]]:
    """The official Full (MM) request and its facts (``context_tokens``, ``truncated``, images attached).

    Images: the question's images that exist, then each distinct dialogue image (dialogue order)
    up to ``max_images`` in all, those whose file exists.
    """
    data = load_prompt("full_mm")
    context = full_mm_context(sessions, date_format)
    context, original, kept = head_truncate(context, max_context_tokens)
    truncated = kept < original
    if truncated:
        context += data["truncation_note"]
    q_images = [p for ref in question.images for p in question_image_parts([ref], captions)]
    slots = max_images - len(q_images)
    seen: OrderedDict[tuple[str, str], ImageRef] = OrderedDict()
    for s in sessions:
        for t in s.turns:
            if t.image is not None:
                seen.setdefault((t.image.file, t.image.session), t.image)
    memory_refs = list(seen.values())[: max(0, slots)]
    memory_images = [image_part(ref, captions) for ref in memory_refs if ref.path is not None]
    instruction, fmt = official_instruction(data, question.task_type)
    prompt = data["template"].format(
        instruction=instruction,
        context=context,
        question=question.text,
        image_note=data["image_note"] if q_images else "",
        format_requirement=fmt,
    )
    shown = [s.name for s in sessions if s.turns and f"[Session {s.name} Turn 1 " in context]
    details = {
        "context_tokens": kept,
        "original_context_tokens": original,
        "truncated": truncated,
        "images_attached": len(q_images) + len(memory_images),
        "question_images_attached": len(q_images),
        "sessions_shown": shown,
    }
    return _message(prompt, [*q_images, *memory_images]), details


# ----- MuRAG -------------------------------------------------------------------------------------


def murag_unit_text(session: Session, turn: Turn, date_format: DateFormat = "raw") -> str:
    """What MuRAG embeds for a turn (with its image): ``[role] date:text``."""
    return f"[{turn.speaker}] {_turn_text(session, turn, date_format)}"


def murag_request(
    hits: Sequence[tuple[Session, Turn]],
    question: QuestionView,
    captions: CaptionLookup,
    *,
    max_context_tokens: int,
    max_images: int,
    date_format: DateFormat = "raw",
) -> tuple[list[Message], dict[str, Any]]:
    """The official MuRAG request for retrieved turns (rank order) and its facts.

    Context: ``[Memory k] Session s Turn i - role: [Image: file] date:text`` lines cut to
    ``max_context_tokens``; images: the retrieved turns' images (rank order) up to ``max_images``
    minus the question's, then the question image; the prompt is cut to ``max_context_tokens`` too.
    """
    data = load_prompt("murag")
    lines = []
    for k, (s, t) in enumerate(hits, 1):
        image = f"[Image: {t.image.file}] " if t.image is not None else ""
        lines.append(
            f"[Memory{k}] Session {s.name} Turn {t.index + 1} - {t.speaker}: {image}{_turn_text(s, t, date_format)}"
        )
    context = head_truncate("\n".join(lines), max_context_tokens)[0] if lines else data["empty_context"]
    q_images = question_image_parts(question.images, captions)
    memory_refs = [t.image for _, t in hits if t.image is not None and t.image.path is not None]
    keep = 0 if len(question.images) >= max_images else min(len(memory_refs), max_images - len(question.images))
    memory_images = [image_part(ref, captions) for ref in memory_refs[:keep]]
    q_images = q_images[:max_images]
    section = ""
    if memory_images or q_images:
        rows = [data["image_section_heading"]]
        if memory_images:
            rows.append(data["image_section_memory"].format(n=len(memory_images)))
        if q_images:
            rows.append(data["image_section_question"].format(n=len(q_images)))
        rows.append(data["image_section_tail"])
        section = "\n".join(rows)
    instruction, fmt = official_instruction(data, question.task_type)
    prompt = data["template"].format(
        instruction=instruction,
        context=context,
        image_section=section,
        question=question.text,
        image_note=data["image_note"] if q_images else "",
        format_requirement=fmt,
    )
    prompt, original, kept = head_truncate(prompt, max_context_tokens)
    details = {
        "prompt_tokens_cl100k": kept,
        "truncated": kept < original,
        "images_attached": len(memory_images) + len(q_images),
        "question_images_attached": len(q_images),
    }
    return _message(prompt, [*memory_images, *q_images]), details


# ----- NGM ---------------------------------------------------------------------------------------


def ngm_node_text(session: Session, turn: Turn, date_format: DateFormat = "raw") -> str:
    """What NGM embeds for a turn (with its image): ``date:text`` (no speaker)."""
    return _turn_text(session, turn, date_format)


def ngm_request(
    hits: Sequence[tuple[Session, Turn]],
    question: QuestionView,
    captions: CaptionLookup,
    *,
    date_format: DateFormat = "raw",
) -> tuple[list[Message], dict[str, Any]]:
    """The official NGM request for recalled turns (score order) and its facts.

    Context grouped by session (sessions in order of their best-ranked turn, turns by index):
    ``  Turn i - role: date:text`` (0-based ``i``), an image turn followed by the script's
    ``[Sent image: ('<file>',)]`` (it stored the name as a one-element tuple). Images: the recalled
    turns' images (score order), then the question image; no cap, no truncation (as the script).
    """
    data = load_prompt("ngm")
    if hits:
        lines = [data["context_heading"], data["context_count"].format(n=len(hits))]
        groups: OrderedDict[str, list[tuple[Session, Turn]]] = OrderedDict()
        for s, t in hits:
            groups.setdefault(s.name, []).append((s, t))
        for name, items in groups.items():
            lines.append(f"\n[Session {name}]")
            for s, t in sorted(items, key=lambda st: st[1].index):
                line = f"  Turn {t.index} - {t.speaker}: {_turn_text(s, t, date_format)}"
                if t.image is not None and t.image.path is not None:
                    line += f"[Sent image: {(t.image.file,)!r}]"
                lines.append(line)
        context = "\n".join(lines)
    else:
        context = data["empty_context"]
    q_images = question_image_parts(question.images, captions)
    text = data["question_with_image"].format(question=question.text) if q_images else question.text
    instruction, fmt = official_instruction(data, question.task_type)
    prompt = data["template"].format(instruction=instruction, context=context, question=text, format_requirement=fmt)
    memory_images = [image_part(t.image, captions) for _, t in hits if t.image is not None and t.image.path is not None]
    details = {"images_attached": len(memory_images) + len(q_images), "question_images_attached": len(q_images)}
    return _message(prompt, [*memory_images, *q_images]), details
