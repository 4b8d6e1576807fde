"""Headless Chromium (Debian's `chromium` and `chromium-driver`, installed by `make test`) driven by Selenium.

The driver is named by path, so Selenium never tries to download one. Screenshots go to
`build/screenshots/` for a person to look at after a run.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
T = TypeVar("T")


def _find(*names: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError(f"none of {names} is installed: `make test` installs chromium and chromium-driver")


def start_browser(width: int = 1280, height: int = 1600) -> WebDriver:
    """A headless Chromium under Selenium (quit it when done)."""
    options = webdriver.ChromeOptions()
    options.binary_location = _find("chromium", "chromium-browser")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(_find("chromedriver")), options=options)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()


def until(driver: WebDriver, condition: Callable[[WebDriver], T], timeout: float, what: str) -> T:
    """Wait for a condition on the page (checked as the DOM changes), failing with `what`.

    Live pages swap their content in as blocks arrive: an element read while it is replaced is read again."""
    wait = WebDriverWait(driver, timeout, poll_frequency=0.2, ignored_exceptions=(StaleElementReferenceException,))
    result: Any = wait.until(condition, message=f"waiting for {what}")
    return result


def as_phone(driver: WebDriver, on: bool = True) -> None:
    """Emulate a phone's screen (390 x 844 CSS pixels, touch); a headless window cannot be narrower than 500."""
    if on:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    else:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def screenshot(driver: WebDriver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
