"""The operator dashboard's analysis panels in a real browser: the site's dice (today's and
the window's histograms against 1/6, a row per UTC day with its chi-square and p-value)
and the largest luck gaps linked to their replays; each state in words (loading, nothing
analysed yet, unavailable), on a phone and a desktop.

Debian's Chromium driven by Playwright; the ranking app under uvicorn on a loopback port,
on a database with analysed matches written into `match_analyses` and `analysis_seats`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Page, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.analysis.stats import chi_square, chi_square_p
from services.ranking.app import create_app
from services.shared.settings import Settings
from tests.browser import console_errors, new_page, requires_chromium, shot, small_targets
from tests.services.match.test_live import Instance
from tests.services.ranking.analysed_matches import Seat, insert_analysis
from tests.services.ranking.test_dashboard import TOKEN, settled, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

TODAY = [(10, 12, 9, 11, 8, 14), (7, 9, 10, 8, 11, 9)]  # ann, and a CPU
EARLIER = (20, 1, 1, 1, 1, 40)  # three days ago: far from fair


@pytest.fixture
def service(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token=TOKEN, db_pool_size=4
    )
    with Instance(settings, create_app(settings, consume=False)) as instance:
        yield instance


@pytest.fixture
async def page(service: Instance) -> AsyncIterator[Page]:
    async with new_page() as page:
        yield page


async def analyses(engine: AsyncEngine) -> tuple[str, str]:
    """A match today (luck gap 0.3) and one three days ago (gap 0.7, with a CPU seat):
    their ids, the larger gap first."""
    now = datetime.now(UTC)
    small = await insert_analysis(
        engine,
        [
            Seat("ann", name="Ann", luck=0.1, faces=TODAY[0], place=1),
            Seat(None, name="CPU (normal)", luck=-0.2, faces=TODAY[1], place=2),
        ],
        ended_at=now - timedelta(minutes=1),
    )
    big = await insert_analysis(
        engine,
        [
            Seat("ben", name="Ben", luck=-0.3, faces=EARLIER, place=3),
            Seat(None, name="CPU (hard)", luck=0.0, place=2),
            Seat("cat", name="Cat", luck=0.4, place=1),
        ],
        ended_at=now - timedelta(days=3),
    )
    return big, small


async def test_the_dice_and_the_luck_gaps_on_the_dashboard(
    page: Page, engine: AsyncEngine, service: Instance
) -> None:
    """A row per day (today marked, newest first) with its counts, chi-square and p, the
    window's total below; two histograms of six bars with 1/6 drawn; the luck gaps,
    largest first, each seat's luck and place and a 44 px link to the replay."""
    big, small = await analyses(engine)
    errors = console_errors(page)
    await page.goto(f"{service.http}/dashboard")
    await sign_in(page, TOKEN)
    await expect(page.locator("#dice-days tbody tr")).to_have_count(2)
    await settled(page)
    today = datetime.now(UTC).date()
    rows = page.locator("#dice-days tbody tr")
    summed = [a + b for a, b in zip(*TODAY, strict=True)]
    statistic = chi_square(summed) or 0
    await expect(rows.nth(0).locator("td")).to_have_text(
        [
            f"{today} (today)",
            str(sum(summed)),
            *map(str, summed),
            f"{statistic:.2f}",
            f"{chi_square_p(statistic):.3f}",
        ]
    )
    assert await rows.nth(0).get_attribute("class") == "today"
    earlier = rows.nth(1).locator("td")
    await expect(earlier.nth(0)).to_have_text(str(today - timedelta(days=3)))
    await expect(earlier.nth(9)).to_have_text("< 0.001")
    await expect(earlier.nth(9)).to_have_class("num neg")
    total = [a + b for a, b in zip(summed, EARLIER, strict=True)]
    await expect(page.locator("#dice-days tfoot td")).to_have_text(
        [
            "All 14 days",
            str(sum(total)),
            *map(str, total),
            f"{chi_square(total):.2f}",
            "< 0.001",
        ]
    )
    await expect(page.locator("#dice-state")).to_have_text(
        f"{sum(total)} rolls from {today - timedelta(days=13)} to {today} (UTC)."
    )
    for chart in ("#dice-today", "#dice-window"):
        await expect(page.locator(f"{chart} rect.bar")).to_have_count(6)
        await expect(page.locator(f"{chart} line.fair")).to_have_count(1)
    label = await page.locator("#dice-today").get_attribute("aria-label")
    assert label and label.startswith(f"{sum(summed)} rolls: 1: {summed[0]} (")

    gaps = page.locator("#luck-gaps tbody tr")
    await expect(gaps).to_have_count(2)
    assert await gaps.evaluate_all("rows => rows.map(r => r.dataset.match)") == [big, small]
    first = gaps.nth(0)
    await expect(first.locator("td").nth(0)).to_have_text("70.0%")
    await expect(first.locator(".seat")).to_have_text(
        ["−30.0%Ben (ben)3rd", "0.0%CPU (hard)CPU2nd", "+40.0%Cat (cat)1st"]
    )
    site = (await page.locator("#match-site").input_value()).rstrip("/")
    link = first.locator("a")
    assert await link.get_attribute("href") == f"{site}/replay/{big}"
    await expect(link).to_have_text(f"replay {big[:8]}")
    await shot(page, "dashboard-analysis-desktop.png")

    await page.set_viewport_size({"width": 375, "height": 812})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    sizes = await page.locator("#luck-gaps a").evaluate_all(
        "links => links.map(a => { const b = a.getBoundingClientRect(); "
        "return [Math.round(b.width), Math.round(b.height)]; })"
    )
    assert sizes and all(w >= 44 and h >= 44 for w, h in sizes), sizes
    assert await small_targets(page) == []
    await shot(page, "dashboard-analysis-375.png")
    await page.locator("#dice-section").evaluate("(n) => n.scrollIntoView()")
    await shot(page, "dashboard-dice-375.png", full_page=False)
    await page.locator("#gaps-section").evaluate("(n) => n.scrollIntoView()")
    await shot(page, "dashboard-gaps-375.png", full_page=False)
    assert errors == []


async def test_nothing_analysed_loading_and_unavailable_are_said_in_words(
    page: Page, service: Instance
) -> None:
    """Before any analysis both panels say there is none; while the dice are on their way
    the panel says it is loading; a failed answer says the dice are unavailable while the
    rest of the dashboard stays."""
    await page.goto(f"{service.http}/dashboard")
    await sign_in(page, TOKEN)
    await expect(page.locator("#dice-state")).to_have_text("No analysed roll in the last 14 days.")
    await expect(page.locator("#dice-days tbody")).to_have_text(
        "No analysed roll in the last 14 days."
    )
    await expect(page.locator("#dice-charts")).to_be_hidden()
    await expect(page.locator("#luck-gaps tbody")).to_have_text(
        "No analysed match in the last 7 days."
    )
    await settled(page)

    release = asyncio.Event()

    async def hold(route: Route) -> None:
        await release.wait()
        await route.fulfill(
            status=500, content_type="application/json", body='{"error": "internal"}'
        )

    await page.route("**/api/ranking/dice*", hold)
    await page.reload()
    await expect(page.locator("#dice-days tbody")).to_have_text("Loading…")
    await expect(page.locator("#dice-state")).to_have_text("Loading the dice…")
    release.set()
    await expect(page.locator("#dice-state")).to_contain_text("The dice are unavailable")
    await expect(page.locator("#luck-gaps tbody")).to_have_text(
        "No analysed match in the last 7 days."
    )
    await expect(page.locator("#leaderboard tbody")).to_have_text("No rated players yet.")
    await expect(page.locator("#message")).to_be_hidden()
    await shot(page, "dashboard-analysis-unavailable.png")
