"""Headless Chromium for the tests of the pages (test_web.py, test_explore.py): the driver, and
waiting for what a page draws. Screenshots go to build/screenshots (the test artifacts)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from sparqlrag.server.pages import D3_LOCAL, YASGUI_LOCAL
from tests.conftest import ROOT

if TYPE_CHECKING:  # selenium is imported where a browser test runs
    from selenium.webdriver.remote.webdriver import WebDriver

SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def chromium() -> Iterator[WebDriver]:
    """The driver conftest's `browser` fixture yields (skipped where Chromium is not installed)."""
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "headless Chromium is not installed (`make install` installs chromium and chromium-driver as root on "
            "Debian)"
        )
    assert (YASGUI_LOCAL / "yasgui.min.js").is_file() and D3_LOCAL.is_file(), (
        "YASGUI's or d3's files are missing: run `make install` (the tests have no CDN)"
    )
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--window-size=1300,1000",
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, to see what the CSP blocks
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def wait_for(driver: WebDriver, css: str, count: int = 1, timeout: float = 60) -> list:
    """The elements matching `css` once there are at least `count` of them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def enough(d: object) -> list | None:
        found = d.find_elements(By.CSS_SELECTOR, css)  # type: ignore[attr-defined]
        return found if len(found) >= count else None

    return WebDriverWait(driver, timeout).until(enough)  # type: ignore[arg-type]


def fresh(driver: WebDriver, url: str) -> None:
    """Opens `url` with no state left by an earlier test: YASGUI keeps its tabs, and their
    queries and results, in the origin's localStorage."""
    driver.get(url)
    driver.execute_script("window.localStorage.clear(); window.sessionStorage.clear();")
    driver.get(url)
