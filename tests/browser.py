"""Debian's Chromium driven by Playwright, for the tests of the services' pages.

No Playwright-managed browser download: the system's Chromium headless shell
(benchmarks/chromium.py; `.ci/run` installs it, and Debian's fonts-noto-cjk: Japanese pages
are measured in Japanese type).
Tests import `requires_chromium` (a skip marker), `new_page`, `launched`, `person`,
`console_errors`, `shot`, `axe_violations` (axe-core, vendored in tests/vendor/) and
`small_targets` (targets smaller than 44×44 CSS px).

One Chromium for a run of page tests, a fresh context for each test. Starting Playwright's
driver and Chromium costs about 1.7 s of CPU (0.7 s the driver, 1 s the browser) against
tens of milliseconds for a context, and some 140 tests are page tests. A context is a test's
own profile (cookies, storage, cache, locale, viewport, touch), so sharing the browser keeps
the tests apart; what each test opened is closed after it (`launched` closes the contexts
made in its block).

A Playwright object belongs to the event loop that started it, and the anyio plugin gives
each test a loop of its own, closed after it, unless something still holds the plugin's
runner. So `hold_loop` (tests/conftest.py, before a test's setup) takes a lease on the
runner for a `browser` test, and `release_loop` (after its teardown) gives it back, closing
the browser first, once the next test of the worker is not a page test: consecutive page
tests (tests/suite_plan.py sorts them together) run on one loop, with one driver and one
Chromium, launched when the first of them asks. Chosen over the alternatives because:

- a session-wide loop (a session-scoped async fixture) would run every later async test of
  the worker on the page tests' loop: a task one service test leaves behind, or an error it
  raises late, would land in an unrelated test; the lease ends with the page tests;
- one Chromium per worker reached per test with `connect_over_cdp` or `connect` still starts
  a driver per test (0.7 s of CPU, nearly half the cost), and a Chromium started by hand
  lacks the switches Playwright's launch gives it (no timer throttling in background pages).

Outside such a run (no lease held: a test not marked `browser`, or a script) `launched` and
`new_page` start a Chromium of their own, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from anyio.abc import TestRunner
from anyio.pytest_plugin import get_runner
from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Error,
    Page,
    Playwright,
    Route,
    async_playwright,
    expect,
)

from benchmarks.chromium import CHROMIUM, CHROMIUM_ARGS
from services.shared.pages import static_file
from tests.paths import ROOT

requires_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"no {CHROMIUM}: apt-get install chromium-headless-shell (.ci/run does) to run them",
)


class _Run:
    """The run of page tests in progress on this worker: the lease on the anyio runner that
    keeps its loop open, and the driver and Chromium started on that loop."""

    lease: contextlib.ExitStack | None = None
    runner: TestRunner | None = None
    loop: asyncio.AbstractEventLoop | None = None
    playwright: Playwright | None = None
    browser: Browser | None = None


def hold_loop(item: pytest.Item) -> None:
    """Before a `browser` test's setup: keep the anyio runner's loop open past the test
    (module docstring), unless a run of page tests already does."""
    if _Run.lease is None and item.get_closest_marker("browser") is not None:
        lease = contextlib.ExitStack()
        # The backend tests/databases.py's `anyio_backend` names for every async test.
        _Run.runner = runner = lease.enter_context(get_runner("asyncio", {}))
        _Run.loop = runner.run_fixture(_running_loop, {})
        _Run.lease = lease


def release_loop(nextitem: pytest.Item | None) -> None:
    """After a test's teardown: when the next test is not a page test, close the run's
    Chromium and driver and let the loop close."""
    lease, runner = _Run.lease, _Run.runner
    if lease is None or runner is None:
        return
    if nextitem is not None and nextitem.get_closest_marker("browser") is not None:
        return
    try:
        runner.run_fixture(_stop, {})
    finally:
        _Run.lease = _Run.runner = _Run.loop = None
        lease.close()


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


async def _stop() -> None:
    browser, playwright = _Run.browser, _Run.playwright
    _Run.browser = _Run.playwright = None
    try:
        if browser is not None:
            with contextlib.suppress(Error):  # already gone if Chromium crashed
                await browser.close()
    finally:
        if playwright is not None:
            await playwright.stop()


async def _shared() -> Browser | None:
    """The run's Chromium (launched on first use, or again if it died), or None outside a
    run of page tests."""
    if _Run.loop is None or _Run.loop is not asyncio.get_running_loop():
        return None
    if _Run.playwright is None:
        _Run.playwright = await async_playwright().start()
    if _Run.browser is None or not _Run.browser.is_connected():
        _Run.browser = await _Run.playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
    return _Run.browser


@contextlib.asynccontextmanager
async def launched() -> AsyncIterator[Browser]:
    """Debian's Chromium, headless: the run's own (module docstring), whose contexts made
    in the block are closed after it, or else one of its own, closed afterwards."""
    shared = await _shared()
    if shared is None:
        async with async_playwright() as pw:
            chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield chromium
            finally:
                await chromium.close()
        return
    before = set(shared.contexts)
    try:
        yield shared
    finally:
        for context in list(shared.contexts):
            if context not in before:
                with contextlib.suppress(Error):  # a crashed browser has no context to close
                    await context.close()


@contextlib.asynccontextmanager
async def new_page(locale: str | None = None) -> AsyncIterator[Page]:
    """A page of 1280×1000 (15 s default timeout) in a fresh context of headless Chromium,
    in the browser language `locale` (e.g. "ja-JP") when given."""
    async with launched() as browser:
        context = await browser.new_context(viewport={"width": 1280, "height": 1000}, locale=locale)
        page = await context.new_page()
        page.set_default_timeout(15_000)
        yield page


LOOPBACK = ("127.0.0.1", "localhost")


# Answers a page asks for knowing they may not be there yet, and says so in words: a
# match's analysis (404 `not_analysed` until the ranking service has written it, 503
# without a ranking service). Chromium logs any such answer as a console error.
EXPECTED_MISSES = (("/api/ratings/analysis/", (404, 503)),)


def expected_miss(msg: ConsoleMessage) -> bool:
    """Whether a console error is Chromium's note of an answer in `EXPECTED_MISSES`."""
    url = str((msg.location or {}).get("url", ""))
    return any(
        part in url
        and any(
            msg.text.startswith(
                f"Failed to load resource: the server responded with a status of {status} "
            )
            for status in statuses
        )
        for part, statuses in EXPECTED_MISSES
    )


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
        cut = msg.text.startswith("WebSocket connection to")
        if msg.type == "error" and not cut and not expected_miss(msg):
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
        if msg.type == "error" and not expected_miss(msg):
            errors.append(msg.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


@contextlib.asynccontextmanager
async def page_served(url: str, html: str, csp: str) -> AsyncIterator[tuple[Page, list[str]]]:
    """A page of a test's own (`html` under its `csp`, from `pages.shell_html`) served at
    `url` by Playwright's router, with the front-end files under `url` + `static/` as the
    services serve them (`pages.static_file`), no service: the page, once its script set
    `body[data-ready=true]`, and the console errors it logs."""

    async def serve(route: Route) -> None:
        path = urlsplit(route.request.url).path
        if path.startswith("/static/"):
            found = static_file(path.removeprefix("/static/"))
            if found is None:
                await route.fulfill(status=404, body="")
                return
            body, kind, _etag = found
            await route.fulfill(status=200, body=body, headers={"Content-Type": kind})
            return
        await route.fulfill(
            status=200,
            body=html,
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp},
        )

    async with new_page() as page:
        errors = console_errors(page)
        await page.route(url + "**", serve)
        await page.goto(url)
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        yield page, errors


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


# What a finger or a pointer acts on. A radio or checkbox inside a <label> is measured by
# the label, which is what takes the tap (the lobby's choices hide the radio itself).
INTERACTIVE = (
    "a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], "
    '[tabindex]:not([tabindex="-1"])'
)

_SMALL_TARGETS = """([selector, minimum]) => {
  const seen = new Set();
  const small = [];
  // Links inline in running text are exempt (WCAG 2.5.8's inline exception): an <a>
  // laid out inline whose parent element holds a non-blank text node of its own, so the
  // link sits inside a sentence. A link that is the only text of its cell or list item,
  // or sits among other elements only, is measured.
  const inline = (node) => node.tagName === "A" && getComputedStyle(node).display === "inline"
    && Array.from(node.parentElement.childNodes).some(
      (n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== "");
  for (const found of document.querySelectorAll(selector)) {
    if (found.closest("svg")) continue;  // the board's pieces: measured by the table tests
    const label = (found.type === "radio" || found.type === "checkbox") && found.closest("label");
    const node = label || found;
    if (seen.has(node)) continue;
    seen.add(node);
    if (node.closest("[hidden]") || !node.checkVisibility({ visibilityProperty: true })) continue;
    const box = node.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (inline(node)) continue;
    // Rounded to the nearest CSS pixel: a box of 43.99 px is a 44 px target laid out
    // with subpixels, not a smaller one.
    if (Math.round(box.width) >= minimum && Math.round(box.height) >= minimum) continue;
    const name = node.tagName.toLowerCase() + (node.id ? "#" + node.id : "")
      + (typeof node.className === "string" && node.className.trim()
         ? "." + node.className.trim().split(/\\s+/).join(".") : "")
      + (node.tagName === "INPUT" ? `[type=${node.type}]` : "");
    const text = (node.textContent || node.value || node.getAttribute("aria-label") || "")
      .trim().replace(/\\s+/g, " ").slice(0, 40);
    small.push(`${name} "${text}" ${Math.round(box.width)}×${Math.round(box.height)}`);
  }
  return small;
}"""


async def small_targets(page: Page, minimum: int = 44) -> list[str]:
    """The visible interactive elements of the page as laid out now whose box is smaller
    than minimum×minimum CSS px, one line each: tag#id.class[type], its text, its size.

    Measured: a[href], button, input (not hidden), select, textarea, summary,
    [role=button] and [tabindex] ≥ 0; a radio or checkbox inside a <label> by its label.
    Skipped: what is inside an <svg> (the board), what is not rendered (display none,
    `hidden` on it or an ancestor, visibility hidden, a zero-size box), and a link inline
    in running text: an <a> whose computed display is `inline` and whose parent element
    has a non-blank text node of its own (WCAG 2.5.8's inline exception; a link wrapped
    in another inline element, such as <strong>, is measured). Width and height are
    rounded to the nearest CSS pixel before comparing."""
    found: list[str] = await page.evaluate(_SMALL_TARGETS, [INTERACTIVE, minimum])
    return found
