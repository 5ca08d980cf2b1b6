"""The judge's preset options: ``paper`` (the official judge's request and parsing) or ``harmonized``.

===================  ====================================  ================================
option               ``paper``                             ``harmonized``
===================  ====================================  ================================
``judge_format``     ``user_array``: the official prompt   ``system_object``: our rubric as
                     in one user message, reply a JSON     system message, reply a JSON
                     array, no ``max_tokens``, no JSON     object ``{"judgments": [...]}``,
                     mode; question ids ``q{index}``       JSON mode, a reply budget; ids
                                                           ``q1…qN``
``score_levels``     ``snap``: any number → nearest level  ``strict``: a score off the five
                     (ties to the lower one)               levels is an error (re-asked)
``batching``         ``session`` (one call per session)    ``session``
``session_header``   ``official``: ``Session: unknown``    ``folder``: the session folder
                     for A-Mem and NGM (their official     for every method (only the
                     result files had no session folder),  ``user_array`` format has this
                     the folder for the others             line)
===================  ====================================  ================================

Official source: varib1/H2HMEM ``evaluate_metrics/LLM-as-judge/LLM_as_judge.py`` and
``run_LLM_as_judge.sh`` @ b6070899. Both presets re-ask what a reply left unjudged and record
what stays unjudged (the official script dropped it), and neither shows the method's name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from ..presets import DEFAULT_PRESET, Preset, fill_from_preset

JudgeFormat = Literal["user_array", "system_object"]
ScoreLevels = Literal["snap", "strict"]
JudgeMode = Literal["session", "question"]
SessionHeader = Literal["official", "folder"]

JUDGE_OPTION_NAMES: tuple[str, ...] = ("judge_format", "score_levels", "batching", "session_header")

JUDGE_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "judge_format": "user_array",
        "score_levels": "snap",
        "batching": "session",
        "session_header": "official",
    },
    "harmonized": {
        "judge_format": "system_object",
        "score_levels": "strict",
        "batching": "session",
        "session_header": "folder",
    },
}
"""Resolved option values of each preset."""


class JudgeOptions(BaseModel):
    """The judge's protocol choices; options left out (or None) take the value of ``preset``.

    Raises:
        ValueError: unknown preset or option value.
    """

    model_config = ConfigDict(frozen=True)

    preset: Preset = DEFAULT_PRESET
    judge_format: JudgeFormat = "user_array"
    score_levels: ScoreLevels = "snap"
    batching: JudgeMode = "session"
    """``session``: one call per (split, dialogue, session) holding its questions (official);
    ``question``: one call per question."""
    session_header: SessionHeader = "official"
    """The ``Session:`` line of the ``user_array`` prompt: ``official`` writes ``unknown`` for
    predictions of the methods in :data:`h2hmem.metrics._judge_official.NO_SESSION_FOLDER` (A-Mem,
    NGM: their official result files carried no session folder, so the published judge saw
    ``unknown``) and the folder for the others; ``folder`` always writes the folder."""

    @model_validator(mode="before")
    @classmethod
    def _fill_from_preset(cls, data: Any) -> Any:
        return fill_from_preset(data, JUDGE_PRESETS)

    def options(self) -> dict[str, str]:
        """The resolved value of every option (recorded in each judgment and the scores summary)."""
        return {name: getattr(self, name) for name in JUDGE_OPTION_NAMES}
