"""Database tables of the leaderboard (SQLAlchemy 2; SQLite or PostgreSQL).

Uploaded files are stored in the database, never on disk, so no path is ever derived from user
input. Datetimes are naive UTC (SQLite keeps no time zone).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text, create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker

STATUSES = ("pending", "approved", "rejected", "withdrawn")
JUDGE_STATES = ("none", "queued", "running", "done", "failed")
MAX_METHOD_CHARS = 100
MAX_ORGANISATION_CHARS = 200
MAX_DESCRIPTION_CHARS = 4000
MAX_REASON_CHARS = 2000


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Admin(Base):
    __tablename__ = "lb_admins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Entry(Base):
    """One submission (both files) and its review state."""

    __tablename__ = "lb_entries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    method: Mapped[str] = mapped_column(String(MAX_METHOD_CHARS))
    organisation: Mapped[str] = mapped_column(String(MAX_ORGANISATION_CHARS), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    """Why it was rejected or withdrawn (shown to admins)."""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    reviewed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    reviewed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """Aggregated scores (see ``_scoring.summarise``)."""
    validation: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    """Counts and the first problems of the validation report."""
    judge_model: Mapped[str | None] = mapped_column(String(200), nullable=True)
    judge_status: Mapped[str] = mapped_column(String(16), default="none")
    judge_error: Mapped[str] = mapped_column(Text, default="")
    files: Mapped[list[EntryFile]] = relationship(back_populates="entry", cascade="all, delete-orphan")
    questions: Mapped[list[QuestionScore]] = relationship(
        back_populates="entry", cascade="all, delete-orphan", order_by="QuestionScore.id")


class EntryFile(Base):
    """An uploaded file, kept as bytes for audits and re-scoring."""

    __tablename__ = "lb_entry_files"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("lb_entries.id", ondelete="CASCADE"), index=True)
    split: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(255))
    """The name the client sent, shown only (never used as a path)."""
    sha256: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    entry: Mapped[Entry] = relationship(back_populates="files")


class QuestionScore(Base):
    """Per-question scores of one entry, against the server's gold."""

    __tablename__ = "lb_question_scores"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("lb_entries.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[str] = mapped_column(String(200))
    split: Mapped[str] = mapped_column(String(16))
    task_type: Mapped[str] = mapped_column(String(8))
    main_category: Mapped[str] = mapped_column(String(32))
    system_answer: Mapped[str] = mapped_column(Text, default="")
    answered: Mapped[bool] = mapped_column(Boolean, default=True)
    """False when the submission had no row for the question (scored 0)."""
    precision: Mapped[float] = mapped_column(Float)
    recall: Mapped[float] = mapped_column(Float)
    f1: Mapped[float] = mapped_column(Float)
    bleu1: Mapped[float] = mapped_column(Float)
    exact_match: Mapped[float] = mapped_column(Float)
    judge_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    judge_reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    entry: Mapped[Entry] = relationship(back_populates="questions")


class ClientEvent(Base):
    """An upload attempt or failed login, for per-client rate limits (client = keyed hash of the address)."""

    __tablename__ = "lb_client_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)


class Setting(Base):
    __tablename__ = "lb_settings"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the tables created. SQLite connections may cross threads
    (the judge worker and uvicorn's threadpool share the engine).

    Raises:
        sqlalchemy.exc.ArgumentError: a malformed URL.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False}
    engine = create_engine(url, **kwargs)
    Base.metadata.create_all(engine)
    return engine


def make_sessionmaker(engine: Engine) -> sessionmaker:
    return sessionmaker(engine, expire_on_commit=False)
