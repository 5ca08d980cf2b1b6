"""Context layouts of the official scripts (preset ``paper``), written anew from their behaviour.

- Full (Text) (``baselines/FullText/FullText.py`` @ b6070899, ``_format_memory_context_only``):
  a header with the session count, turn count and one line per session, then the dialogue grouped
  by session, one ``  Turn i - role: [Image: caption] date:text`` line per turn (1-based ``i``;
  ``date`` = ``timeline_date`` as written);
- head truncation (``TokenCounter.truncate_text`` with ``preserve_ratio=1.0``): the first N
  cl100k tokens of the whole context, decoded as tiktoken decodes them;
- Naive RAG chunks (``baselines/Naive-RAG/Naive_RAG.py`` @ 919db825, ``_chunk_dialogues``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..data import Session, Turn
from ._protocol import CaptionLookup

DateFormat = Literal["raw", "iso"]


def session_date(session: Session, date_format: DateFormat) -> str:
    """``timeline_date`` as written (``"raw"``, "" when missing, as the scripts' ``.get(..., "")``) or the
    parsed ISO date (``"iso"``, falling back to the raw text)."""
    if date_format == "iso" and session.date is not None:
        return session.date.isoformat()
    return session.raw_date or ""


def full_text_turn_line(session: Session, turn: Turn, caption: str | None, date_format: DateFormat) -> str:
    """``"  Turn 3 - Lin Shuying: [Image: <caption>] 2024-02-20 (正月十一):<text>"`` (caption "" when none)."""
    text = f"{session_date(session, date_format)}:{turn.text}"
    if turn.image is not None:
        return f"  Turn {turn.index + 1} - {turn.speaker}: [Image: {caption or ''}] {text}"
    return f"  Turn {turn.index + 1} - {turn.speaker}: {text}"


def full_text_context(sessions: Sequence[Session], captions: CaptionLookup, date_format: DateFormat = "raw") -> str:
    """The official Full (Text) memory context of ``sessions`` (present sessions, in order).

    Args:
        sessions: the observed sessions (``absent`` ones are left out, as the script skipped
            folders without ``session.json``).
        captions: caption lookup ``ImageRef -> str | None``.
        date_format: ``"raw"`` (official) or ``"iso"``.
    """
    sessions = [s for s in sessions if not s.absent]
    lines = [
        f"Total sessions: {len(sessions)}",
        f"Total dialogue turns: {sum(len(s.turns) for s in sessions)}",
        "\n[Session Information]",
    ]
    for s in sessions:
        date = session_date(s, date_format)
        lines.append(
            f"Session {s.name}: ({date}) - {len(s.turns)} dialogue turns"
            if s.title
            else f"Session {s.name}: {len(s.turns)} dialogue turns"
        )
    if any(s.turns for s in sessions):
        lines.append("\n[Complete Dialogue Content]")
        for s in sessions:
            if not s.turns:
                continue
            lines.append(f"\nSession {s.name}: {session_date(s, date_format)}")
            for t in s.turns:
                lines.append(full_text_turn_line(s, t, captions(t.image) if t.image is not None else None, date_format))
    return "\n".join(lines)


def head_truncate(text: str, max_tokens: int, encoding: str = "cl100k_base") -> tuple[str, int, int]:
    """The first ``max_tokens`` tokens of ``text``: ``(kept text, original tokens, kept tokens)``.

    As the official ``truncate_text(..., preserve_ratio=1.0)``: unchanged when it fits; else the
    token prefix decoded with tiktoken's ``decode`` (a multi-byte character split by the cut
    becomes U+FFFD, as in the published runs).
    """
    from ..llm import get_encoding

    enc = get_encoding(encoding)
    tokens = enc.encode(text, disallowed_special=())
    if len(tokens) <= max_tokens:
        return text, len(tokens), len(tokens)
    kept = tokens[:max_tokens]
    return enc.decode(kept), len(tokens), len(kept)


def naive_rag_chunk(session: Session, turn: Turn, caption: str | None, date_format: DateFormat = "raw") -> str:
    """One official Naive RAG chunk (``chunk_size`` 1): a ``[Session …]`` marker line and one turn line.

    ``"[Session session3 - Dialogue chunk 2]\\nTurn 2 Lin Shuying: [Image: 1.png] <caption> <date>:<text>\\n"``
    — the memory image's file name is part of the official chunk text (a memory turn's, never a
    question's).
    """
    text = f"{session_date(session, date_format)}:{turn.text}"
    head = f"[Session {session.name} - Dialogue chunk {turn.index + 1}]\n"
    if turn.image is not None:
        return head + f"Turn {turn.index + 1} {turn.speaker}: [Image: {turn.image.file}] {caption or ''} {text}\n"
    return head + f"Turn {turn.index + 1} {turn.speaker}: {text}\n"


def naive_rag_embedding_text(chunk: str) -> str:
    """The text the official script embeds for a chunk (``_extract_text_from_chunk``): marker and blank
    lines dropped; a ``Turn N <one-word role>: text`` line reduced to its text; other lines kept whole."""
    import re

    out = []
    for line in chunk.split("\n"):
        if line.startswith("[Session") or line.startswith("---") or not line.strip():
            continue
        m = re.match(r"Turn\s+(\d+)\s+(\w+):\s*(.*)", line)
        out.append(m.group(3) if m else line)
    return " ".join(out)


def naive_rag_context(hits: Sequence[tuple[str, int, str, float, bool]], top_k: int) -> str:
    """The official retrieved-context block (``VLMEvaluator._format_retrieved_context``).

    Args:
        hits: ``(session name, 0-based turn index, chunk text, cosine, has image)`` in rank order.
        top_k: the configured top-k (printed in the header).
    """
    lines = [
        "[Naive RAG Retrieval Results (BERT Embedding)]",
        "Similarity calculation method: bert_embedding_cosine",
        f"Retrieved {len(hits)} relevant chunks (top_k={top_k})",
        "\n[Retrieved Relevant Chunks]",
    ]
    for i, (session, turn, _, score, has_image) in enumerate(hits, 1):
        lines.append(
            f"\nChunk {i} [Session {session} chunk {turn + 1}] (similarity: {score:.4f}, method: embedding, "
            f"dialogue turns: {turn + 1}-{turn + 1})"
        )
        if has_image:
            lines.append("  (contains image)")
    if hits:
        lines.append("\n[Retrieved Dialogue Content]")
        for i, (_, _, chunk, _, _) in enumerate(hits, 1):
            lines.append(f"\n--- Chunk {i} ---")
            lines.append(chunk)
    return "\n".join(lines)
