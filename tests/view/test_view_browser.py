"""The viewer in a real browser (Debian /usr/bin/chromium driven by PyPI playwright) on two real
runs of the sample: filter to one task type, open a question, see its prompt text and the
gold-session turns marked, compare the two runs. No page error, no dialog, nothing the data's HTML
could run. Screenshots go to ``artifacts/screenshots/`` (git-ignored; CI keeps them as artifacts).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from view_helpers import QID

from h2hmem.testing import CHROMIUM, CHROMIUM_ARGS, serve_app
from h2hmem.view import create_viewer_app

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture
def server(sample_runs):
    pytest.importorskip("uvicorn")
    with serve_app(create_viewer_app(sample_runs.runs)) as url:
        yield url


@pytest.fixture
def page():
    sync_api = pytest.importorskip("playwright.sync_api", reason="PyPI playwright is not installed")
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian package chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1500, "height": 1000})
        pg.set_default_timeout(30_000)
        yield pg
        browser.close()


def test_filter_open_question_and_compare_in_a_browser(server, page, sample_runs):
    errors: list[str] = []
    dialogs: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(f"{m.text} {m.location}") if m.type == "error" else None)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    rag, full = (d.name for d in sample_runs.runs)

    page.goto(server + "/")
    assert page.locator("table#runs tbody tr").count() == 2
    page.get_by_role("link", name=rag, exact=True).first.click()
    page.wait_for_selector("table#questions")
    assert page.locator("table#questions tbody tr").count() == 289

    # filter to one task type
    page.select_option("select[name=task_type]", "UPR")
    page.click("#apply")
    page.wait_for_url("**task_type=UPR**")
    rows = page.locator("table#questions tbody tr")
    assert rows.count() == 46 and page.inner_text("#count").startswith("46 questions")
    types = page.eval_on_selector_all("table#questions tbody tr", "els => els.map(e => e.dataset.taskType)")
    assert set(types) == {"UPR"}
    page.screenshot(path=str(SCREENSHOTS / "questions-upr.png"), full_page=False)

    # open a question: prompt text, gold-session turns marked
    page.locator(f"a.qlink[href$='/q/{QID}']").click()
    page.wait_for_selector("#question")
    assert page.inner_text("#question") == sample_runs.question_text
    prompt = page.locator("#calls details.call").first.locator(".prompt").inner_text()
    # "Memory:" heads the shared (harmonized) prompt; the official one of the default preset paper heads its chunks so
    assert f"Question: {sample_runs.question_text}" in prompt and (
        "Memory:" in prompt or "Retrieved relevant conversation chunks (may be incomplete):" in prompt
    )
    gold = page.locator("#evidence .turn.gold")
    assert gold.count() >= 1
    assert all(s == "session1" for s in gold.evaluate_all("els => els.map(e => e.dataset.session)"))
    assert page.locator("#evidence .turn:not(.gold)").count() >= 1  # other sessions are not marked
    assert "gold session" in gold.first.inner_text()
    # the turn's HTML is shown as text: no element, no script ran
    assert page.locator("#injected").count() == 0
    assert '<b id="injected">bold</b>' in page.locator("#evidence").inner_text()
    assert page.title() != "pwned"
    page.screenshot(path=str(SCREENSHOTS / "question.png"), full_page=True)

    # the same question in both runs, side by side
    page.click("#compare")
    page.wait_for_selector("#compare-grid")
    cols = page.locator("#compare-grid section.col")
    assert cols.count() == 2
    assert [cols.nth(i).get_attribute("data-run") for i in range(2)] == [rag, full]
    assert page.locator(f"#compare-grid section.col[data-run='{full}'] details.session-unit.gold").count() == 1
    page.screenshot(path=str(SCREENSHOTS / "compare.png"), full_page=False)

    assert errors == [] and dialogs == [] and page.title() != "pwned", errors
    assert [u for u in requests if not u.startswith(server)] == []  # nothing leaves 127.0.0.1
    for name in ("questions-upr.png", "question.png", "compare.png"):
        assert (SCREENSHOTS / name).stat().st_size > 20_000
    print(f"screenshots: {SCREENSHOTS}")
