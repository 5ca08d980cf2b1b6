"""The request-body limit holds while the body streams in, whatever the transfer encoding: 413
with a clear page, nothing stored, no traceback (TestClient here; a real uvicorn server and a
raw chunked socket in :func:`test_chunked_upload_to_a_real_server`)."""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import time

import pytest
from lb_helpers import csrf_of, make_client
from sqlalchemy import func, select

from h2hmem.leaderboard._app import body_limit
from h2hmem.leaderboard._db import ClientEvent, Entry, EntryFile

MAX_FILE = 50_000


def _counts(app) -> tuple[int, int, int]:
    with app.state.sessions() as db:
        return tuple(db.scalar(select(func.count()).select_from(t)) for t in (Entry, EntryFile, ClientEvent))


def _multipart(csrf: str, size: int, boundary: str = "b0undary") -> tuple[bytes, str]:
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n{csrf}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="method"\r\n\r\nBig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file_dyadic"; filename="prediction_dyadic.json"\r\n'
        "Content-Type: application/json\r\n\r\n"
    ).encode()
    return head + b"x" * size + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _tmp_listing() -> set[str]:
    return set(os.listdir(tempfile.gettempdir()))


def test_chunked_upload_over_the_limit_is_413(tmp_path, sample_root, caplog):
    client = make_client(tmp_path, sample_root, max_file_bytes=MAX_FILE)
    limit = body_limit(client.app.state.settings)
    body, ctype = _multipart(csrf_of(client), limit + 10_000)
    before, tmp_before = _counts(client.app), _tmp_listing()

    def chunks():  # no length known up front: httpx sends Transfer-Encoding: chunked
        for i in range(0, len(body), 16_384):
            yield body[i : i + 16_384]

    with caplog.at_level(logging.DEBUG):
        r = client.post("/submit", content=chunks(), headers={"Content-Type": ctype})
    assert r.status_code == 413
    assert "The upload is too large: requests are limited to 0.362 MB in all. Nothing was stored" in r.text
    assert "<title>Error 413" in r.text and r.headers["content-security-policy"].startswith("default-src")
    assert _counts(client.app) == before and _tmp_listing() <= tmp_before
    assert not [rec for rec in caplog.records if rec.exc_info], "an exception was logged"
    r = client.post("/api/entries", content=b"x" * (limit + 1))  # declared length, an API path: JSON
    assert r.status_code == 413 and r.json()["detail"].startswith("The upload is too large")
    # just under the limit passes the middleware (then the per-file limit answers, on the form page)
    body, ctype = _multipart(csrf_of(client), MAX_FILE + 1)
    r = client.post("/submit", content=iter([body]), headers={"Content-Type": ctype})
    assert r.status_code == 413 and "is larger than the limit of 50 kB per file" in r.text


def test_head_is_served_like_get(tmp_path, sample_root):
    client = make_client(tmp_path, sample_root)
    for path in ("/", "/submit", "/admin/login", "/api/entries", "/leaderboard.csv"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"], path
    assert client.head("/entries/99").status_code == 404
    assert client.head("/admin", follow_redirects=False).status_code == 303


@pytest.fixture
def live_server(tmp_path, sample_root):
    """uvicorn in a thread, logging through the root logger (so caplog sees every record)."""
    uvicorn = pytest.importorskip("uvicorn")
    from h2hmem.leaderboard import LeaderboardSettings, create_app

    app = create_app(
        LeaderboardSettings(
            data_root=sample_root, db_url=f"sqlite:///{tmp_path / 'lb.db'}", secret="t", max_file_bytes=MAX_FILE
        )
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline and t.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    yield app, port
    srv.should_exit = True
    t.join(timeout=10)


def test_chunked_upload_to_a_real_server(live_server, caplog):
    import httpx

    app, port = live_server
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base) as c:
        page = c.get("/submit")
        csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        cookie = c.cookies["h2hmem_session"]
    body, ctype = _multipart(csrf, body_limit(app.state.settings) + 50_000)
    before, tmp_before = _counts(app), _tmp_listing()
    caplog.set_level(logging.INFO)
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(
            (
                f"POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                f"Cookie: h2hmem_session={cookie}\r\nTransfer-Encoding: chunked\r\n\r\n"
            ).encode()
        )

        def send_body():
            try:
                for i in range(0, len(body), 8192):
                    part = body[i : i + 8192]
                    sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                sock.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server may close the connection once it has answered

        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except OSError:
            pass
        sender.join(10)
    head, _, page = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), head[:200]
    assert b"The upload is too large" in page
    time.sleep(0.3)  # let the server finish logging the request
    assert _counts(app) == before and _tmp_listing() <= tmp_before
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.exc_info] and "Traceback" not in text, text
