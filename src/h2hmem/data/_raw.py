"""Pydantic models of the raw JSON files, used only to validate and locate field errors.

They accept the extra keys the public files carry (``theme``, ``meta``, ``validation_notes``…)
and reject wrong types with a field path, which the loader turns into an :class:`Issue`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class RawContent(_Open):
    text: str = ""
    image: str | None = ""


class RawTurn(_Open):
    role: str
    content: RawContent


class RawSession(_Open):
    dialogue: list[RawTurn]
    timeline_date: str | None = None
    session_id: str | int | None = None
    session_title: str | None = None


class RawQuestionBody(_Open):
    text: str
    image: str | list[str] | None = ""


class RawQuestionType(_Open):
    main_type: str | None = None
    sub_type: str


class RawQuestion(_Open):
    question: RawQuestionBody
    original_answer: str
    answer_session: list[str] | str = Field(default_factory=list)
    answer_dialogue: str | None = None
    question_type: RawQuestionType
    difficulty: str | None = None
    validated: bool | None = None
    original_question_id: str | None = None


class RawQuestionsFile(_Open):
    questions: list[dict[str, Any]]
