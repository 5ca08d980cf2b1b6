"""End to end in a real browser: upload → receipt → status link through each state → admin
approves → ranked with the metrics package's F1; sessions refused after logout and after a
password reset; the public page at 1300 px and 400 px with nothing cut off.

Chromium is the Debian one (/usr/bin/chromium) driven by PyPI playwright; the server is uvicorn in a
thread on a free port of 127.0.0.1. Screenshots go to tests/leaderboard/artifacts/screenshots/
(ignored by git; CI keeps them as artifacts).
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest
from lb_helpers import expected_f1, mixed_predictions, upload

from h2hmem.leaderboard import LeaderboardSettings, create_admin, create_app, open_database, score_submission
from h2hmem.testing import CHROMIUM, CHROMIUM_ARGS, serve_app

ARTIFACTS = Path(__file__).parent / "artifacts" / "screenshots"
PW = "correct horse battery"

OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > width + 0.5 || r.left < -0.5))
      out.push(`${el.tagName.toLowerCase()}.${el.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, width, outside: out};
}"""
"""Every element that sticks out of the viewport (or is cut off by a scrolling box), and the page widths."""


class Gate:
    """A scorer that waits while the gate is closed (open by default)."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()

    def __call__(self, report, dataset):
        assert self.open.wait(60)
        return score_submission(report, dataset)


@pytest.fixture
def server(tmp_path, sample_root):
    pytest.importorskip("uvicorn")
    db_url = f"sqlite:///{tmp_path / 'lb.db'}"
    with open_database(db_url)() as db:
        create_admin(db, "reviewer", PW)
    gate = Gate()
    app = create_app(LeaderboardSettings(data_root=sample_root, db_url=db_url, secret="browser-test", scorer=gate))
    app.state.gate = gate
    with serve_app(app, lifespan="on") as url:
        yield url, app
        gate.open.set()


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="PyPI playwright is not installed")
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _state_on(page, url: str, want: str) -> None:
    """Load ``url`` until its state is ``want`` (the page itself reloads every 5 s while pending)."""
    deadline = time.monotonic() + 30
    while True:
        page.goto(url)
        got = page.get_attribute("#state", "data-state")
        if got == want:
            return
        assert time.monotonic() < deadline, f"state stayed {got!r}, wanted {want!r}"
        time.sleep(0.1)


def _upload_in_browser(page, base: str, method: str, files: list[Path]) -> str:
    page.goto(base + "/submit")
    page.fill("input[name=method]", method)
    page.fill("input[name=organisation]", "Playwright Lab")
    page.fill("input[name=email]", "submitter@example.org")
    page.fill("textarea[name=description]", "Answers = gold for every third question.")
    page.set_input_files("input[name=file_dyadic]", str(files[0]))
    page.set_input_files("input[name=file_multiparty]", str(files[1]))
    page.click("#upload")
    page.wait_for_selector("#receipt")
    return page.get_attribute("#status-url", "href")


def _log_in(page, base: str) -> None:
    page.goto(base + "/admin/login")
    page.fill("input[name=username]", "reviewer")
    page.fill("input[name=password]", PW)
    page.click("#login")
    page.wait_for_url(base + "/admin")


def _check_fits(page, width: int, name: str) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.reload()
    m = page.evaluate(OVERFLOW_JS)
    shot = ARTIFACTS / name
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot} ({m['scrollWidth']} px of {m['innerWidth']})")
    assert shot.stat().st_size > 10_000
    assert m["scrollWidth"] <= m["innerWidth"] and m["scrollWidth"] <= m["width"], m
    assert m["outside"] == [], f"{width} px: elements outside the viewport: {m['outside'][:10]}"


def test_upload_receipt_status_review_and_rank(server, browser, files, sample_dataset):
    base, app = server
    want = expected_f1(sample_dataset, mixed_predictions(sample_dataset))
    method = "Browser RAG <b>v1</b>"
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.set_default_timeout(30_000)

    app.state.gate.open.clear()  # hold scoring so every state can be seen
    first = _upload_in_browser(page, base, method, files)
    assert first.startswith(base + "/status/")
    assert "pending review" in page.inner_text("#pending") and method in page.inner_text("#pending")
    _state_on(page, first, "scoring")
    second = _upload_in_browser(page, base, "Same files again", files)
    _state_on(page, second, "queued")
    assert page.inner_text("#no-scores") == "Scores appear here once the entry is scored."
    assert page.locator("#duplicate").count() == 1
    app.state.gate.open.set()
    _state_on(page, first, "scored")
    assert page.inner_text("#scores tr[data-group=all] td[data-metric=f1]") == f"{want:.3f}"
    _state_on(page, second, "scored")

    page.goto(base + "/")
    assert method not in page.content() and "No approved entries yet." in page.inner_text("main")

    _log_in(page, base)
    row = page.locator("table.queue tr", has_text="Same files again")
    assert "duplicate of #1" in row.locator("td.duplicate").inner_text()
    page.get_by_role("link", name=method).click()
    assert page.inner_text("#status") == "pending" and page.inner_text("#email") == "submitter@example.org"
    page.click("#approve")
    page.wait_for_selector("#status:text('approved')")
    page.goto(base + "/admin/entries/2")
    page.fill("form[action$='/reject'] input[name=reason]", "A copy of entry #1.")
    page.click("#reject")
    page.wait_for_selector("#status:text('rejected')")

    _state_on(page, first, "approved")
    _state_on(page, second, "rejected")
    assert page.inner_text("#reason") == "A copy of entry #1."

    page.goto(base + "/")
    row = page.locator("table#ranking tbody tr", has_text=method)
    assert row.count() == 1 and "Same files again" not in page.content()
    assert row.locator("td[data-col=all]").inner_text() == f"{want:.3f}"
    assert page.locator("table#ranking b").count() == 0  # the <b> in the name was escaped, not rendered
    assert "submitter@example.org" not in page.content()
    row.get_by_role("link", name=method).click()
    assert page.locator("#scores tr[data-group=all] td[data-metric=f1]").inner_text() == f"{want:.3f}"
    assert page.locator("svg.chart rect").count() >= 9


def test_public_page_fits_1300_and_400_px(server, browser, files):
    base, app = server
    with httpx.Client(base_url=base, timeout=30) as c:  # three entries, one a duplicate, one a long name
        for method in (
            "Retrieval-augmented memory with a rather long name for a method (v2, 2025)",
            "Full context",
            "Full context again",
        ):
            assert (
                upload(
                    c, files, method=method, organisation="A research laboratory with a long name", wait=False
                ).status_code
                == 200
            )
    assert app.state.scorer.wait_idle(60)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    _log_in(page, base)
    for i in (1, 2, 3):
        page.goto(f"{base}/admin/entries/{i}")
        page.click("#approve")
        page.wait_for_selector("#status:text('approved')")
    page.goto(base + "/")
    assert page.locator("table#ranking tbody tr").count() == 3 and page.locator(".dup").count() == 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _check_fits(page, 1300, "ranking-1300.png")
    _check_fits(page, 400, "ranking-400.png")
    assert page.locator("table#ranking thead").is_hidden()  # cards on a narrow screen
    assert page.locator("td[data-col=all]").first.is_visible()


def _admin_requests(app) -> list[tuple[str, str]]:
    out = []
    for path, methods in app.openapi()["paths"].items():
        if path.startswith(("/admin", "/api/admin")) and path not in ("/admin/login", "/admin/logout"):
            path = path.replace("{entry_id}", "1").replace("{session_id}", "1").replace("{username}", "reviewer")
            out += [(m.upper(), path) for m in methods]
    return out


def _refused_everywhere(context, base: str, app, csrf: str) -> None:
    """The context's cookie opens no admin route: pages redirect to the login page, API calls get 401."""
    page = context.new_page()
    page.goto(base + "/admin")
    assert page.url == base + "/admin/login"
    for method, path in _admin_requests(app):
        r = context.request.fetch(
            base + path,
            method=method,
            max_redirects=0,
            form={"csrf_token": csrf, "reason": "x"} if method == "POST" else None,
        )
        want = 401 if path.startswith("/api/") else 303
        assert r.status == want, (method, path, r.status)
        if want == 303:
            assert r.headers["location"] == "/admin/login", (method, path)


def test_old_cookies_are_refused_after_logout_and_password_reset(server, browser, files):
    base, app = server
    with httpx.Client(base_url=base, timeout=30) as c:
        upload(c, files, wait=False)
    assert app.state.scorer.wait_idle(60)
    ctx = browser.new_context()
    page = ctx.new_page()
    _log_in(page, base)
    stolen = ctx.cookies()
    csrf = page.get_attribute("input[name=csrf_token]", "value")
    page.click("text=Log out (reviewer)")
    page.wait_for_url(base + "/")
    thief = browser.new_context()
    thief.add_cookies(stolen)
    _refused_everywhere(thief, base, app, csrf)
    with app.state.sessions() as db:
        from h2hmem.leaderboard._db import Entry

        assert db.get(Entry, 1).status == "pending"

    laptop, phone = browser.new_context(), browser.new_context()
    tokens = []
    for ctx in (laptop, phone):
        p = ctx.new_page()
        _log_in(p, base)
        tokens.append(p.get_attribute("input[name=csrf_token]", "value"))
    with app.state.sessions() as db:  # `h2hmem leaderboard create-admin` on an existing name
        create_admin(db, "reviewer", "a new long password")
    for ctx, tok in zip((laptop, phone), tokens):
        _refused_everywhere(ctx, base, app, tok)
