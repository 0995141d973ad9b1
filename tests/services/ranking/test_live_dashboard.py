"""The dashboard's live view in Chromium: both services on loopback
ports (the ranking service pointed at the match service), a phone and a desktop; the page
refreshes it every 5 s by itself, and the test waits on what the page shows, not a clock.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import msgspec
import pytest
import websockets
from playwright.async_api import Browser, Locator, Page, expect

from services.ranking.app import create_app as create_ranking_app
from tests.browser import launched, person, requires_chromium, shot, small_targets
from tests.services.match.test_live import Instance, Table
from tests.services.ranking.test_live_view import TOKEN, both, client, leave, service_settings
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

PHONE = (375, 812)
DESKTOP = (1280, 800)


def tile(page: Page, key: str) -> Locator:
    """The value of the live view's tile named `key`."""
    return page.locator(".tile", has=page.locator(".k", has_text=key)).locator(".v")


async def signed_in(page: Page, url: str) -> None:
    await page.goto(f"{url}/dashboard")
    await page.fill("#token", TOKEN)
    await page.click("#login button[type=submit]")
    await expect(page.locator("#live-state")).to_contain_text("Updated", timeout=15_000)


async def test_the_live_view_shows_the_site_now_and_follows_it(
    database_url: str, tmp_path: Path
) -> None:
    """On a phone and a desktop the live view says in words what it shows (the time of its
    last answer, the database's role, each instance), lays out within the screen, and
    counts a match once a player opens its table, without a reload."""
    async with launched() as browser:
        await _live_view(browser, database_url, tmp_path)


async def _live_view(browser: Browser, database_url: str, tmp_path: Path) -> None:
    with both(database_url, tmp_path) as (match, ranking):
        for width, height in (PHONE, DESKTOP):
            async with person(browser, width=width, height=height) as (page, errors):
                await signed_in(page, ranking.http)
                await expect(page.locator("#live-database")).to_contain_text(
                    "This service writes to the primary, timeline"
                )
                await expect(page.locator("#live-database")).to_contain_text(
                    "No failover manager configured"
                )
                instances = page.locator("#live-instances tbody tr")
                await expect(instances).to_have_count(2, timeout=15_000)
                await expect(instances.filter(has_text="ranking")).to_have_count(1)
                await expect(page.locator("#live-abandon-words")).to_contain_text(
                    "This hour: 0 of 0 seats left their match"
                )
                # Nothing sticks out of a phone's screen: the page never scrolls sideways.
                overflow = await page.evaluate(
                    "() => document.scrollingElement.scrollWidth - innerWidth"
                )
                assert overflow <= 0
                assert await small_targets(page) == []
                name = "phone" if width == PHONE[0] else "desktop"
                await shot(page, f"dashboard-live-{name}.png")
                assert errors == []

        async with person(browser, width=PHONE[0], height=PHONE[1]) as (page, errors):
            await signed_in(page, ranking.http)
            await expect(tile(page, "Matches now")).to_have_text("0")
            async with client(match.http) as http:
                table = await Table(http).open()
                hello = {"type": "hello", "token": table.players[0]["token"]}
                async with websockets.connect(match.ws(table.match_id)) as ws:
                    await ws.send(msgspec.json.encode(hello).decode())
                    # The page's own 5 s refresh brings it: no reload, no click.
                    await expect(tile(page, "Matches now")).to_have_text("1", timeout=20_000)
                    await expect(tile(page, "Players at tables")).to_have_text("1")
            assert errors == []


# The tiles of the live view that name the play and the database connections, and what
# they read with both players of the only match gone and CPUs playing it out.
STAND_INS = {
    "en-GB": {"Matches now": "1", "Of them, CPUs only": "1", "Players at tables": "0"},
    "ja-JP": {"いま対局中": "1", "うちCPUだけで対局中": "1", "卓にいるプレイヤー": "0"},
}
DB_WAITS = {"en-GB": "DB connection waits", "ja-JP": "DB接続の待ち"}


async def test_a_match_the_stand_ins_play_out_is_a_match_now(
    database_url: str, tmp_path: Path
) -> None:
    """Both players left their match and CPUs play it out (the deadline worker on): the
    live view counts it as a match now, played by CPUs only, in Japanese and English; the
    database connections' waits are named as such, not as quick-play pools."""
    match_settings = service_settings(tmp_path, database_url, scheduler=True, cpu_delay=1.0)
    with Instance(match_settings) as match:
        settings = service_settings(tmp_path, database_url, match_url=match.http)
        with Instance(settings, app=create_ranking_app(settings)) as ranking:
            async with httpx.AsyncClient(base_url=match.http, timeout=30) as http:
                table = await Table(http).open()
                for seat in (0, 1):
                    await leave(http, table, seat)
                left = await table.version()

                async def played_on() -> bool:
                    return await table.version() > left

                await wait_until(played_on, 15, what="the stand-ins to play on")
                async with launched() as browser:
                    for locale, tiles in STAND_INS.items():
                        async with person(browser, locale=locale, width=375, height=812) as (
                            page,
                            errors,
                        ):
                            await page.goto(f"{ranking.http}/dashboard")
                            await page.fill("#token", TOKEN)
                            await page.click("#login button[type=submit]")
                            for key, value in tiles.items():
                                await expect(tile(page, key)).to_have_text(value)
                            await expect(tile(page, DB_WAITS[locale])).to_be_visible()
                            await expect(page.locator("#live-instances thead")).to_contain_text(
                                DB_WAITS[locale]
                            )
                            await shot(page, f"dashboard-live-stand-ins-{locale[:2]}.png")
                            assert errors == []
                state = (await http.get(f"/api/matches/{table.match_id}")).json()
                assert state["status"] == "playing"  # still being played out all along
