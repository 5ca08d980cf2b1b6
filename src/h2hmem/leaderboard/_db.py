"""Database tables of the leaderboard (SQLAlchemy 2; SQLite or PostgreSQL).

Uploaded files are stored in the database, never on disk, so no path is ever derived from user
input. Datetimes are naive UTC (SQLite keeps no time zone).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    inspect,
    text,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker
from sqlalchemy.schema import CreateColumn

STATUSES = ("pending", "approved", "rejected", "withdrawn")
"""Review status of an entry (set by administrators)."""
SCORE_STATES = ("queued", "scoring", "scored", "failed")
"""Server-side scoring of an entry (background worker); only a ``scored`` entry can be approved."""
JUDGE_STATES = ("none", "queued", "running", "done", "failed")
MAX_EMAIL_CHARS = 254
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
    sessions: Mapped[list[AdminSession]] = relationship(back_populates="admin", cascade="all, delete-orphan")


class AdminSession(Base):
    """A logged-in administrator's session. The cookie holds a random token; only its SHA-256 is
    stored, so a database leak gives no usable session. Revoked rows are kept for the list."""

    __tablename__ = "lb_admin_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    admin_id: Mapped[int] = mapped_column(ForeignKey("lb_admins.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    revoked_why: Mapped[str] = mapped_column(String(64), default="")
    user_agent: Mapped[str] = mapped_column(String(200), default="")
    admin: Mapped[Admin] = relationship(back_populates="sessions")


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
    # Columns added after the first release carry a server default (or are nullable) so that
    # make_engine can add them to an existing table.
    score_status: Mapped[str] = mapped_column(String(16), default="queued", server_default="scored")
    """One of :data:`SCORE_STATES` (rows from before background scoring were scored at upload)."""
    score_error: Mapped[str] = mapped_column(Text, default="", server_default="")
    email: Mapped[str] = mapped_column(String(MAX_EMAIL_CHARS), default="", server_default="")
    """The submitter's optional contact address: shown to administrators only."""
    content_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    """SHA-256 of the normalized predictions (see ``_store.predictions_hash``)."""
    duplicate_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The earliest entry with the same :attr:`content_hash`, if any."""
    judge_preset: Mapped[str] = mapped_column(String(16), default="paper", server_default="harmonized")
    """The judge preset (``paper`` or ``harmonized``) of the entry's judge scores, set when it is
    queued for judging; rows from before this column were judged with ``harmonized``."""
    receipt_hash: Mapped[str | None] = mapped_column(String(64), nullable=True, unique=True, index=True)
    """SHA-256 of the submitter's status token (the token itself is only in the status URL)."""
    files: Mapped[list[EntryFile]] = relationship(back_populates="entry", cascade="all, delete-orphan")
    questions: Mapped[list[QuestionScore]] = relationship(
        back_populates="entry", cascade="all, delete-orphan", order_by="QuestionScore.id"
    )


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
    add_missing_columns(engine)
    return engine


def add_missing_columns(engine: Engine) -> list[str]:
    """Bring a database made by an older version up to date: ``ALTER TABLE … ADD COLUMN`` for
    every column of the model missing from its table, then the missing indexes. Returns the
    ``table.column`` names added. (Tables are created by ``create_all``; nothing is dropped.)

    Raises:
        RuntimeError: a missing column is NOT NULL without a server default (cannot be added).
    """
    insp = inspect(engine)
    added = []
    with engine.begin() as conn:
        for table in Base.metadata.sorted_tables:
            have = {c["name"] for c in insp.get_columns(table.name)}
            for col in table.columns:
                if col.name in have:
                    continue
                if not col.nullable and col.server_default is None:
                    raise RuntimeError(f"cannot add column {table.name}.{col.name}: NOT NULL without a server default")
                ddl = CreateColumn(col).compile(dialect=engine.dialect)
                conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {ddl}"))
                added.append(f"{table.name}.{col.name}")
            for index in table.indexes:
                index.create(conn, checkfirst=True)
    return added


def make_sessionmaker(engine: Engine) -> sessionmaker:
    return sessionmaker(engine, expire_on_commit=False)
