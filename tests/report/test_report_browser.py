"""The HTML report in a real browser (Debian /usr/bin/chromium driven by PyPI playwright): no console
or page errors, no request leaves the file, every figure decodes, the <script> answer is shown as
text. A full-page screenshot is saved under tmp_path (its path is printed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_fakes import BLANK_METHOD, SCRIPT, make_runs

from h2hmem.report import build_report
from h2hmem.testing import CHROMIUM, CHROMIUM_ARGS


def test_html_report_renders_in_chromium(tmp_path, sample_root):
    sync_api = pytest.importorskip("playwright.sync_api", reason="PyPI playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (install the Debian package chromium)")
    a, b, _ = make_runs(tmp_path, sample_root)
    paths = build_report([a, b], tmp_path / "report", n_boot=200)

    errors: list[str] = []
    requests: list[str] = []
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(paths.html.resolve().as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => ({w: e.naturalWidth, h: e.naturalHeight, done: e.complete}))"
            )
            comparison = page.inner_text("#t-comparison")
            worst = page.inner_text("#worst")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    print(f"\nreport screenshot: {shot}")
    assert errors == [] and dialogs == []
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    # five figures + the paired differences of the two runs
    assert len(images) == 6 and all(i["done"] and i["w"] > 600 and i["h"] > 200 for i in images)
    assert "naive-rag" in comparison and BLANK_METHOD in comparison
    assert "A-Mem [published]" in comparison and "NGM [published]" in comparison
    assert SCRIPT in worst  # shown as text, never run
    assert shot.stat().st_size > 50_000
