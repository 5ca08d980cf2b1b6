"""What a scripted chat model was asked: one :class:`ScriptedRequest` per call, with typed views of
the prompt (system text, user text, images, ``Key: value`` fields) so tests need no regular expressions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from h2hmem.llm import GenerationConfig, ImagePart, Message, TextPart

_FIELD = re.compile(r"^([A-Z][A-Za-z0-9' ]{0,40}): ?(.*)$")
_ITEM_ID = re.compile(r"^\[([^\]\s]+)\]$")


def content_text(content: str | list[Any]) -> str:
    """Text of a message content: the string itself, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if isinstance(p, TextPart))


@dataclass
class ScriptedRequest:
    """One call a :class:`~h2hmem.testing.ScriptedChatModel` received, in arrival order.

    ``index`` counts from 0; ``time`` is wall-clock seconds since the epoch (``time.time()``) when
    the call arrived; ``config`` is the generation config the caller passed, or the default
    ``GenerationConfig()`` when it passed none. ``stage`` is the caller's accounting stage
    (``"answer"``, ``"judge"``, ``"memory_build"``, ``"caption"``, ``"label"``…), or ``"http"`` for a
    request that came through :meth:`~h2hmem.testing.ScriptedChatModel.responder`. After the
    call, ``reply`` holds the text returned (None when it raised) and ``error`` the exception raised.
    """

    index: int
    messages: list[Message]
    config: GenerationConfig
    stage: str
    time: float
    reply: str | None = None
    error: BaseException | None = None

    # ----- the prompt ---------------------------------------------------------------------------
    @property
    def system(self) -> str | None:
        """Text of the first system message, or None when there is none."""
        return next((content_text(m.content) for m in self.messages if m.role == "system"), None)

    @property
    def user_texts(self) -> list[str]:
        """Texts of the user messages, in order (text parts joined by newlines)."""
        return [content_text(m.content) for m in self.messages if m.role == "user"]

    @property
    def user_text(self) -> str:
        """Text of the last user message (``""`` when there is none)."""
        texts = self.user_texts
        return texts[-1] if texts else ""

    @property
    def text(self) -> str:
        """Texts of all messages joined by newlines (for ``"…" in req.text`` checks)."""
        return "\n".join(content_text(m.content) for m in self.messages)

    @property
    def images(self) -> list[ImagePart]:
        """Image parts of all messages, in order."""
        return [
            p for m in self.messages if not isinstance(m.content, str) for p in m.content if isinstance(p, ImagePart)
        ]

    @property
    def image_names(self) -> list[str]:
        return [p.name for p in self.images]

    # ----- tagged fields --------------------------------------------------------------------------
    def fields(self, label: str) -> list[str]:
        """Values of the user-text lines ``"<label>: <value>"``, in order (stripped).

        Example: an answer prompt holding ``"Question: Where did we meet?"`` gives
        ``fields("Question") == ["Where did we meet?"]``; a judge batch gives one per item.
        """
        prefix = f"{label}:"
        return [line[len(prefix) :].strip() for line in self.user_text.splitlines() if line.startswith(prefix)]

    def field(self, label: str) -> str | None:
        """The first of :meth:`fields`, or None when no line carries ``label``."""
        values = self.fields(label)
        return values[0] if values else None

    @property
    def question(self) -> str | None:
        """The ``Question:`` line of the user text: the question of an answer, labelling or
        single-item judge prompt (every prompt h2hmem builds around a question tags it so)."""
        return self.field("Question")

    def items(self, user_message: int = -1) -> list[dict[str, str]]:
        """A user message's text as items: blocks separated by blank lines, each read as its
        ``Key: value`` lines (a line that is not one continues the previous value); a line
        ``[id]`` alone gives the key ``"id"``. Blocks with no key are left out.

        Example: the harmonized judge prompt ``"[q1]\\nQuestion: A?\\nReference answer: B\\n…"``
        gives ``[{"id": "q1", "Question": "A?", "Reference answer": "B", …}]``; the official one
        (``Question ID: q1`` lines) gives ``{"Question ID": "q1", …}`` per item.
        ``user_message`` picks the user message (index among them; default the last, ``0``
        the first, e.g. the items of a judge request that ends with a corrective re-ask).
        """
        texts = self.user_texts
        out: list[dict[str, str]] = []
        for block in re.split(r"\n\s*\n", texts[user_message] if texts else ""):
            item: dict[str, str] = {}
            last: str | None = None
            for line in block.splitlines():
                if (m := _ITEM_ID.match(line.strip())) and not item:
                    item["id"] = m.group(1)
                elif m := _FIELD.match(line):
                    last = m.group(1)
                    item[last] = m.group(2).strip()
                elif last is not None:
                    item[last] = f"{item[last]}\n{line}".strip()
            if item:
                out.append(item)
        return out
