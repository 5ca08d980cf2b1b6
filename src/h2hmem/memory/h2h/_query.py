"""Task-aware querying (part of ``h2h``): what of a question is worth searching for.

Benchmark questions wrap the thing to find in instructions ("Provide the session number and image
file name", "Does this contradict the content of the conversation? Answer yes or no"). Those
words match nothing useful and, for a dense encoder, pull every question towards the same
point. :func:`search_text` removes them; :func:`sub_queries` splits questions that list several
events ("A. … B. … C. …", the usual form of ordering questions) so each event is searched for on
its own; :func:`sentence_queries` splits a question of several sentences ("In Session 1, X
suggested … In Session 14, how was this upgraded …?"), each searched with its own time anchors;
:func:`claim_sides` splits a conflict claim into its sides ("The dialogue mentions that X, but Y
says Z" → X, Y says Z), so the statement each side rests on is searched for on its own.
"""

from __future__ import annotations

import functools
import re

INSTRUCTIONS: tuple[str, ...] = (
    r"provide the session number and (?:the )?(?:image|picture|photo) (?:file )?name\.?",
    r"(?:please )?(?:give|provide|state) the (?:session|image|picture)[^.?]*\.",
    r"does this (?:contradict|conflict with)[^?]*\?",
    r"is this (?:consistent|inconsistent) with[^?]*\?",
    r"does this (?:align|agree|match) with[^?]*\?",
    r"is (?:this|there) (?:a )?(?:contradiction|contradictory|conflict)[^?]*\?",
    r"answer (?:with )?(?:\"?yes\"? or \"?no\"?|yes/no)\.?",
    r"use letters to represent the events\.?",
    r"please arrange the following events in chronological order(?: based on the dialogue content)?:?",
    r"based on (?:the )?(?:dialogue|conversation)(?: content)?,?",
    r"based on the (?:newly )?(?:learned )?(?:knowledge|information|content)(?: (?:newly )?learned)?"
    r"(?: (?:from|in) the (?:conversation|dialogue))?,?",
    r"please answer by combining[^.?]*[.?]",
    r"in the conversation,?",
    r"according to the (?:dialogue|conversation),?",
)
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in INSTRUCTIONS), re.I)
_ITEM = re.compile(r"(?:^|\s|;)([A-H])[.)、:]\s+(.+?)(?=(?:\s|;)[A-H][.)、:]\s|$)", re.S)


@functools.lru_cache(maxsize=256)
def without_instructions(question: str) -> str:
    """``question`` with each instruction phrase replaced by a space (other whitespace as it was): the
    first step of every function here, worked out once per question text (``h2h`` cuts a question
    several ways, and the phrase search is the costliest step of each)."""
    return _INSTRUCTION.sub(" ", question)


def search_text(question: str) -> str:
    """The question without instruction phrases and with whitespace collapsed (never empty: the
    original text when nothing would remain)."""
    cleaned = re.sub(r"\s+", " ", without_instructions(question)).strip(" ;:,")
    return cleaned if len(cleaned) >= 3 else question.strip()


def sub_queries(question: str) -> list[str]:
    """The listed items of a question ("A. X; B. Y" → ["X", "Y"]), or [] when fewer than two."""
    body = without_instructions(question)
    items = [re.sub(r"\s+", " ", m.group(2)).strip(" ;,.") for m in _ITEM.finditer(body)]
    items = [i for i in items if len(i) >= 3]
    return items if len(items) >= 2 else []


_SENTENCE = re.compile(r"(?<=[.?!;])\s+(?=[A-Z])|,\s+but\s+")
MIN_SENTENCE_WORDS = 4
"""Shorter pieces ("Answer yes or no.") are not searched on their own."""


def sentence_queries(question: str) -> list[str]:
    """The sentences of a question (instructions removed) with at least :data:`MIN_SENTENCE_WORDS`
    words, or [] when fewer than two.

    Example: "In Session 1, A planned X. In Session 2, how did they update it?" → both sentences.
    """
    body = re.sub(r"\s+", " ", without_instructions(question)).strip()
    parts = [p.strip(" ;,") for p in _SENTENCE.split(body)]
    parts = [p for p in parts if len(p.split()) >= MIN_SENTENCE_WORDS]
    return parts if len(parts) >= 2 else []


_CONTRAST = re.compile(
    r",?\s+(?:but|yet|whereas)\s+(?:new information (?:says|shows)(?: that)?\s+)?|,\s+while\s+|;\s+", re.I
)
_FRAME = re.compile(
    r"^\s*(?:if\s+)?(?:someone|some(?:\s+people)?|people|others)\s+(?:says?|said|claims?|think|thinks?)(?:\s+that)?,?\s*"
    r"|,?\s*\b(?:the\s+(?:dialogue|conversation)\s+)?(?:mentions?|mentioned|says?|said|claims?|claimed|states?|stated)"
    r"(?:\s+in\s+the\s+(?:dialogue|conversation))?\s+that\s+",
    re.I,
)
_QUOTES = re.compile(r"[\"“”‘’]|(?<!\w)'|'(?!\w)")


def claim_sides(question: str) -> list[str]:
    """The sides of a conflict claim, or [] when it has fewer than two of at least
    :data:`MIN_SENTENCE_WORDS` words.

    A conflict question puts a claim against the conversation; the evidence is the turn each part
    of the claim rests on ("both sides"). The claim (instructions removed) is cut at contrast
    conjunctions (", but", ", yet", ", while", "whereas", "; ", "but new information says"), then at
    reporting frames ("X mentioned that", "the conversation mentioned that", "someone says"), which
    separate the scene from what is claimed; quote marks are dropped.

    Example: "The dialogue mentions that A went to the lake, but B says, 'The lake is new to me!'
    Is this contradictory?" → ["A went to the lake", "B says, The lake is new to me!"].
    """
    body = re.sub(r"\s+", " ", without_instructions(question)).strip()
    parts = [q for p in _CONTRAST.split(body) for q in _FRAME.split(p)]
    parts = [re.sub(r"\s+", " ", _QUOTES.sub("", p)).strip(" ;,.") for p in parts]
    parts = [p for p in parts if len(p.split()) >= MIN_SENTENCE_WORDS]
    return parts if len(parts) >= 2 else []
