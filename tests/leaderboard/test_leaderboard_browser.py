"""End to end in a real browser: upload → pending → admin approves → ranked with the metrics package's F1.

Chromium is the Debian one (/usr/bin/chromium) driven by PyPI playwright; the server is uvicorn in a
thread on a free port of 127.0.0.1. A screenshot of the final ranking is saved to
tests/leaderboard/artifacts/ (ignored by git).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from h2hmem.leaderboard import LeaderboardSettings, create_admin, create_app, export_submission, open_database
from h2hmem.testing import CHROMIUM, CHROMIUM_ARGS, serve_app

from lb_helpers import expected_f1, mixed_predictions, write_run

ARTIFACTS = Path(__file__).parent / "artifacts"


@pytest.fixture
def server(tmp_path, sample_root):
    pytest.importorskip("uvicorn")
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with open_database(db_url)() as db:
        create_admin(db, "reviewer", "correct horse battery")
    app = create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, secret="browser-test"))
    with serve_app(app, lifespan="on") as url:
        yield url


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="PyPI playwright is not installed")
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_submit_review_and_rank_in_a_browser(server, browser, tmp_path, sample_dataset):
    preds = mixed_predictions(sample_dataset)
    files = export_submission(write_run(tmp_path / "run", preds))
    want = expected_f1(sample_dataset, preds)
    method = "Browser RAG <b>v1</b>"
    page = browser.new_page(viewport={"width": 1500, "height": 900})
    page.set_default_timeout(30_000)

    page.goto(server + "/submit")
    page.fill("input[name=method]", method)
    page.fill("input[name=organisation]", "Playwright Lab")
    page.fill("textarea[name=description]", "Answers = gold for every third question.")
    page.set_input_files("input[name=file_dyadic]", str(files[0]))
    page.set_input_files("input[name=file_multiparty]", str(files[1]))
    page.click("#upload")
    page.wait_for_selector("#pending")
    assert "pending review" in page.inner_text("#pending") and method in page.inner_text("#pending")

    page.goto(server + "/")
    assert method not in page.content() and "No approved entries yet." in page.inner_text("main")

    page.goto(server + "/admin/login")
    page.fill("input[name=username]", "reviewer")
    page.fill("input[name=password]", "correct horse battery")
    page.click("#login")
    page.wait_for_url(server + "/admin")
    page.get_by_role("link", name=method).click()
    assert page.inner_text("#status") == "pending"
    page.click("#approve")
    page.wait_for_selector("#status:text('approved')")

    page.goto(server + "/")
    row = page.locator("table#ranking tbody tr", has_text=method)
    assert row.count() == 1
    assert row.locator("td[data-col=all]").inner_text() == f"{want * 100:.1f}"
    assert page.locator("table#ranking b").count() == 0  # the <b> in the name was escaped, not rendered
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "ranking.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000

    # the entry page shows the same overall F1 with its per-sub-type chart
    row.get_by_role("link", name=method).click()
    assert page.locator("#scores tr[data-group=all] td[data-metric=f1]").inner_text() == f"{want * 100:.1f}"
    assert page.locator("svg.chart rect").count() >= 9
    page.screenshot(path=str(ARTIFACTS / "entry.png"), full_page=True)
