"""The operator dashboard signed in, something in every panel, in a real browser: Debian's
Chromium driven by Playwright, in Japanese and English, on a 375×812 phone and a 1280×800
desktop.

- axe-core finds nothing serious or critical, signed out, after a wrong token and signed
  in (the live view with the match service's figures, the report queue with an open and a
  decided report, the leaderboard and a player's history, the distribution, the swings,
  the dice and the luck gaps);
- every box that scrolls is reachable from the keyboard: in the Tab order, a region with a
  name (axe's scrollable-region-focusable says only that something in it takes the focus);
- the report queue names the reported player and the reporter, their ids at hand.

Both services run under uvicorn on loopback ports on the test's database (the ranking
service pointed at the match service, its consumer rating the matches written here). The
waiting is on the page's own state (`data-pending`, rows drawn), never on a clock.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.eventstore import EventStore
from tests.browser import launched, person, requires_chromium, shot, small_targets
from tests.services.match.test_site_a11y import axe_at_both_sizes, resize
from tests.services.ranking.analysed_matches import Seat, insert_analysis
from tests.services.ranking.finished_matches import CPU, write_match
from tests.services.ranking.test_dashboard import settled, sign_in
from tests.services.ranking.test_live_view import TOKEN, both
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

LOCALES = {"ja": "ja-JP", "en": "en-GB"}
PHONE = (375, 812)
DESKTOP = (1280, 800)
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


class Site(msgspec.Struct):
    match: str
    ranking: str
    # The queue's reports: (reported, reporter) guests, each {"id", "name", "token"}.
    open_report: tuple[dict[str, str], dict[str, str]]
    decided_report: tuple[dict[str, str], dict[str, str]]


async def guest(http: httpx.AsyncClient, name: str) -> dict[str, str]:
    r = await http.post("/api/players", json={"name": name})
    assert r.status_code == 201, r.text
    body: dict[str, str] = r.json()
    return body


async def duel(http: httpx.AsyncClient, a: dict[str, str], b: dict[str, str]) -> str:
    """A started casual duel of `a` (host) and `b`: its match id."""
    auth = [{"Authorization": f"Bearer {g['token']}"} for g in (a, b)]
    party = (await http.post("/api/parties", json={"seats": 2}, headers=auth[0])).json()
    joined = await http.post(f"/api/parties/{party['id']}/join", json={}, headers=auth[1])
    assert joined.status_code == 200, joined.text
    started = await http.post(f"/api/parties/{party['id']}/start", headers=auth[0])
    assert started.status_code == 201, started.text
    match_id: str = started.json()["match_id"]
    return match_id


async def report(
    http: httpx.AsyncClient, match_id: str, by: dict[str, str], of: dict[str, str], reason: str
) -> str:
    r = await http.post(
        "/api/reports",
        json={"match_id": match_id, "player_id": of["id"], "reason": reason},
        headers={"Authorization": f"Bearer {by['token']}"},
    )
    assert r.status_code == 201, r.text
    report_id: str = r.json()["report_id"]
    return report_id


@pytest.fixture
async def site(
    database_url: str, tmp_path: Path, engine: AsyncEngine, pg_store: EventStore
) -> AsyncIterator[Site]:
    """Both services with something in every panel: three rated players (their matches
    rated by the ranking service's own consumer), two analysed matches, and two reports of
    a duel on the match service (one open, one warned)."""
    names = {"ann": "Ann", "ben": "Ben", "cat": "Cat"}
    await write_match(engine, pg_store, ["ann", "ben", CPU], [1, 2, 3], names=names)
    await write_match(engine, pg_store, ["ann", "cat"], [1, 1], names=names)
    await write_match(engine, pg_store, ["cat", "ben"], [1, 2], names=names)
    now = datetime.now(UTC)
    await insert_analysis(
        engine,
        [
            Seat("ann", name="Ann", luck=0.1, faces=(10, 12, 9, 11, 8, 14), place=1),
            Seat(None, name="CPU (normal)", luck=-0.2, faces=(7, 9, 10, 8, 11, 9), place=2),
        ],
        ended_at=now - timedelta(minutes=1),
    )
    await insert_analysis(
        engine,
        [
            Seat("ben", name="Ben", luck=-0.3, faces=(20, 1, 1, 1, 1, 40), place=2),
            Seat("cat", name="Cat", luck=0.4, place=1),
        ],
        ended_at=now - timedelta(days=3),
    )
    with both(database_url, tmp_path) as (match, ranking):
        async with (
            httpx.AsyncClient(base_url=match.http, timeout=30) as http,
            httpx.AsyncClient(base_url=ranking.http, timeout=30) as op,
        ):
            ana, bo = await guest(http, "Ana"), await guest(http, "Bo")
            match_id = await duel(http, ana, bo)
            await report(http, match_id, ana, bo, "left_on_purpose")
            warned = await report(http, match_id, bo, ana, "abusive_stamps")
            decided = await op.post(
                f"/api/operator/reports/{warned}/decision",
                json={"decision": "warn"},
                headers=OPERATOR,
            )
            assert decided.status_code == 200, decided.text

            async def rated() -> bool:
                board = await op.get("/api/ranking/leaderboard", headers=OPERATOR)
                return len(board.json()["entries"]) == 3

            await wait_until(rated, 30, what="the ranking service to rate the three matches")
        yield Site(match.http, ranking.http, (bo, ana), (ana, bo))


# Every box of the page that scrolls now (its content overflows it, and its overflow lets
# it scroll), but the page itself, with what makes it reachable from the keyboard.
SCROLLING = """() => Array.from(document.querySelectorAll("body *")).filter((n) => {
  const s = getComputedStyle(n);
  const scrolls = (v) => v === "auto" || v === "scroll";
  return n.checkVisibility() && (
    (scrolls(s.overflowX) && n.scrollWidth > n.clientWidth + 1) ||
    (scrolls(s.overflowY) && n.scrollHeight > n.clientHeight + 1));
}).map((n) => ({
  box: n.tagName.toLowerCase() + (n.id ? "#" + n.id : "") + " > " +
       (n.firstElementChild ? n.firstElementChild.tagName.toLowerCase() +
        (n.firstElementChild.id ? "#" + n.firstElementChild.id : "") : ""),
  tabindex: n.getAttribute("tabindex"),
  role: n.getAttribute("role"),
  named: Boolean(n.getAttribute("aria-label") ||
                 (n.getAttribute("aria-labelledby") || "").split(/\\s+/).some(
                   (id) => id && document.getElementById(id) &&
                           document.getElementById(id).textContent.trim())),
}))"""


async def unreachable_scrolling(page: Page) -> list[str]:
    """The boxes that scroll but are not a named region in the Tab order, one line each."""
    boxes: list[dict[str, Any]] = await page.evaluate(SCROLLING)
    return [
        f"{b['box']}: tabindex={b['tabindex']} role={b['role']} named={b['named']}"
        for b in boxes
        if b["tabindex"] != "0" or b["role"] != "region" or not b["named"]
    ]


async def drawn(page: Page, site: Site) -> None:
    """Signed in: every panel drawn from its answer (the live view with the match
    service's figures, both reports, the rated players, the luck gaps) and nothing on its
    way."""
    await expect(page.locator("#reports tbody tr[data-report]")).to_have_count(2)
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
    # The two analyses written here, and those the analysis consumer makes of the others.
    await expect(page.locator("#luck-gaps tbody tr[data-match]").nth(1)).to_be_attached()
    await expect(page.locator("#live-instances tbody tr")).to_have_count(2, timeout=20_000)
    await expect(page.locator("#history path.line")).to_have_count(1)
    await settled(page)


async def names_in_the_queue(page: Page, site: Site) -> None:
    """Each report names the reported player and the reporter as they sat in the match,
    each name a link to the player's page on the match site (their id in its address, its
    title and its accessible name)."""
    rows = {
        "#reports tbody tr[data-report]:not(.decided)": site.open_report,
        "#reports tbody tr[data-report].decided": site.decided_report,
    }
    for selector, players in rows.items():
        cells = page.locator(selector).locator("td.who")
        await expect(cells).to_have_count(2)
        for i, who in enumerate(players):
            link = cells.nth(i).locator("a")
            await expect(link).to_have_text(who["name"])
            await expect(link).to_have_attribute("href", f"{site.match}/players/{who['id']}")
            await expect(link).to_have_attribute("title", who["id"])
            await expect(link).to_have_accessible_name(re.compile(re.escape(who["id"])))


async def test_the_dashboard_signed_in_has_no_serious_axe_violation(site: Site) -> None:
    """axe-core finds nothing serious or critical on the dashboard, signed out, after a
    wrong token and signed in with every panel filled, in Japanese and English, at 375×812
    and 1280×800; every box that scrolls is a named region in the Tab order; nothing is
    smaller than 44 px or sticks out of the screen."""
    found: list[str] = []
    async with launched() as browser:
        for lang, locale in LOCALES.items():
            async with person(browser, locale=locale, width=PHONE[0], height=PHONE[1]) as (
                page,
                errors,
            ):
                await page.goto(f"{site.ranking}/dashboard")
                await expect(page.locator("#token")).to_be_visible()
                found += await axe_at_both_sizes(page, f"dashboard {lang} (signed out)")
                await resize(page, PHONE)
                await sign_in(page, "not-the-token")
                await expect(page.locator("#message.error")).to_be_visible()
                found += await axe_at_both_sizes(page, f"dashboard {lang} (a wrong token)")
                await resize(page, PHONE)
                await sign_in(page, TOKEN)
                await page.fill("#match-site", site.match)
                await page.locator("#match-site").dispatch_event("change")
                await drawn(page, site)
                await names_in_the_queue(page, site)
                found += await axe_at_both_sizes(page, f"dashboard {lang}")
                for size, name in ((PHONE, "phone"), (DESKTOP, "desktop")):
                    await resize(page, size)
                    where = f"{lang} {name}"
                    found += [f"{where}: {s}" for s in await unreachable_scrolling(page)]
                    found += [f"{where}: {s}" for s in await small_targets(page)]
                    wide = await page.evaluate("document.scrollingElement.scrollWidth")
                    if wide > size[0]:
                        found.append(f"{where}: the page is {wide} px wide")
                    await shot(page, f"dashboard-signed-in-{lang}-{name}.png")
                # The one error logged is the refused wrong token.
                assert [e for e in errors if "status of 401" not in e] == [], errors
    assert found == [], "\n".join(found)
