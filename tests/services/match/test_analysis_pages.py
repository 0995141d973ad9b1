"""The match's analysis on the pages (docs/analysis.md, docs/site.md): the end screen's
line of each human player's dice and choices, and the replay viewer's chart of the
seats' chances, its swings, its seats' sums and the options valued at a decision.

Debian's Chromium driven by Playwright, against the match service and the ranking
service (whose analysis consumer writes every finished match's analysis) on the test's
PostgreSQL, as in test_table.py. Waiting is on the pages' own state (`#result`,
`data-state`, `body[data-analysis]`) or on the API's answer, never on a clock. Where a
test needs the analysis absent or the ranking service away, the browser's requests for it
are answered by the test (Playwright's routing).
"""

from __future__ import annotations

import asyncio
import math
import re
import uuid
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa
from playwright.async_api import Browser, Page, Route, WebSocket, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.long_match import cpu_seats, long_match, store_match
from domain.analysis import analyse, encode
from services.shared.database import create_engine
from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import (
    Site,
    choose_language,
    create_party,
    name_myself,
    play_my_turns,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

ANALYSIS = "**/api/ratings/analysis/*"


def signed(x: float, lang: str = "en") -> str:
    """A change of chance as the pages write it, in points, rounded as JavaScript's
    Math.round rounds: "+12 points", "−1 point", "±0 points"; 「+12ポイント」."""
    n = math.floor(x * 100 + 0.5)
    figure = f"+{n}" if n > 0 else f"\u2212{-n}" if n < 0 else "\u00b10"
    if lang == "ja":
        return f"{figure}ポイント"
    return f"{figure} point" if abs(n) == 1 else f"{figure} points"


async def analysis_of(site: Site, match_id: str) -> dict[str, Any]:
    """The stored analysis, once the ranking service has written it."""

    def written() -> dict[str, Any] | None:
        r = site.http.get(f"/api/ratings/analysis/{match_id}")
        return r.json() if r.status_code == 200 else None

    found: dict[str, Any] = await wait_until(written, 120, what="the match's analysis")
    return found


async def play_two_seats_to_the_end(page: Page, site: Site, name: str) -> str:
    """A 2-seat table (BGA's rules) against one CPU, played by clicks to its end; returns
    the match's id."""
    await name_myself(page, site, name)
    party_id = await create_party(page, seats=2)
    await page.click("[data-add-cpu='1']")
    await page.click("#start")
    await expect(page.locator("#match-view")).to_be_visible()
    await play_my_turns(page)
    await expect(page.locator("#result")).to_be_visible()
    match_id: str = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
    return match_id


def played_by_cpus(site: Site) -> str:
    """A finished 4-seat match (our rules) of three CPUs and a host who left at once (a
    CPU stands in): started over HTTP, played by the deadline worker."""
    http = site.http
    host = http.post("/api/players", json={"name": "hostess"}).json()
    auth = {"Authorization": f"Bearer {host['token']}"}
    party = http.post(
        "/api/parties", json={"seats": 4, "rules": {"preset": "standard"}}, headers=auth
    ).json()
    for level in ("easy", "normal", "hard"):
        r = http.post(f"/api/parties/{party['id']}/cpus", json={"level": level}, headers=auth)
        assert r.status_code == 200, r.text
    r = http.post(f"/api/parties/{party['id']}/start", headers=auth)
    assert r.status_code == 201, r.text
    match_id: str = r.json()["match_id"]
    r = http.post(f"/api/matches/{match_id}/leave", headers=auth)
    assert r.status_code == 200, r.text
    return match_id


# ------------------------------------------------------------------------ the end screen

LINE_EN = re.compile(
    r"^Your chance to finish first: (\d+)%\s→\s(\d+)% \((?:\+|\u2212|\u00b1)(\d+) points?\)$"
)
LINE_JA = re.compile(
    r"^あなたが1位になる確率: (\d+)%\s→\s(\d+)%（(?:\+|\u2212|\u00b1)(\d+)ポイント）$"
)
PARTS_EN = ["Dice", "Your choices", "Other players' turns and the rest"]
PARTS_JA = ["サイコロ", "あなたの選んだ手", "ほかのプレイヤーの番など"]


def shown(x: float) -> int:
    """A chance in whole per cent, as the pages round it (JavaScript's Math.round)."""
    return math.floor(x * 100 + 0.5)


async def check_chance_line(
    page: Page, analysis: dict[str, Any], seat: int, line: re.Pattern[str], labels: list[str]
) -> None:
    """The seat's analysis on the end card: its chance from the start to the end as the
    analysis's first and last points give it, the change, and three parts, each labelled
    and within ±100 points, that add up to it exactly as shown."""
    box = page.locator(f"#placements > li[data-seat='{seat}'] .chance")
    await expect(box).to_be_visible()
    start = shown(analysis["points"][0][1][seat])
    end = shown(analysis["points"][-1][1][seat])
    assert await box.get_attribute("data-start") == str(start)
    assert await box.get_attribute("data-end") == str(end)
    assert await box.get_attribute("data-change") == str(end - start)
    said = line.match(await box.locator(".chance-line").inner_text())
    assert said is not None, await box.inner_text()
    assert (int(said[1]), int(said[2]), int(said[3])) == (start, end, abs(end - start))
    parts = box.locator(".chance-parts li")
    await expect(parts).to_have_count(3)
    figures = [int(await parts.nth(i).get_attribute("data-points") or "") for i in range(3)]
    assert sum(figures) == end - start
    assert all(abs(f) <= 100 for f in figures) and figures[1] <= 0
    assert [await parts.nth(i).locator(".chance-label").inner_text() for i in range(3)] == labels
    for i, figure in enumerate(figures):
        text = await parts.nth(i).locator(".chance-figure").inner_text()
        if i == 1 and not analysis["seats"][seat]["choices"]:
            continue  # "no choice to make", in words
        assert text == (f"+{figure}" if figure > 0 else f"\u2212{-figure}" if figure else "\u00b10")


async def test_the_end_card_says_the_chance_from_start_to_end_and_what_moved_it(
    site: Site, browser: Browser
) -> None:
    """The end card says the player's chance from start to end and parts adding up to it.

    After a match against a CPU: the chance to finish first where it started and where it
    ended, in percentage points, and the dice, their choices and the rest as parts that
    add up to that change, none beyond 100 points, as the stored analysis gives them, on a
    375×812 phone and a 1280×800 desktop, in English and Japanese, with a link to the
    replay's analysis; the CPU has no line."""
    async with person(browser, width=375, height=812, touch=True) as (page, errors):
        match_id = await play_two_seats_to_the_end(page, site, "mio")
        note = page.locator("#analysis-note")
        await expect(note).to_have_attribute("data-state", "ready", timeout=120_000)
        analysis = await analysis_of(site, match_id)
        await check_chance_line(page, analysis, 0, LINE_EN, PARTS_EN)
        await expect(page.locator("#placements > li[data-seat='1'] .luck")).to_be_empty()
        await expect(note).to_contain_text("the parts add up to its change")
        link = page.locator("#analysis-link")
        await expect(link).to_have_attribute("href", f"/replay/{match_id}#analysis")
        await expect(page.locator("#replay-link")).to_be_visible()
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        assert await page.evaluate("scrollY") == 0
        await page.locator("#result").scroll_into_view_if_needed()
        await shot(page, "end-analysis-375-en.png", full_page=False)
        await choose_language(page, "ja")
        await check_chance_line(page, analysis, 0, LINE_JA, PARTS_JA)
        await expect(note).to_contain_text("内訳を足すと確率の変化になります")
        await expect(link).to_have_text("リプレイで分析を見る")
        assert await axe_violations(page) == []
        await shot(page, "end-analysis-375-ja.png", full_page=False)
        await page.set_viewport_size({"width": 1280, "height": 800})
        await check_chance_line(page, analysis, 0, LINE_JA, PARTS_JA)
        assert await axe_violations(page) == []
        await shot(page, "end-analysis-1280-ja.png", full_page=False)
        await choose_language(page, "en")
        await check_chance_line(page, analysis, 0, LINE_EN, PARTS_EN)
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await shot(page, "end-analysis-1280-en.png", full_page=False)
        assert errors == []


async def test_the_end_card_shows_the_analysis_the_moment_it_is_written(
    site: Site, browser: Browser, engine: AsyncEngine
) -> None:
    """While the analysis is not written the end card says the match is being analysed;
    once the ranking service writes it, the match socket says so and the card shows the
    player's line at once, without a reload."""
    frames: list[str] = []

    def on_socket(ws: WebSocket) -> None:
        ws.on("framereceived", lambda payload: frames.append(str(payload)))

    # The analysis consumer is held at its commit (its checkpoint row, which its first
    # step writes, locked) until the card has said it is analysing.
    async def checkpoint_written() -> bool:
        async with engine.connect() as conn:
            query = "SELECT 1 FROM consumer_checkpoints WHERE name = 'analysis'"
            return await conn.scalar(sa.text(query)) is not None

    await wait_until(checkpoint_written, 30, what="the analysis consumer's first step")
    async with engine.connect() as holder:
        await holder.execute(
            sa.text("SELECT 1 FROM consumer_checkpoints WHERE name = 'analysis' FOR UPDATE")
        )
        async with person(browser, width=375, height=812, touch=True) as (page, errors):
            page.on("websocket", on_socket)
            await play_two_seats_to_the_end(page, site, "kai")
            note = page.locator("#analysis-note")
            await expect(note).to_have_text("Analysing the match…")
            await page.evaluate("window.kept = true")  # gone if the page were reloaded
            await expect(page.locator("#placements > li[data-seat='0'] .luck")).to_be_empty()
            await holder.rollback()  # the consumer commits the analysis now
            await expect(note).to_have_attribute("data-state", "ready", timeout=60_000)
            await expect(page.locator("#placements > li[data-seat='0'] .chance")).to_be_visible()
            assert any('"type":"analysis"' in f for f in frames)
            assert await page.evaluate("window.kept") is True
            assert errors == []


async def test_the_end_screen_says_why_the_analysis_is_not_there_yet(
    site: Site, browser: Browser
) -> None:
    """While the ranking service does not answer (503) the end screen says so, while the
    analysis is not written (404 not_analysed) it says the match is being analysed, and
    it asks again by itself until the line comes; もう一度 stays offered throughout."""
    # The page's first ask is answered 503, its second (once the test has read what the
    # first made it say) 404 not_analysed, the next ones (likewise) by the ranking service.
    asks: list[Route] = []
    unavailable_seen, pending_seen = asyncio.Event(), asyncio.Event()

    async def answer(route: Route) -> None:
        asks.append(route)
        if len(asks) == 1:
            body = {"error": "ranking_unavailable", "detail": "down"}
            await route.fulfill(status=503, json=body, headers={"Retry-After": "5"})
        elif len(asks) == 2:
            await unavailable_seen.wait()
            await route.fulfill(status=404, json={"error": "not_analysed", "detail": "soon"})
        else:
            await pending_seen.wait()
            await route.continue_()

    async with person(browser) as (page, errors):
        await page.route(ANALYSIS, answer)
        await play_two_seats_to_the_end(page, site, "ren")
        note = page.locator("#analysis-note")
        rematch = page.locator("#rematch")
        await expect(note).to_have_text(
            "The analysis cannot be shown right now (the ranking service does not answer)."
        )
        await expect(rematch).to_be_visible()
        unavailable_seen.set()
        await expect(note).to_have_text("Analysing the match…", timeout=60_000)
        await expect(page.locator("#analysis-link")).to_be_hidden()
        await expect(rematch).to_be_visible()
        pending_seen.set()
        await expect(note).to_have_attribute("data-state", "ready", timeout=120_000)
        await expect(page.locator("#placements > li[data-seat='0'] .chance-line")).to_have_text(
            LINE_EN
        )
        await expect(rematch).to_be_visible()
        assert errors == []


# ----------------------------------------------------------------------- the replay viewer


async def test_the_replay_draws_the_chances_marks_the_swings_and_values_the_options(
    site: Site, browser: Browser
) -> None:
    """The replay of an analysed match draws one line per seat in its colour, marks and
    lists the swings' moments in words (a swing's button steps the replay there), lists
    the seats' sums, and at a decision shows each option's value with the played and the
    best one marked and what the choice cost, in English and Japanese."""
    match_id = played_by_cpus(site)
    analysis = await analysis_of(site, match_id)
    model = site.http.get(f"/api/matches/{match_id}/steps").json()
    colours = [s["colour"] for s in model["seats"]]
    costly = [d for d in analysis["decisions"] if d["error"] > 0]
    decision = costly[0] if costly else analysis["decisions"][0]
    # One mark and one button per moment, however many seats count it among their swings.
    moments = {(sw["version"], sw["until"]): sw for s in analysis["seats"] for sw in s["swings"]}
    swings = [moments[turn] for turn in sorted(moments, key=lambda turn: (turn[1], turn[0]))]
    async with person(browser, width=375, height=812, touch=True) as (page, errors):
        await page.goto(f"{site.url}/replay/{match_id}#{decision['version']}")
        await expect(page.locator("body[data-analysis=ready]")).to_be_attached()
        lines = page.locator("#chances polyline.line")
        await expect(lines).to_have_count(len(analysis["seats"]))
        for i, colour in enumerate(colours):
            await expect(lines.nth(i)).to_have_class(re.compile(f"c-{colour}"))
        await expect(page.locator("#chances circle.swing")).to_have_count(len(swings))
        await expect(page.locator("#chances-legend li")).to_have_count(len(colours))
        await expect(page.locator("#chances-text li")).to_have_count(len(colours))
        # the options at the decision: valued, the played and the best marked
        options = page.locator("#options li")
        await expect(options).to_have_count(len(decision["options"]))
        played = decision["options"][decision["played"]]
        best = decision["options"][decision["best"]]
        chosen = page.locator(f"#options li.chosen[data-piece='{played[0]}']")
        await expect(chosen).to_contain_text(f"{math.floor(played[3] * 100 + 0.5)}%")
        await expect(page.locator("#options li.best")).to_have_attribute("data-piece", str(best[0]))
        await expect(page.locator("#options li.best")).to_contain_text("★ best")
        verdict = page.locator("#options-verdict")
        if decision["error"] == 0:
            await expect(verdict).to_have_text("The best move was played.")
        else:
            await expect(verdict).to_have_text(
                f"Piece {best[0] + 1} was best (this choice: {signed(-decision['error'])})."
            )
        await expect(page.locator("#chances-now")).to_contain_text(
            f"At event {decision['version']}:"
        )
        await shot(page, "replay-decision-375-en.png", full_page=False)
        # a tap on the chart's left edge (left of its marks) steps to its first point
        chart = page.locator("#chances")
        box = await chart.bounding_box()
        assert box is not None
        await chart.tap(position={"x": 1, "y": box["height"] - 3})
        first = analysis["points"][0][0]
        await expect(page.locator("#counter")).to_have_text(f"{first + 1} / {len(model['steps'])}")
        # the swings in words; one of them, pressed from the keyboard, steps the replay to
        # its turn
        buttons = page.locator("#swings button")
        await expect(buttons).to_have_count(len(swings))
        swing = swings[-1]
        last = buttons.nth(len(swings) - 1)
        await expect(last).to_contain_text(signed(swing["change"]))
        await last.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#counter")).to_have_text(
            f"{swing['version'] + 1} / {len(model['steps'])}"
        )
        await expect(last).to_have_attribute("aria-current", "step")
        await expect(page.locator("#chances-now")).to_contain_text(f"At event {swing['version']}:")
        rows = page.locator("#analysis-seats tbody tr")
        await expect(rows).to_have_count(len(colours))
        for i in range(len(colours)):  # each seat's parts add up to its change, as shown
            row = rows.nth(i)
            start = shown(analysis["points"][0][1][i])
            end = shown(analysis["points"][-1][1][i])
            await expect(row.locator(".chance")).to_have_text(
                f"{start}% → {end}% ({signed((end - start) / 100)})"
            )
            parts = [
                int(await row.locator(f".{key}").get_attribute("data-points") or "")
                for key in ("dice", "choices", "rest")
            ]
            assert sum(parts) == end - start and all(abs(x) <= 100 for x in parts)
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await shot(page, "replay-analysis-375-en.png")
        await page.select_option("#lang", "ja")
        await expect(page.locator("#analysis-title")).to_have_text("対局の分析")
        await expect(last).to_contain_text("の番（")
        await expect(page.locator("#chances-now")).to_contain_text(
            f"イベント{swing['version']}の時点: "
        )
        await page.set_viewport_size({"width": 1280, "height": 900})
        await page.goto(f"{site.url}/replay/{match_id}#{decision['version']}")
        await expect(page.locator("body[data-analysis=ready]")).to_be_attached()
        await expect(page.locator("#options li.best .best-mark")).to_have_text("★ 最善")
        await shot(page, "replay-analysis-1280-ja.png")
        assert errors == []


@pytest.mark.parametrize(("locale", "lang"), [("en-GB", "en"), ("ja-JP", "ja")])
async def test_a_two_player_replay_lists_each_swing_once_and_says_who_gained(
    site: Site, browser: Browser, database_url: str, locale: str, lang: str
) -> None:
    """In a 2-player match every turn that lifts one seat sinks the other as much, so each
    of its biggest turns is among both seats' swings: the viewer marks and lists each turn
    once (3 buttons for 3 turns, not 6), its words giving both seats' changes with the
    one who gained first."""
    events, seed = long_match(300, seats=cpu_seats(2), finished=True)
    match_id = str(uuid.uuid4())
    engine = create_engine(database_url)
    try:
        await store_match(engine, match_id, events, seed)
    finally:
        await engine.dispose()
    analysis = msgspec.json.decode(encode(analyse(events)))
    listed = [sw for s in analysis["seats"] for sw in s["swings"]]
    moments = sorted({(sw["version"], sw["until"]) for sw in listed}, key=lambda m: (m[1], m[0]))
    assert len(listed) == 2 * len(moments)  # each turn listed by both seats

    async def served(route: Route) -> None:
        await route.fulfill(json=analysis)

    async with person(browser, locale=locale, width=375, height=812) as (page, errors):
        await page.route(ANALYSIS, served)
        await page.goto(f"{site.url}/replay/{match_id}")
        await expect(page.locator("body[data-analysis=ready]")).to_be_attached()
        buttons = page.locator("#swings button")
        await expect(buttons).to_have_count(len(moments))
        await expect(page.locator("#chances circle.swing")).to_have_count(len(moments))
        names = await page.locator("#seats li .name").all_inner_texts()
        for i, (version, until) in enumerate(moments):
            button = buttons.nth(i)
            assert await button.get_attribute("data-version") == str(version)
            changes = {
                s["seat"]: sw["change"]
                for s in analysis["seats"]
                for sw in s["swings"]
                if (sw["version"], sw["until"]) == (version, until)
            }
            gainer = max(changes, key=lambda seat: changes[seat])
            loser = 1 - gainer
            assert changes[gainer] > 0 > changes[loser]
            assert await button.get_attribute("data-seat") == str(gainer)
            text = await button.inner_text()
            gained, lost = signed(changes[gainer], lang), signed(changes[loser], lang)
            assert gained in text and lost in text and text.index(gained) < text.index(lost)
            assert ("の番（" if lang == "ja" else "'s turn (") in text
        assert len(names) == 2
        assert await axe_violations(page) == []
        await shot(page, f"replay-swings-375-{lang}.png")
        assert errors == []


async def test_the_replay_without_its_analysis_works_as_before_and_says_why(
    site: Site, browser: Browser
) -> None:
    """When the ranking service does not answer (503), the replay still steps through the
    match, draws no chart and says in words why there is no analysis; for a match still
    being played it says the analysis comes once the match is over."""
    match_id = played_by_cpus(site)

    async def away(route: Route) -> None:
        await route.fulfill(status=503, json={"error": "ranking_unavailable", "detail": "down"})

    async with person(browser) as (page, errors):
        await page.route(ANALYSIS, away)
        await page.goto(f"{site.url}/replay/{match_id}")
        await expect(page.locator("body[data-analysis=unavailable]")).to_be_attached()
        await expect(page.locator("#analysis-state")).to_have_text(
            "The analysis cannot be shown right now (the ranking service does not answer)."
        )
        await expect(page.locator("#analysis-body")).to_be_hidden()
        await page.click("#next")
        await expect(page.locator("#counter")).to_contain_text("2 / ")
        await page.unroute(ANALYSIS)
        host = site.http.post("/api/players", json={"name": "slow"}).json()
        auth = {"Authorization": f"Bearer {host['token']}"}
        party = site.http.post(
            "/api/parties", json={"seats": 2, "rules": {"preset": "bga"}}, headers=auth
        ).json()
        site.http.post(f"/api/parties/{party['id']}/cpus", json={"level": "easy"}, headers=auth)
        running = site.http.post(f"/api/parties/{party['id']}/start", headers=auth).json()
        await page.goto(f"{site.url}/replay/{running['match_id']}")
        await expect(page.locator("body[data-analysis=playing]")).to_be_attached()
        await expect(page.locator("#analysis-state")).to_have_text(
            "The analysis comes once the match is over."
        )
        assert errors == []
