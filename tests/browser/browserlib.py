"""What the browser tests share: paths, Chromium, the notebooks under test (imported by conftest and tests)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import series

ROOT = series.ROOT
# BROWSER_TEST_NOTEBOOKS=dir: develop the suite on scratch notebooks
NOTEBOOKS = Path(os.environ.get("BROWSER_TEST_NOTEBOOKS", series.notebooks()))
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"]
VIEWPORT = {"width": 1366, "height": 1000}
SITE_CHAPTERS = ["00", "02"]   # the small site the site tests build once (conftest's small_site): every kind of page


EXTERNAL = re.compile(r"^https?://(?!127\.0\.0\.1[:/]|localhost[:/])")
EMPTY_SVG = "<svg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/>"


def new_page(browser):
    """A page in a fresh context whose requests to other hosts get an empty image: the chapters' Colab and
    Binder badges load their pictures from the web, which this machine (and CI) cannot reach."""
    context = browser.new_context(viewport=VIEWPORT)
    context.route(EXTERNAL, lambda route: route.fulfill(status=200, content_type="image/svg+xml", body=EMPTY_SVG))
    return context, context.new_page()


class OfflinePage:
    """A page opened from disk with every request but file:// refused: what it asked for, loaded, and logged."""

    def __init__(self, context) -> None:
        self.refused: list[str] = []   # requests refused (anything but file://)
        self.loaded: list[str] = []    # file:// requests, let through
        self.errors: list[str] = []    # uncaught script errors and console errors
        context.route(re.compile(r"^[a-z][a-z0-9+.-]*:"), self._route)
        self.page = context.new_page()
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)

    def _route(self, route) -> None:
        if route.request.url.startswith("file:"):
            self.loaded.append(route.request.url)
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort()


@contextlib.contextmanager
def offline_page(browser, viewport: dict[str, int]) -> Iterator[OfflinePage]:
    """An OfflinePage in a fresh context of `viewport`, closed afterwards."""
    context = browser.new_context(viewport=viewport)
    try:
        yield OfflinePage(context)
    finally:
        context.close()


@contextlib.contextmanager
def chromium_with_fonts(playwright_driver, fontconfig: Path) -> Iterator[object]:
    """Headless Debian Chromium that finds its fonts through the fontconfig file `fontconfig`, closed at exit."""
    env = dict(os.environ, FONTCONFIG_FILE=str(fontconfig))
    env.pop("FONTCONFIG_PATH", None)
    chromium = playwright_driver.chromium.launch(executable_path=str(require_chromium()), headless=True,
                                                 args=CHROMIUM_FLAGS, env=env)
    try:
        yield chromium
    finally:
        chromium.close()


def chapter_notebooks() -> list[Path]:
    """Every notebook the suite checks, in order (00 included)."""
    return series.chapters_in(NOTEBOOKS)


def require_chromium() -> Path:
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    reason = f"Chromium not found at {CHROMIUM}: install it with `apt-get install -y chromium`"
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI=true: the browser tests must run)")
    pytest.skip(reason)
