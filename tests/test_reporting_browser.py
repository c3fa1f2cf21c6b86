"""The HTML report as a person sees it: headless Chromium loads it with no console error, no
network request and no script run, and a screenshot is saved.

Uses Debian's ``chromium`` (``make test`` installs it where ``apt-get`` exists) driven by the
``playwright`` package; skips, saying why, only where either cannot be had. Set
``RLCOMPARE_SCREENSHOT_DIR`` to keep the screenshots.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rlcompare.reporting.formats import write_report
from rlcompare.reporting.model import build_report
from rlcompare.scoring.engine import ScoringOptions
from rlcompare.scoring.profiles import get_profile
from tests.reporting_support import report_plugins, synthetic_store

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _chromium() -> str:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("Debian's chromium is not installed (make test installs it with apt-get where it can)")


def _html(tmp_path: Path, hostile: bool) -> Path:
    store = synthetic_store(tmp_path / "store.db", hostile=hostile)
    plugins = report_plugins()
    report = build_report(store, plugins.reporting_catalogue(), get_profile("balanced"), ScoringOptions(reps=200))
    [path] = write_report(report, tmp_path / "out", [plugins.report_formats["html"]])
    return path


@pytest.mark.parametrize("hostile", [False, True], ids=["report", "hostile-names"])
def test_html_report_loads_cleanly_in_chromium(tmp_path: Path, hostile: bool) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    executable = _chromium()
    page_path = _html(tmp_path, hostile)
    errors: list[str] = []
    requests: list[str] = []
    dialogs: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(page_path.as_uri(), wait_until="load")
            title = page.title()
            figures = page.locator("figure svg").count()
            heading = page.locator("h1").inner_text()
            shot = tmp_path / ("report-hostile.png" if hostile else "report.png")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert [url for url in requests if not url.startswith(("file:", "data:", "about:"))] == []
    assert heading == "rlcompare report" and title.startswith("rlcompare report")
    assert figures >= 5
    assert shot.stat().st_size > 50_000
    keep = os.environ.get("RLCOMPARE_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
