"""Optional query expansion by the answer model (``rewrite="reasoning"`` for MCR and RET questions, or
``"all"``; ``"off"`` by default).

The answer model reads the question and writes one short chat message that a participant of the
conversation might have sent and that would answer it — a *hypothetical* turn, in the words a
turn would use rather than a question's (HyDE: Gao et al., 2022, "Precise Zero-Shot Dense
Retrieval without Relevance Labels"). The whole question's dense query becomes the normalised sum
of the question's and the hypothetical turn's embeddings, and the turn's words join the BM25
query. Sub-queries (listed events, claim sides, anchored sentences) keep their own text. A reply
with no words leaves the query as it was. One extra model call per question (stage ``other``,
counted in the question's usage and, in answer runs, ``details.rewrite_calls``), with a short reply
(:data:`REWRITE_CONFIG`).
"""

from __future__ import annotations

import re

from ...llm import GenerationConfig, Message

REWRITE_CONFIG = GenerationConfig(temperature=0.0, max_tokens=48)
"""Deterministic, and one chat message is short."""
REWRITE_SYSTEM = (
    "You help search the history of a chat between people. Given a question about the chat, write "
    "one short chat message that a participant might have sent and that would answer the question. "
    "Use the words people use in a chat. Reply with the message only."
)
_LABEL = re.compile(r"^\s*(?:message|answer|reply|response)\s*(?::\s*|$)", re.I)
_THINKING = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_MARKUP = str.maketrans("", "", "*`")
_QUOTES = "\"'“”‘’"


def rewrite_messages(question: str) -> list[Message]:
    """System and user messages asking for the hypothetical turn of ``question``."""
    return [
        Message(role="system", content=REWRITE_SYSTEM),
        Message(role="user", content=f"Question: {question}\n\nMessage:"),
    ]


def parse_rewrite(reply: str) -> str:
    """The hypothetical turn in ``reply``: its first line with words once a reasoning block
    (``<think>…</think>``, or an unclosed one to the end), Markdown emphasis, enclosing quotes and a
    leading label ("Message:", "Answer:" …) are removed, skipping a line that introduces another
    (ending in ":"); ``""`` when there is none.

    Example: 'Sure! Here is one:\\n**Message:** "We moved to Lyon in May."' → 'We moved to Lyon in May.'
    """
    for line in _THINKING.sub("", reply).splitlines():
        text = line.translate(_MARKUP).strip().strip(_QUOTES).strip()
        text = _LABEL.sub("", text).strip().strip(_QUOTES).strip()
        if text and not text.endswith(":"):
            return text
    return ""
