"""Settings of the leaderboard service (one object, passed to :func:`create_app`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .. import defaults
from ..presets import Preset
from ._format import MAX_ROWS

SECRET_ENV = "H2HMEM_LEADERBOARD_SECRET"
"""Environment variable holding the session-signing secret; else one is generated and kept in the DB."""


class LeaderboardSettings(BaseModel):
    """Everything the service needs. Defaults are safe for a single small server."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    data_root: Path
    """Dataset root holding the gold answers (see :func:`h2hmem.data.load_dataset`)."""
    db_url: str = "sqlite:///h2hmem-leaderboard.db"
    """SQLAlchemy URL: a SQLite file, or ``postgresql+psycopg://user:pw@host/db``."""
    judge_model: str | None = None
    """Judge model spec (``openai:gpt-4o-mini`` is the official judge, docs/metric-definitions.md §2); None:
    lexical metrics only. Built with :func:`h2hmem.llm.load_chat_model` (API key from
    ``$OPENAI_API_KEY``; replies cached in :func:`h2hmem.llm.default_cache_path`)."""
    judge_preset: Preset = "paper"
    """Judge protocol (:class:`h2hmem.metrics.JudgeOptions`): ``paper`` sends the official judge
    request (the official prompt verbatim, one user message per session, scores snapped to the
    nearest level), as the published table was scored; ``harmonized`` uses h2hmem's strict judge.
    Recorded with every entry's judge scores; entries judged under another preset are marked."""
    judge_base_url: str | None = None
    """OpenAI-compatible endpoint of the judge (default ``$OPENAI_BASE_URL``, then OpenAI)."""
    judge_chat: Any = Field(default=None, exclude=True)
    """A ready :class:`h2hmem.llm.ChatModel` used as the judge (overrides ``judge_model``)."""
    max_file_bytes: int = Field(default=10_000_000, gt=0)
    """Per uploaded file; the full dyadic split exported with long answers is ≈ 3 MB."""
    max_rows: int = Field(default=MAX_ROWS, gt=0)
    uploads_per_hour: int = 10
    """Upload attempts per client address per rolling hour (counted in the database)."""
    logins_per_15min: int = 10
    """Failed admin logins per client address per 15 minutes before logins are refused."""
    secret: str | None = None
    """Session-signing secret; default: env ``H2HMEM_LEADERBOARD_SECRET``, else stored in the DB."""
    session_idle_minutes: float = Field(default=defaults.LEADERBOARD_SESSION_IDLE_MINUTES, gt=0, allow_inf_nan=False)
    """An admin session ends after this long without a request."""
    session_hours: float = Field(default=defaults.LEADERBOARD_SESSION_HOURS, gt=0, allow_inf_nan=False)
    """An admin session ends this long after login, however active."""
    scorer: Any = Field(default=None, exclude=True)
    """A function ``(SubmissionReport, Dataset) -> list[QuestionResult]`` used instead of
    :func:`h2hmem.leaderboard.score_submission` by the background scorer (tests inject a slow one)."""
    https_only_cookies: bool = False
    """Mark the session cookie Secure (set it when serving over HTTPS)."""
    title: str = "H2HMem leaderboard"
