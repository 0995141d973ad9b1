"""Debian's Chromium driven by Playwright, for the tests of the services' pages.

No Playwright-managed browser download: the system's /usr/bin/chromium (`.ci/run`
installs it). Tests import `requires_chromium` (a skip marker), `new_page` and
`console_errors` and `shot`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import ConsoleMessage, Page, async_playwright

from ludo_cli.bench.chromium import CHROMIUM, CHROMIUM_ARGS

requires_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"no {CHROMIUM}: apt-get install chromium (.ci/run does) to run the browser tests",
)


@contextlib.asynccontextmanager
async def new_page(locale: str | None = None) -> AsyncIterator[Page]:
    """A fresh headless Chromium with one 1280×1000 page (15 s default timeout), in the
    browser language `locale` (e.g. "ja-JP") when given."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            if locale is None:
                page = await browser.new_page(viewport={"width": 1280, "height": 1000})
            else:
                context = await browser.new_context(
                    viewport={"width": 1280, "height": 1000}, locale=locale
                )
                page = await context.new_page()
            page.set_default_timeout(15_000)
            yield page
        finally:
            await browser.close()


async def shot(page: Page, name: str) -> None:
    """A full-page screenshot saved as name in LUDO_SCREENSHOTS, when it is set (the
    pages' screenshots in docs/ are taken this way:
    `LUDO_SCREENSHOTS=docs/screenshots python3 -m pytest tests/service`); otherwise none."""
    folder = os.environ.get("LUDO_SCREENSHOTS")
    if folder:
        await page.screenshot(path=str(Path(folder) / name), full_page=True)


def console_errors(page: Page) -> list[str]:
    """A list that fills with the errors `page` logs from now on: console errors (a CSP
    violation is one: "Refused to execute inline script …") and uncaught exceptions."""
    errors: list[str] = []

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            errors.append(msg.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors
