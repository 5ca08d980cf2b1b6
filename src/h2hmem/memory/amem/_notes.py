"""A-Mem notes: what a note holds, the two construction prompts, tolerant parsing of the model's
JSON, and the per-dialogue note store saved in ``state_dir``.

Source: docs/baselines.md ("A-Mem"), restating the official A-Mem construction: an LLM writes
keywords, tags and a one-line context for each turn; then, against the 5 nearest notes, decides
whether to link the new note ("strengthen") and/or rewrite the neighbours' context and tags
("update_neighbor"). The official construction script crashed on image turns; here a turn whose
note-writer replies stay unreadable (``analysis_tries`` tries) gets a fallback note — the script's
(keywords and tags ``["对话"]``, context ``"General"``) under the official prompts, else empty
keywords and tags — and is counted.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..._atomic import atomic_write_text
from ...data import Session, Turn
from ...llm import Message
from .._protocol import CaptionLookup
from .._render import image_label

STORE_FORMAT = 1

ANALYSIS_PROMPT = """Analyse one conversation turn for a memory system and reply with a JSON object only:
{{
  "keywords": [several specific keywords (nouns, verbs, key concepts), most important first, at least three; not the speaker's name or the date],
  "context": "one sentence on the topic, the people and the situation of this turn",
  "tags": [several broad categories for this turn (domain, format, type)]
}}

Turn:
{content}"""

EVOLUTION_PROMPT = """You maintain a memory of conversation notes. A new note has been written; decide how it
relates to its nearest existing notes.

New note:
context: {context}
content: {content}
keywords: {keywords}

Nearest notes (by index):
{neighbours}

Decide:
1. Should the memory evolve (link the new note, and/or refine its neighbours)?
2. Which actions: "strengthen" (link the new note to some neighbours and set its tags) and/or
   "update_neighbor" (rewrite the neighbours' context and tags in the light of the new note).
   For "strengthen" give the indices of the neighbours to link and the new note's tags.
   For "update_neighbor" give one context and one tag list per neighbour, in index order
   (repeat the current ones for neighbours that should not change); there are {n} neighbours.

Reply with a JSON object only:
{{
  "should_evolve": true or false,
  "actions": ["strengthen", "update_neighbor"],
  "suggested_connections": [neighbour indices],
  "tags_to_update": [tags of the new note],
  "new_context_neighborhood": [one new context per neighbour],
  "new_tags_neighborhood": [[tags of neighbour 0], [tags of neighbour 1]]
}}"""


def prompts_hash() -> str:
    """SHA-256 (16 hex) of the construction prompts: part of the store fingerprint."""
    return hashlib.sha256((ANALYSIS_PROMPT + "\x1e" + EVOLUTION_PROMPT).encode()).hexdigest()[:16]


class Note(BaseModel):
    """One A-Mem note: one turn with the model's keywords, tags and context, and its links."""

    id: str
    """``"session3/t12"``."""
    session: str
    turn: int
    date: str
    content: str
    """``[speaker]: date: text [image: 1.png in session3] [image_description: caption]``."""
    keywords: list[str] = []
    tags: list[str] = []
    context: str = ""
    links: list[str] = []
    """Ids of notes this note was linked to by "strengthen" (official: on the new note only)."""
    fallback: bool = False
    """True when the analysis reply could not be parsed (keywords and tags left empty)."""
    time: str = ""
    """The official note time ``<timeline_date>_<turn, 1-based, 3 digits>`` (preset ``paper``)."""
    indexed: str | None = None
    """The retrieval text the index still holds for this note when an evolution rewrote its context
    or tags since the last re-indexing (option ``reindex_every``); None = the index holds the current text."""

    def document(self) -> str:
        """Text indexed for retrieval: content, context, keywords and tags."""
        return " ".join([self.content, self.context, " ".join(self.keywords), " ".join(self.tags)]).strip()

    def searchable(self) -> str:
        """The official indexed text (``core.py`` @ 47e20bba ``get_searchable_text``):
        ``content: … context: … keywords: a, b tags: c, d``."""
        return (
            f"content: {self.content} context: {self.context} keywords: {', '.join(self.keywords)} "
            f"tags: {', '.join(self.tags)}"
        )

    def render(self) -> str:
        """How the note is shown to the answer model."""
        return (
            f"({self.session}, turn {self.turn}) talk start time: {self.date}\nmemory content: {self.content}\n"
            f"memory context: {self.context}\nmemory keywords: {', '.join(self.keywords)}\n"
            f"memory tags: {', '.join(self.tags)}"
        )


def note_content(session: Session, turn: Turn, captions: CaptionLookup) -> str:
    """``[Kiki]: 2024-03-20: text [image: 1.png in session3] [image_description: a red car]``."""
    date = session.date.isoformat() if session.date else (session.raw_date or "date unknown")
    out = f"[{turn.speaker}]: {date}: {turn.text.strip()}"
    if turn.image is not None:
        out += f" [image: {image_label(turn.image)}]"
        caption = captions(turn.image)
        if caption:
            out += f" [image_description: {caption.strip()}]"
    return out


def official_note_content(session: Session, turn: Turn, captions: CaptionLookup) -> str:
    """As ``process_conversations.py`` @ b6070899: ``[role]: <timeline_date>:text [image: 1.png]
    [image_description: caption]`` (the raw date, the file name as written)."""
    out = f"[{turn.speaker}]: {session.raw_date or ''}:{turn.text}"
    if turn.image is not None:
        caption = captions(turn.image)
        out += f" [image: {turn.image.file}]" + (f" [image_description: {caption}]" if caption else "")
    return out


def analysis_messages(content: str) -> list[Message]:
    return [Message(role="user", content=ANALYSIS_PROMPT.format(content=content))]


def evolution_messages(note: Note, neighbours: list[Note]) -> list[Message]:
    lines = "\n".join(
        f"index {i}: talk start time: {n.date} | content: {n.content} | context: {n.context} | "
        f"keywords: {', '.join(n.keywords)} | tags: {', '.join(n.tags)}"
        for i, n in enumerate(neighbours)
    )
    return [
        Message(
            role="user",
            content=EVOLUTION_PROMPT.format(
                context=note.context,
                content=note.content,
                keywords=", ".join(note.keywords),
                neighbours=lines,
                n=len(neighbours),
            ),
        )
    ]


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in a model reply, tolerating code fences, text around it and Python-style
    ``True``/``False``; ``None`` when there is none."""
    body = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.MULTILINE).strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        return None
    chunk = body[start : end + 1]
    for candidate in (chunk, re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", chunk))):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return None


def parse_analysis(text: str) -> tuple[list[str], list[str], str] | None:
    """``(keywords, tags, context)`` from an analysis reply, or ``None`` when it has none of them.

    A missing or ill-typed field is left empty; a comma-separated string counts as a list."""
    obj = parse_json_object(text)
    if obj is None:
        return None
    keywords, tags = _str_list(obj.get("keywords")), _str_list(obj.get("tags"))
    context = obj.get("context") if isinstance(obj.get("context"), str) else None
    if keywords is None and tags is None and context is None:
        return None
    return keywords or [], tags or [], (context or "").strip()


class Evolution(BaseModel):
    """The parsed evolution decision (indices refer to the neighbour list shown)."""

    should_evolve: bool = False
    strengthen: bool = False
    update_neighbor: bool = False
    connections: list[int] = []
    tags: list[str] | None = None
    neighbour_contexts: list[str | None] = []
    neighbour_tags: list[list[str] | None] = []


def parse_evolution(text: str, n_neighbours: int) -> Evolution | None:
    """The decision in an evolution reply, or ``None`` when the reply holds no usable object.

    Indices outside ``0..n_neighbours-1`` are ignored; lists longer than the neighbour list are cut."""
    obj = parse_json_object(text)
    if obj is None or "should_evolve" not in obj:
        return None
    should = obj.get("should_evolve")
    should = should.strip().lower() == "true" if isinstance(should, str) else bool(should)
    actions = _str_list(obj.get("actions")) or []
    conns = []
    for c in obj.get("suggested_connections") or []:
        try:
            i = int(c)
        except (TypeError, ValueError):
            continue
        if 0 <= i < n_neighbours and i not in conns:
            conns.append(i)
    contexts = obj.get("new_context_neighborhood") or []
    tag_lists = obj.get("new_tags_neighborhood") or []
    return Evolution(
        should_evolve=should,
        strengthen="strengthen" in actions,
        update_neighbor="update_neighbor" in actions,
        connections=conns,
        tags=_str_list(obj.get("tags_to_update")),
        neighbour_contexts=[
            c.strip() if isinstance(c, str) and c.strip() else None
            for c in (contexts if isinstance(contexts, list) else [])
        ][:n_neighbours],
        neighbour_tags=[
            _str_list(t) if isinstance(t, list) else None for t in (tag_lists if isinstance(tag_lists, list) else [])
        ][:n_neighbours],
    )


class StoreStats(BaseModel):
    analysis_failures: int = 0
    """Turns whose analysis reply could not be parsed (fallback notes)."""
    evolution_failures: int = 0
    """Evolution replies that could not be parsed (no evolution applied)."""
    evolutions: int = 0
    links: int = 0
    neighbour_updates: int = 0
    construction_calls: int = 0
    """Model calls made while building (both prompts; cache hits included)."""
    analysis_retries: int = 0
    """Note-writer requests asked again after an unreadable reply (option ``analysis_tries``)."""
    reindexes: int = 0
    """Times the whole index was rebuilt (every ``reindex_every``-th evolution)."""


class NoteStore(BaseModel):
    """Every note of one dialogue and how far construction got: saved after each turn, so an
    interrupted or repeated run resumes where it stopped instead of rebuilding."""

    format: int = STORE_FORMAT
    fingerprint: dict[str, Any] = {}
    turns_done: dict[str, int] = {}
    """Session name → number of its turns already turned into notes (in order)."""
    notes: list[Note] = []
    stats: StoreStats = Field(default_factory=StoreStats)

    @classmethod
    def open(cls, path: Path | None, fingerprint: dict[str, Any]) -> NoteStore:
        """The store saved at ``path`` (a new one when absent or ``path`` is None).

        Raises:
            ValueError: the file is not a note store, or was built with other settings (the
                message names the file and the differing fields).
        """
        if path is None or not path.is_file():
            return cls(fingerprint=fingerprint)
        try:
            store = cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"{path}: not a readable A-Mem note store ({str(e).splitlines()[0]})") from e
        diff = sorted(
            k for k in set(fingerprint) | set(store.fingerprint) if fingerprint.get(k) != store.fingerprint.get(k)
        )
        if diff:
            raise ValueError(
                f"{path}: field 'fingerprint' differs in {', '.join(diff)} "
                f"(saved {[store.fingerprint.get(k) for k in diff]}, now {[fingerprint.get(k) for k in diff]}); "
                "use a new run directory or delete the file to rebuild"
            )
        return store

    def save(self, path: Path | None) -> None:
        """Write atomically (temporary file, then rename)."""
        if path is None:
            return
        atomic_write_text(path, self.model_dump_json())
