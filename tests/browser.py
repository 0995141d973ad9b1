"""Debian's Chromium driven by Playwright, for the tests of the services' pages.

No Playwright-managed browser download: the system's /usr/bin/chromium (`.ci/run`
installs it). Tests import `requires_chromium` (a skip marker) and `new_page`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Page, async_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

requires_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"no {CHROMIUM}: apt-get install chromium (.ci/run does) to run the browser tests",
)


@contextlib.asynccontextmanager
async def new_page() -> AsyncIterator[Page]:
    """A fresh headless Chromium with one 1280×1000 page (15 s default timeout)."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(15_000)
            yield page
        finally:
            await browser.close()
