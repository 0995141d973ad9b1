"""Reports in real Chromium, both services on loopback ports: a player reports another from
the table (reason from the list, "sent"), the operator finds it in the dashboard's queue,
linked to the match's dispute report, and suspends; the reported player's standing then
says suspended until when. Screenshots of the dialog (375×812) and the queue (desktop)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.app import create_app as create_ranking_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.browser import launched, person, requires_chromium, shot, small_targets
from tests.services.match.test_live import Instance
from tests.services.ranking.finished_matches import write_match

TOKEN = "op-secret"

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]


class Services(msgspec.Struct):
    match: str
    ranking: str


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[Services]:
    """The ranking service (operator token, no consumer) and the match service (no
    deadline worker) on one database."""
    common: dict[str, Any] = {
        "data_dir": tmp_path,
        "database_url": database_url,
        "db_pool_size": 4,
        "operator_token": TOKEN,
    }
    ranking_app = create_ranking_app(Settings(**common), consume=False)
    with Instance(Settings(**common), app=ranking_app) as ranking:
        settings = Settings(**common, scheduler=False, ranking_url=ranking.http)
        with Instance(settings) as match:
            yield Services(match.http, ranking.http)


def duel(http: httpx.Client) -> tuple[str, dict[str, str], dict[str, str]]:
    """Two guests at a started duel: the match id and each guest (id, name, token)."""
    guests = []
    for name in ("Ana", "Bo"):
        r = http.post("/api/players", json={"name": name})
        assert r.status_code == 201, r.text
        guests.append(r.json())
    a, b = guests
    auth = [{"Authorization": f"Bearer {g['token']}"} for g in guests]
    party = http.post("/api/parties", json={"seats": 2}, headers=auth[0]).json()
    assert http.post(f"/api/parties/{party['id']}/join", json={}, headers=auth[1]).is_success
    started = http.post(f"/api/parties/{party['id']}/start", headers=auth[0])
    assert started.status_code == 201, started.text
    return started.json()["match_id"], a, b


async def as_guest(page: Page, site: str, guest: dict[str, str]) -> None:
    """This browser becomes `guest` (the site keeps its guest in localStorage)."""
    await page.goto(site + "/rules")
    value = msgspec.json.encode(guest).decode()
    await page.evaluate("(g) => localStorage.setItem('ludo.guest', g)", value)


async def test_report_from_the_table_to_a_suspension(
    services: Services, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The table shows each player's completion rate; Ana reports Bo from it; the operator
    sees it in the queue and suspends for 24 h; Bo's standing says suspended until then."""
    http = httpx.Client(base_url=services.match, timeout=30)
    match_id, ana, bo = duel(http)
    # An earlier match of theirs, which Bo left: Ana finished 1 of 1, Bo 0 of 1.
    await write_match(engine, pg_store, [ana["id"], bo["id"]], [1, 2], stood_in={1: "left"})
    await RankingConsumer(engine, pg_store).catch_up()
    async with launched() as browser:
        await report_from_the_table(browser, services.match, match_id, ana, bo)
        await suspend_from_the_dashboard(browser, services, match_id, bo)
    standing = http.get(
        "/api/players/me/standing", headers={"Authorization": f"Bearer {bo['token']}"}
    ).json()
    assert standing["ranked_block"]["reason"] == "suspended"
    until = dt.datetime.fromisoformat(standing["ranked_block"]["until"])
    left = until - dt.datetime.now(dt.UTC)
    assert dt.timedelta(hours=23, minutes=58) < left <= dt.timedelta(hours=24)
    http.close()


async def report_from_the_table(
    browser: Browser, site: str, match_id: str, ana: dict[str, str], bo: dict[str, str]
) -> None:
    async with person(browser, width=375, height=812, touch=True) as (page, errors):
        await as_guest(page, site, ana)
        await page.goto(f"{site}/match/{match_id}")
        bo_seat = page.locator("#players li", has_text="Bo")
        button = bo_seat.locator("button.report")
        await expect(button).to_be_visible()
        # No button for oneself; both players show their completion rate.
        ana_seat = page.locator("#players li", has_text="Ana")
        await expect(ana_seat.locator("button.report")).to_have_count(0)
        await expect(ana_seat.locator(".completion")).to_have_text("Finished 100%")
        await expect(bo_seat.locator(".completion")).to_have_text("Finished 0%")
        await button.click()
        dialog = page.locator("#report-dialog")
        await expect(dialog).to_be_visible()
        await expect(dialog.locator("h2")).to_have_text("Report Bo")
        await page.click("#report-send")
        await expect(page.locator("#report-status")).to_have_text("Choose a reason.")
        await dialog.locator("label.reason", has_text="Left on purpose").click()
        await shot(page, "report-dialog-phone.png", full_page=False)
        await page.click("#report-send")
        await expect(page.locator("#report-status")).to_have_text(
            "Report sent. An operator will look at it."
        )
        await expect(page.locator("#report-send")).to_be_hidden()
        await page.click("#report-cancel")
        await expect(dialog).to_be_hidden()
        # A second report of the same player for the same match is refused, in words.
        await button.click()
        await dialog.locator("label.reason", has_text="Other").click()
        await page.click("#report-send")
        await expect(page.locator("#report-status")).to_have_text(
            "You already reported this player for this match."
        )
        assert errors == [] or all("409" in e for e in errors), errors


async def suspend_from_the_dashboard(
    browser: Browser, services: Services, match_id: str, bo: dict[str, str]
) -> None:
    async with person(browser) as (page, errors):
        await page.goto(f"{services.ranking}/dashboard")
        await page.fill("#token", TOKEN)
        await page.click("#login button[type=submit]")
        await page.fill("#match-site", services.match)
        await page.locator("#match-site").dispatch_event("change")
        row = page.locator("#reports tbody tr[data-report]")
        await expect(row).to_have_count(1)
        await expect(page.locator("#reports-open")).to_have_text("(1 open)")
        await expect(row).to_contain_text("Left on purpose")
        # Who: the names they sat under, each a link to the player's page (their id in it).
        reported, reporter = row.locator("td").nth(1), row.locator("td").nth(2)
        await expect(reported).to_have_text("Bo")
        await expect(reporter).to_have_text("Ana")
        link = row.locator("td").nth(4).locator("a")
        # The queue was first drawn with the site guessed from the port; the change above
        # reads it again and draws it with the site typed, once that answer is in.
        await expect(link).to_have_attribute("href", f"{services.match}/report/{match_id}")
        await expect(reported.locator("a")).to_have_attribute(
            "href", f"{services.match}/players/{bo['id']}"
        )
        await expect(reported.locator("a")).to_have_attribute("title", bo["id"])
        await page.wait_for_function(
            "() => document.querySelector('#leaderboard').dataset.pending === '0'"
        )
        await shot(page, "dashboard-reports.png")
        for width in (1280, 375):  # the decision's controls are finger-sized on a phone too
            await page.set_viewport_size({"width": width, "height": 812})
            assert await small_targets(page) == [], width
        await row.locator("input[aria-label='suspension hours']").fill("24")
        await row.locator("button[data-decision=suspend]").click()
        await expect(page.locator("#message")).to_contain_text("Suspended from ranked pools until")
        await expect(page.locator("#reports-open")).to_have_text("(0 open)")
        await expect(row).to_contain_text("suspended 24 h")
        assert errors == [], errors


async def test_report_from_the_replay_viewer(services: Services) -> None:
    """In the replay viewer a player of the match reports another; someone who did not
    play in it sees the seats decorated but no report button."""
    http = httpx.Client(base_url=services.match, timeout=30)
    match_id, ana, _bo = duel(http)
    olga = http.post("/api/players", json={"name": "Olga"}).json()
    http.close()
    async with launched() as browser:
        async with person(browser) as (page, errors):
            await as_guest(page, services.match, ana)
            await page.goto(f"{services.match}/replay/{match_id}")
            await expect(page.locator("body[data-ready=true]")).to_be_attached()
            bo_seat = page.locator("#seats li", has_text="Bo")
            await expect(bo_seat.locator("button.report")).to_be_visible()
            await expect(
                page.locator("#seats li", has_text="Ana").locator("button.report")
            ).to_have_count(0)
            await bo_seat.locator("button.report").click()
            await page.locator("#report-dialog label.reason", has_text="Other").click()
            await page.click("#report-send")
            await expect(page.locator("#report-status")).to_have_text(
                "Report sent. An operator will look at it."
            )
            assert errors == [], errors
        async with person(browser) as (page, errors):
            await as_guest(page, services.match, olga)
            await page.goto(f"{services.match}/replay/{match_id}")
            await expect(page.locator("body[data-ready=true]")).to_be_attached()
            await expect(page.locator("#seats li")).to_have_count(2)
            # The seats are decorated (completion tags, hidden with no ended match) ...
            await expect(page.locator("#seats li .completion")).to_have_count(2)
            # ... but Olga did not play: no report button.
            await expect(page.locator("#seats button.report")).to_have_count(0)
            assert errors == [], errors
