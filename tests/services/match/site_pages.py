"""What the tests of the site's pages in Chromium share: the match and ranking services on
loopback ports (`running_site`, `Site`), and a player's moves on the pages (name, party,
turns played by a mouse, a keyboard or a finger), waiting on the page's own state
(`body[data-version]`, the roll button, movable pieces), never on a clock.

The fixtures `site` and `browser` that use them are in this folder's conftest.py.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Page, expect

from services.ranking.app import create_app as create_ranking_app
from services.shared.settings import Settings
from tests.services.match.test_live import Instance


class Site:
    """The match service (and the ranking service) on loopback ports."""

    def __init__(self, match: Instance) -> None:
        self.match = match
        self.url = match.http
        self.http = httpx.Client(base_url=match.http, timeout=30)

    def state(self, match_id: str) -> dict[str, Any]:
        state: dict[str, Any] = self.http.get(f"/api/matches/{match_id}").json()
        return state

    def events(self, match_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.http.get(f"/api/matches/{match_id}/events").json()[
            "events"
        ]
        return events


@contextlib.contextmanager
def running_site(database_url: str, tmp_path: Path, **overrides: Any) -> Iterator[Site]:
    """The ranking service and the match service (deadline worker on) on the test's
    database; `overrides` change the match service's settings."""
    common: dict[str, Any] = {
        "data_dir": tmp_path,
        "database_url": database_url,
        "cpu_delay": 0,
        "db_pool_size": 4,
    }
    with Instance(Settings(**common), app=create_ranking_app(Settings(**common))) as ranking:
        settings = Settings(**{**common, **overrides}, scheduler=True, ranking_url=ranking.http)
        with Instance(settings) as match:
            site = Site(match)
            yield site
            site.http.close()


async def choose_language(page: Page, code: str) -> None:
    """The header's language menu set to `code` (as a reader picks it), once the page is
    drawn in it: `setLanguage` marks <html lang> in the same task as it redraws."""
    await page.select_option("#lang", code)
    await expect(page.locator("html")).to_have_attribute("lang", code)


async def name_myself(page: Page, site: Site, name: str) -> None:
    await page.goto(site.url + "/")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await page.fill("#name", name)
    await page.click("#name-form button[type=submit]")
    await expect(page.locator("#me")).to_have_text(name)


async def create_party(page: Page, *, seats: int, preset: str = "bga") -> str:
    """Create a party from the lobby's form; returns its id (the page is at its table)."""
    await page.click(f"#seats label:has(input[value='{seats}'])")
    await page.click(f"#preset label:has(input[value='{preset}'])")
    await page.click("#create-button")
    await page.wait_for_url(re.compile(r"/party/[0-9a-f-]{36}$"))
    return page.url.rsplit("/", 1)[1]


async def version(page: Page) -> int:
    return int(await page.evaluate("Number(document.body.dataset.version || -1)"))


Act = Callable[[Page, str], Awaitable[None]]


async def click(page: Page, what: str) -> None:
    """Roll or move the way a mouse user does: the roll button, the first movable piece."""
    if what == "roll":
        await page.click("#roll")
    else:
        await page.locator("#board .piece.movable:not(.chosen)").first.click()


async def play_my_turns(page: Page, until_version: int | None = None, act: Act = click) -> None:
    """Play this seat's turns with `act` (roll, then a movable piece) until the match is
    over, or until the page has seen `until_version`. A piece already chosen (a move on its
    way: one the player pressed, or the only move, which the page plays for them) is no
    decision to make."""
    until = -1 if until_version is None else until_version
    while True:
        await page.wait_for_function(
            """(until) => { const roll = document.querySelector('#roll');
                 return document.querySelector('#result:not([hidden])')
                   || (until >= 0 && Number(document.body.dataset.version) >= until)
                   || (!roll.hidden && !roll.disabled)
                   || document.querySelector(
                        '#board .piece.movable:not(.chosen)[role=button]'); }""",
            arg=until,
        )
        if await page.locator("#result").is_visible():
            return
        if until_version is not None and await version(page) >= until_version:
            return
        before = await version(page)
        await act(page, "roll" if await page.locator("#roll").is_visible() else "move")
        # The command's events reach the page: its version moves on.
        await page.wait_for_function("(v) => Number(document.body.dataset.version) > v", arg=before)


async def logged_versions(page: Page) -> list[int]:
    versions: list[int] = await page.locator("#log li").evaluate_all(
        "lis => lis.map(li => Number(li.dataset.version))"
    )
    return versions
