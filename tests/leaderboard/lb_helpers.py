"""Helpers shared by the leaderboard tests (imported by name: tests have no packages)."""

from __future__ import annotations

import re
from pathlib import Path

from h2hmem.data import Dataset, Question
from h2hmem.records import Prediction


def make_prediction(q: Question, answer: str | None, error: str | None = None) -> Prediction:
    return Prediction(
        question_id=q.id,
        split=q.split,
        dialogue=q.dialogue,
        session=q.session,
        task_type=q.task_type.abbr,
        main_category=q.main_category.value,
        difficulty=q.difficulty,
        question=q.text,
        question_images=[i.key for i in q.images],
        gold=q.gold,
        answer=answer,
        error=error,
        method="test",
    )


def mixed_predictions(dataset: Dataset) -> list[Prediction]:
    """Every third question answered with the gold, one in seven failed, the rest a fixed wrong answer."""
    out = []
    for n, q in enumerate(dataset.questions):
        if n % 7 == 6:
            out.append(make_prediction(q, None, error="TimeoutError: model did not answer"))
        elif n % 3 == 0:
            out.append(make_prediction(q, q.gold))
        else:
            out.append(make_prediction(q, "The blue ceramic teapot from the market."))
    return out


def write_run(run_dir: Path, preds: list[Prediction]) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "predictions.jsonl", "w", encoding="utf-8") as f:
        for p in preds:
            f.write(p.model_dump_json() + "\n")
    return run_dir


def expected_f1(dataset: Dataset, preds: list[Prediction]) -> float:
    """Micro-average F1 over every question, computed straight from :func:`h2hmem.metrics.lexical_scores`
    (a failed answer scores 0, spec/metrics.md §3)."""
    from h2hmem.metrics import lexical_scores

    by_id = {p.question_id: p for p in preds}
    total = 0.0
    for q in dataset.questions:
        p = by_id[q.id]
        total += 0.0 if p.failed or not p.answer else lexical_scores(p.answer, q.gold).f1
    return total / len(dataset.questions)


ADMIN_PW = "correct horse battery"


def make_client(tmp_path: Path, sample_root: Path, db_url: str | None = None, **kw):
    """A TestClient of a fresh service on a SQLite file in ``tmp_path`` with administrator ``admin``."""
    from fastapi.testclient import TestClient

    from h2hmem.leaderboard import LeaderboardSettings, create_admin, create_app, open_database

    db_url = db_url or f"sqlite:///{tmp_path / 'lb.db'}"
    with open_database(db_url)() as db:
        create_admin(db, "admin", ADMIN_PW)
    return TestClient(create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, secret="test-secret", **kw)))


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(client, path: str = "/submit") -> str:
    """The CSRF token of the client's session, read from a page's form."""
    m = CSRF.search(client.get(path).text)
    assert m, f"no CSRF token on {path}"
    return m.group(1)


STATUS_URL = re.compile(r'id="status-url" href="([^"]+)"')


def upload(
    client,
    files: list[Path] | tuple[bytes, bytes],
    method: str = "My method",
    organisation: str = "Lab",
    description: str = "",
    csrf: str | None = None,
    email: str = "",
    wait: bool = True,
):
    """POST /submit with the two files (paths from export_submission, or raw bytes); with ``wait``,
    returns once the background scorer has scored what was queued."""
    dy, mp = (f.read_bytes() for f in files) if isinstance(files[0], Path) else files
    data = {"method": method, "organisation": organisation, "description": description, "email": email}
    data["csrf_token"] = csrf if csrf is not None else csrf_of(client)
    r = client.post(
        "/submit",
        data=data,
        files={
            "file_dyadic": ("prediction_dyadic.json", dy, "application/json"),
            "file_multiparty": ("prediction_multiparty.json", mp, "application/json"),
        },
    )
    if wait:
        assert client.app.state.scorer.wait_idle(120), "scoring did not finish within 120 s"
    return r


def status_path(receipt_html: str) -> str:
    """The path of the status page linked from a receipt page."""
    m = STATUS_URL.search(receipt_html)
    assert m, "no status link on the receipt"
    return "/" + m.group(1).split("/", 3)[3]


def login(client, username: str = "admin", password: str = "correct horse battery"):
    return client.post(
        "/admin/login",
        data={"username": username, "password": password, "csrf_token": csrf_of(client, "/admin/login")},
        follow_redirects=False,
    )
