"""A player's page (`/players/{id}`, ratings.html) shows what the match analyses say of
them (`getPlayerAnalysis`, through the match service's proxy): their luck and the cost of
their choices in words and figures, and their dice as a chart and a table, in Japanese and
English, on a phone and a desktop; and each other state in words (loading, no analysed
match yet, the ranking service away).

Debian's Chromium driven by Playwright, against the match and ranking services on
loopback ports (the `site` fixture of this folder's conftest.py); the analyses are rows
written into `match_analyses` and `analysis_seats` as the analysis consumer writes them.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, choose_language
from tests.services.ranking.analysed_matches import Seat, insert_analysis

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

ANALYSIS = "**/api/ratings/players/*/analysis"
# What Chromium logs for an answer of 404 (the player has no rating yet; no analysis yet),
# which the page shows in words: the only console error it may log.
NOT_FOUND_LOG = "Failed to load resource: the server responded with a status of 404 (Not Found)"


def guest(site: Site, name: str) -> dict[str, str]:
    """A new guest of the match service (the player page needs a known player): its id,
    name and token, as the site keeps them in `localStorage` (`ludo.guest`)."""
    r = site.http.post("/api/players", json={"name": name})
    assert r.status_code == 201, r.text
    return {"id": r.json()["id"], "name": name, "token": r.json()["token"]}


async def analysed(engine: AsyncEngine, player_id: str) -> None:
    """Four analysed matches: luck +2% a match on average, 1.3% lost per decision, 3 of
    4 choices the best; 260 rolls with 60 sixes."""
    start = datetime.now(UTC) - timedelta(hours=5)
    for i, luck in enumerate((0.05, -0.01, 0.03, 0.01)):
        await insert_analysis(
            engine,
            [
                Seat(
                    player_id,
                    name="Ann",
                    luck=luck,
                    faces=(10, 10, 10, 10, 10, 15),
                    choices=10,
                    own_error=0.13,
                    best_choices=7 + i % 2,
                    place=1 + i % 3,
                ),
                Seat(None, name="CPU", luck=-luck, faces=(8, 8, 8, 8, 8, 8)),
            ],
            ended_at=start + timedelta(hours=i),
        )


async def ready(page: Page) -> None:
    await expect(page.locator("#analysis[data-state=ready]")).to_be_attached()


async def test_the_player_page_shows_luck_errors_and_dice(
    site: Site, browser: Browser, engine: AsyncEngine
) -> None:
    """With no analysed match the section says so; with four, the averages in words (of
    "this player" to a visitor, of "you" to the player) and figures, sixes per 100 rolls,
    a bar and an interval per face against 1/6 and the text table; in English and
    Japanese; phone-wide without a small target or an axe finding.

    Luck and cost are in points of the chance to finish first, as every page says them."""
    ann = guest(site, "Ann")
    player = ann["id"]
    async with person(browser, locale="en-GB") as (page, errors):
        await page.goto(f"{site.url}/players/{player}")
        await expect(page.locator("#analysis[data-state=none]")).to_be_attached()
        await expect(page.locator("#analysis-state")).to_have_text(
            "No analysed match yet. A match is analysed within seconds of its end."
        )
        await expect(page.locator("#analysis-body")).to_be_hidden()
        await expect(page.locator("#message")).to_contain_text("no rated match yet")

        await analysed(engine, player)
        await page.reload()
        await ready(page)
        await expect(page.locator("#analysis-summary")).to_have_text(
            "On average over the last 4 matches, the dice gave this player 2.0 points per match. "
            "Their choices cost 1.3 points per decision (the best move in 75% of them)."
        )
        # The same page on Ann's own device (her guest in this browser): "you".
        await page.evaluate("(g) => localStorage.setItem('ludo.guest', JSON.stringify(g))", ann)
        await page.reload()
        await ready(page)
        await expect(page.locator("#analysis-title")).to_have_text("Luck and decisions")
        await expect(page.locator("#analysis-summary")).to_have_text(
            "On average over the last 4 matches, the dice gave you 2.0 points per match. "
            "Your choices cost 1.3 points per decision (the best move in 75% of them)."
        )
        figures = page.locator("#analysis-figures dd")
        await expect(figures).to_have_text(["4", "+2.0 points", "1.3 points", "75%"])
        await expect(page.locator("#dice-summary")).to_contain_text(
            "Sixes per 100 rolls: 23.1 (a fair die: 16.7)."
        )
        await expect(page.locator("#dice-note")).to_contain_text("From 260 rolls in all 4")
        rows = page.locator("#dice-table tbody tr")
        await expect(rows).to_have_count(6)
        await expect(rows.nth(5).locator("td")).to_have_text(["6", "60", "23.1%", "18.4% – 28.6%"])
        await expect(rows.nth(0).locator("td").nth(2)).to_have_text("15.4%")
        chart = page.locator("#dice-chart")
        await expect(chart.locator("rect.bar")).to_have_count(6)
        await expect(chart.locator("line.interval")).to_have_count(18)
        await expect(chart.locator("line.fair")).to_have_count(1)
        assert "6: 23.1% (18.4%–28.6%)" in (await chart.get_attribute("aria-label") or "")
        await shot(page, "player-analysis-desktop-en.png")

        await page.set_viewport_size({"width": 375, "height": 812})
        assert await page.evaluate("document.documentElement.scrollWidth") <= 375
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await page.locator("#analysis").scroll_into_view_if_needed()
        await shot(page, "player-analysis-375-en.png")

        # The menu redraws the section (and the message) in Japanese.
        await choose_language(page, "ja")
        await expect(page.locator("#analysis-title")).to_have_text("運と判断")
        await expect(page.locator("#message")).to_have_text(
            "このプレイヤーはまだランク戦で評価されていません。"
        )
        await expect(page.locator("#analysis-summary")).to_have_text(
            "直近4局の平均では、サイコロの運で1局あたり2.0ポイント得をしています。"
            "あなたの選択は、判断1回あたり1.3ポイントの損でした（最善手を選んだのは75%）。"
        )
        await expect(page.locator("#dice-table thead th")).to_have_text(
            ["出目", "回数", "割合", "95%区間"]
        )
        await expect(page.locator("#dice-summary")).to_contain_text("100回あたり6が23.1回")
        await expect(figures).to_have_text(["4", "+2.0ポイント", "1.3ポイント", "75%"])
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await shot(page, "player-analysis-375-ja.png")
        await page.set_viewport_size({"width": 1280, "height": 900})
        await shot(page, "player-analysis-desktop-ja.png")
        assert [e for e in errors if e != NOT_FOUND_LOG] == []


async def test_loading_and_unavailable_are_said_in_words(
    site: Site, browser: Browser, engine: AsyncEngine
) -> None:
    """While the analysis is on its way the section says it is loading; when the ranking
    service is away (the proxy's 503) it says the analysis is unavailable, and the rest of
    the page still works."""
    player = guest(site, "Ben")["id"]
    await analysed(engine, player)
    release = asyncio.Event()

    async def hold(route: Route) -> None:
        await release.wait()
        await route.continue_()

    async with person(browser, locale="en-GB") as (page, errors):
        await page.route(ANALYSIS, hold)
        await page.goto(f"{site.url}/players/{player}")
        await expect(page.locator("#analysis[data-state=loading]")).to_be_attached()
        await expect(page.locator("#analysis-state")).to_have_text("Loading the analysis…")
        release.set()
        await ready(page)
        await expect(page.locator("#analysis-state")).to_be_hidden()

        await page.unroute(ANALYSIS)
        await page.route(
            ANALYSIS,
            lambda route: route.fulfill(
                status=503,
                content_type="application/json",
                body='{"error": "ranking_unavailable", "detail": "away"}',
            ),
        )
        await page.reload()
        await expect(page.locator("#analysis[data-state=unavailable]")).to_be_attached()
        await expect(page.locator("#analysis-state")).to_contain_text(
            "The analysis is unavailable right now"
        )
        await expect(page.locator("#analysis-body")).to_be_hidden()
        await shot(page, "player-analysis-unavailable-en.png")
        # Only the refused answers are logged (Chromium's lines for the 404 and 503).
        assert [e for e in errors if e != NOT_FOUND_LOG and "503" not in e] == []
