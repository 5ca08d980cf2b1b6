"""Test doubles for the baseline tests: a recording in-process chat model, a keyword encoder, and
a builder of small synthetic sessions (with real image files when asked)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np

from h2hmem.data import ImageRef, Question, Session, TaskType, Turn
from h2hmem.llm import ImagePart, Message, TextPart, Usage
from h2hmem.testing import ReplyLike, ScriptedChatModel


def recording_chat(
    reply: ReplyLike = "fake answer", *, supports_images: bool = True, context_tokens: int = 100_000
) -> ScriptedChatModel:
    """A scripted model replying ``reply`` (a text, or ``reply(request)``); every call is in
    ``.requests``. ``count_tokens`` counts whitespace-separated words (easy to compute by hand);
    usage: 1 prompt + 1 completion token per call."""
    return ScriptedChatModel(
        default=reply,
        spec="fake:recording",
        supports_images=supports_images,
        context_tokens=context_tokens,
        tokenizer=lambda text: len(text.split()),
        usage=Usage(prompt_tokens=1, completion_tokens=1, calls=1),
    )


def user_parts(messages: list[Message]) -> list:
    """The user message's content as a list of parts."""
    content = messages[-1].content
    return [TextPart(text=content)] if isinstance(content, str) else list(content)


def unit(deg: float) -> np.ndarray:
    r = math.radians(deg)
    return np.array([math.cos(r), math.sin(r)], dtype=np.float32)


class AngleEncoder:
    """Encodes an item as the 2-D unit vector at the angle written in its text as ``<deg=NN>``;
    records what it was given."""

    name = "angle"
    dim = 2
    uses_images = True

    def __init__(self):
        self.seen: list[tuple[str, Path | None]] = []

    async def encode(self, items):
        self.seen.extend(items)
        out = []
        for text, _ in items:
            deg = float(text.split("<deg=")[1].split(">")[0])
            out.append(unit(deg))
        return np.stack(out) if out else np.zeros((0, 2), np.float32)


def make_session(
    name: str, date: dt.date | None, turns: list[tuple[str, str, str | None]], image_dir: Path | None = None
) -> Session:
    """``turns``: (speaker, text, image file or None). Image files are looked up in
    ``image_dir/<session>/`` (path None when absent)."""
    out = []
    for i, (speaker, text, file) in enumerate(turns):
        ref = None
        if file:
            p = image_dir / name / file if image_dir else None
            ref = ImageRef(session=name, file=file, path=p if p is not None and p.is_file() else None)
        out.append(Turn(index=i, speaker=speaker, text=text, image=ref))
    return Session(
        name=name,
        number=int(name.removeprefix("session")),
        date=date,
        raw_date=date.isoformat() if date else None,
        turns=tuple(out),
    )


def make_question(text: str, images: tuple[ImageRef, ...] = (), task: TaskType = TaskType.UPR) -> Question:
    return Question(
        id="dyadic/dialogue1/session1/q0",
        split="dyadic",
        dialogue="dialogue1",
        session="session1",
        index=0,
        text=text,
        images=images,
        gold="gold",
        task_type=task,
        main_category=task.main_category,
    )


def image_names(parts: list) -> list[str]:
    return [p.name for p in parts if isinstance(p, ImagePart)]


class HashEmbedder:
    """Deterministic text embedder (signed feature hashing of words, h2hmem.testing.hashed_embedding)
    that counts the texts it embeds."""

    name = "hash-64"
    dim = 64

    def __init__(self):
        self.texts: list[str] = []

    async def embed(self, texts):
        from h2hmem.testing import hashed_embedding

        self.texts.extend(texts)
        return np.array([hashed_embedding(t, self.dim) for t in texts], dtype=np.float32).reshape(len(texts), self.dim)


class TableEmbedder:
    """Embeds each text as the vector given for it in ``table`` (exact text match)."""

    name = "table"

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table
        self.dim = len(next(iter(table.values())))

    async def embed(self, texts):
        return np.stack([np.asarray(self.table[t], np.float32) for t in texts]) if texts else np.zeros((0, self.dim))
