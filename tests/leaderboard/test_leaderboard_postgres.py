"""The service on a real PostgreSQL server (127.0.0.1, database h2hmem_test; scripts/start-services.sh)."""

from __future__ import annotations

import os

import pytest
from fastapi.testclient import TestClient
from lb_helpers import csrf_of, expected_f1, login, mixed_predictions, upload, write_run

from h2hmem.leaderboard import LeaderboardSettings, create_admin, create_app, export_submission, open_database

PG_URL = os.environ.get("H2HMEM_TEST_POSTGRES_URL", "postgresql+psycopg://h2hmem:h2hmem@127.0.0.1:5432/h2hmem_test")


@pytest.fixture
def pg_url() -> str:
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'h2hmem[postgres]')")
    from sqlalchemy.engine import make_url

    u = make_url(PG_URL)
    try:
        psycopg.connect(
            host=u.host, port=u.port or 5432, user=u.username, password=u.password, dbname=u.database, connect_timeout=3
        ).close()
    except psycopg.OperationalError as e:
        pytest.skip(
            f"no PostgreSQL server for the leaderboard tests at {u.render_as_string(hide_password=True)} "
            f"(run `bash scripts/start-services.sh`): {str(e).strip().splitlines()[0]}"
        )
    from h2hmem.leaderboard._db import Base, make_engine

    engine = make_engine(PG_URL)
    Base.metadata.drop_all(engine)  # a clean database for each test
    engine.dispose()
    yield PG_URL
    engine = make_engine(PG_URL)
    Base.metadata.drop_all(engine)
    engine.dispose()


def test_upload_approve_rank_on_postgres(pg_url, tmp_path, sample_root, sample_dataset):
    preds = mixed_predictions(sample_dataset)
    files = export_submission(write_run(tmp_path / "run", preds))
    with open_database(pg_url)() as db:
        create_admin(db, "admin", "correct horse battery")
    client = TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=pg_url)))
    r = upload(client, files, method="pg method")
    assert r.status_code == 200 and "pending review" in r.text
    assert client.get("/api/entries").json() == {"entries": []}
    login(client)
    assert (
        client.post(
            "/admin/entries/1/approve", data={"csrf_token": csrf_of(client, "/")}, follow_redirects=False
        ).status_code
        == 303
    )
    entry = client.get("/api/entries/1").json()
    assert entry["method"] == "pg method"
    assert entry["scores"]["all"]["f1"] == pytest.approx(expected_f1(sample_dataset, preds), abs=1e-12)
    # the uploaded bytes are stored in the database, byte for byte
    from sqlalchemy import select

    from h2hmem.leaderboard._db import EntryFile

    with open_database(pg_url)() as db:
        stored = {f.split: f.content for f in db.scalars(select(EntryFile))}
    assert stored == {"dyadic": files[0].read_bytes(), "multi-party": files[1].read_bytes()}
    # the session secret was generated once and kept in the database: a second app accepts the cookie
    client2 = TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=pg_url)), cookies=client.cookies)
    assert "Review queue" in client2.get("/").text


def test_missing_columns_are_added_on_postgres(pg_url, tmp_path, sample_root, files):
    """A table of an older version (columns dropped here) is completed at start-up; sessions work after it."""
    from sqlalchemy import inspect, text

    from h2hmem.leaderboard._db import make_engine

    engine = make_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE lb_admin_sessions"))
        conn.execute(
            text(
                "ALTER TABLE lb_entries DROP COLUMN email, DROP COLUMN receipt_hash, DROP COLUMN content_hash, "
                "DROP COLUMN duplicate_of, DROP COLUMN score_status"
            )
        )
    engine.dispose()
    engine = make_engine(pg_url)
    cols = {c["name"] for c in inspect(engine).get_columns("lb_entries")}
    assert {"email", "receipt_hash", "content_hash", "duplicate_of", "score_status"} <= cols
    engine.dispose()
    with open_database(pg_url)() as db:
        create_admin(db, "admin", "correct horse battery")
    client = TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=pg_url)))
    upload(client, files)
    upload(client, files)
    assert login(client).status_code == 303
    assert [e["duplicate_of"] for e in client.get("/api/admin/entries").json()["entries"]] == [1, None]
    client.post("/admin/logout", data={"csrf_token": csrf_of(client, "/admin")})
    assert client.get("/api/admin/entries").status_code == 401
