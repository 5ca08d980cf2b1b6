"""Leaderboard submissions: export, validation, server-side scoring and the web service.

- :func:`export_submission` writes a run's two official files (plus our ``question_id``);
- :func:`validate_submission` / :func:`check_submission` check files against the dataset;
- :func:`score_submission` + :func:`summarise` score matched rows against the server's gold;
- :func:`create_app` builds the FastAPI service; :func:`create_admin` adds an administrator;
  :func:`list_sessions` / :func:`revoke_session` / :func:`revoke_admin_sessions` /
  :func:`remove_admin` manage server-side admin sessions and accounts.

Docs: ``docs/leaderboard.md`` (files, process) and ``docs/metric-definitions.md`` (scores).
"""

from ._app import create_app
from ._db import make_engine, make_sessionmaker
from ._export import export_submission, missing_questions, submission_row
from ._format import ACCEPTED_NAMES, FILE_NAMES, SubmissionRow, split_from_name
from ._scoring import GROUP_ORDER, METRICS, QuestionResult, score_submission, summarise
from ._security import create_admin, hash_password, set_password, verify_password
from ._sessions import (
    SessionPolicy,
    list_admins,
    list_sessions,
    remove_admin,
    revoke_admin_sessions,
    revoke_session,
    revoke_sessions_of,
    session_state,
)
from ._settings import SECRET_ENV, LeaderboardSettings
from ._store import predictions_hash
from ._validate import (
    MatchedRow,
    SubmissionProblem,
    SubmissionReport,
    UploadedFile,
    check_submission,
    validate_submission,
)


def open_database(url: str):
    """A SQLAlchemy ``sessionmaker`` for the leaderboard database at ``url`` (tables created)."""
    return make_sessionmaker(make_engine(url))


__all__ = [
    "ACCEPTED_NAMES",
    "FILE_NAMES",
    "GROUP_ORDER",
    "METRICS",
    "SECRET_ENV",
    "LeaderboardSettings",
    "MatchedRow",
    "QuestionResult",
    "SessionPolicy",
    "SubmissionProblem",
    "SubmissionReport",
    "SubmissionRow",
    "UploadedFile",
    "check_submission",
    "create_admin",
    "create_app",
    "export_submission",
    "hash_password",
    "list_admins",
    "list_sessions",
    "missing_questions",
    "open_database",
    "predictions_hash",
    "remove_admin",
    "revoke_admin_sessions",
    "revoke_session",
    "revoke_sessions_of",
    "score_submission",
    "session_state",
    "set_password",
    "split_from_name",
    "submission_row",
    "summarise",
    "validate_submission",
    "verify_password",
]
