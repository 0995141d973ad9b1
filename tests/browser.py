"""Debian's Chromium driven by Playwright, for the tests of the services' pages.

No Playwright-managed browser download: the system's /usr/bin/chromium (`.ci/run`
installs it). Tests import `requires_chromium` (a skip marker), `new_page`,
`console_errors`, `shot` and `axe_violations` (axe-core, vendored in tests/vendor/).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Browser, BrowserContext, ConsoleMessage, Page, async_playwright

from ludo_cli.bench.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.paths import ROOT

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


LOOPBACK = ("127.0.0.1", "localhost")


@contextlib.asynccontextmanager
async def launched() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless, closed afterwards."""
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            await chromium.close()


@contextlib.asynccontextmanager
async def person(
    browser: Browser,
    locale: str = "en-GB",
    width: int = 1280,
    height: int = 900,
    touch: bool = False,
    motion: bool = False,
) -> AsyncIterator[tuple[Page, list[str]]]:
    """One person's browser (its own storage: its own guest), a page, and what went wrong
    on it: console errors, uncaught exceptions, and any request that left the machine
    (there must be none: no CDN, font or script from elsewhere). Motion is reduced (the
    pages honour it), so animations do not slow a whole match down, unless `motion`."""
    context: BrowserContext = await browser.new_context(
        viewport={"width": width, "height": height},
        locale=locale,
        reduced_motion="no-preference" if motion else "reduce",
        has_touch=touch,
        is_mobile=touch,
    )
    page = await context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    def on_console(msg: Any) -> None:
        # A socket cut on purpose (test_a_dropped_socket...) is logged by Chromium itself.
        if msg.type == "error" and not msg.text.startswith("WebSocket connection to"):
            errors.append(msg.text)

    def on_request(request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme not in ("data", "blob") and parts.hostname not in LOOPBACK:
            errors.append(f"external request: {request.url}")

    page.on("console", on_console)
    context.on("request", on_request)
    try:
        yield page, errors
    finally:
        await context.close()


async def shot(page: Page, name: str, *, full_page: bool = True) -> None:
    """A screenshot saved as name in LUDO_SCREENSHOTS, when it is set (the pages'
    screenshots in docs/ are taken this way:
    `LUDO_SCREENSHOTS=docs/screenshots python3 -m pytest tests/services`); otherwise none.
    The whole page, or with `full_page=False` the window as the player sees it (Chromium
    drops a phone's touch emulation while it shoots a whole page, so a phone's first
    screen is shot as the window)."""
    folder = os.environ.get("LUDO_SCREENSHOTS")
    if folder:
        await page.screenshot(path=str(Path(folder) / name), full_page=full_page)


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


AXE = ROOT / "tests" / "vendor" / "axe_core" / "axe.min.js"
# The impacts an accessibility test refuses (axe's scale: minor, moderate, serious, critical).
SERIOUS = ("serious", "critical")


async def axe_violations(page: Page, impacts: tuple[str, ...] = SERIOUS) -> list[str]:
    """axe-core's violations of `impacts` on the page as it is now, one line each (rule,
    impact, help, and the first elements it names); [] when there are none. axe is
    evaluated through the DevTools protocol, which the pages' CSP does not govern: the
    page itself never loads it."""
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(AXE.read_text("utf-8"))
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations
             .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                            nodes: v.nodes.slice(0, 4).map((n) => n.target.join(" ")) }))"""
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {', '.join(v['nodes'])}"
        for v in found
        if v["impact"] in impacts
    ]
