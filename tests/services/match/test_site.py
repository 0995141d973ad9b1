"""The site in a real browser: the lobby, the table, a whole match by clicking, reload,
two players, a spectator, rematch, both languages, a dropped socket.

Debian's Chromium driven by Playwright (tests/browser.py). The match service runs under
uvicorn on a loopback port with its deadline worker on, so CPU seats play by themselves;
the ranking service runs beside it for the rating shown after a ranked match. Animations
are switched off through `prefers-reduced-motion` (the page honours it) so a whole match
takes seconds; the waiting is on the page's own state (`body[data-version]`, the roll
button, movable pieces), never on a clock.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from playwright.async_api import Browser, Page, expect

from services.shared.database import libpq_url
from tests.browser import person, requires_chromium, shot
from tests.services.match.site_pages import (
    Site,
    choose_language,
    click,
    create_party,
    logged_versions,
    name_myself,
    play_my_turns,
    running_site,
    version,
)
from tests.services.match.test_table import play_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

# What the page waits on may take a while on a loaded 2-core machine: a bound, not a time
# the tests assert.
expect.set_options(timeout=15_000)


async def test_a_whole_match_against_three_cpus_by_clicking(site: Site, browser: Browser) -> None:
    """Lobby → party → three CPUs added at the table → start → every turn clicked to the
    end: placements, the replay link, and each event logged once."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "alice")
        await shot(page, "lobby-en.png")
        party_id = await create_party(page, seats=4, preset="bga")
        await expect(page.locator("#seats-list li")).to_have_count(4)
        for seat in (1, 2, 3):
            await page.click(f"[data-add-cpu='{seat}']")
            await expect(
                page.locator(f"#seats-list li[data-seat='{seat}'] .tag.cpu")
            ).to_be_visible()
        await shot(page, "party-en.png")
        await page.click("#start")
        await expect(page.locator("#match-view")).to_be_visible()
        await play_my_turns(page, until_version=40)
        await shot(page, "match-cross-4-en.png")
        await play_my_turns(page)
        match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        final = site.state(match_id)
        assert final["status"] == "finished"
        await expect(page.locator("#placements > li")).to_have_count(4)
        first = final["placements"].index(1)
        await expect(page.locator(f"#placements > li[data-seat='{first}'] .place")).to_contain_text(
            "1"
        )
        href = await page.get_attribute("#replay-link", "href")
        assert href == f"/replay/{match_id}"
        logged = await logged_versions(page)
        assert len(logged) == len(set(logged))
        await shot(page, "result-en.png")
        assert errors == []


async def start_duel(site: Site, a: Page, b: Page, *, ranked: bool = False) -> str:
    """alice creates a 2-seat party in the lobby, bob opens the invite link and sits
    down with his name, alice starts; returns the party id."""
    await name_myself(a, site, "alice")
    if ranked:
        await a.click("#mode label:has(input[value='ranked'])")
    party_id = await create_party(a, seats=2, preset="bga")
    await expect(a.locator("#share-link")).to_have_value(f"{site.url}/party/{party_id}")
    link = await a.input_value("#share-link")
    await b.goto(link)
    await b.fill("#join-name", "bob")
    await b.click("#join-form button")
    await expect(a.locator("#seats-list li[data-seat='1'] .name")).to_contain_text("bob")
    await a.click("#start")
    await expect(a.locator("#match-view")).to_be_visible()
    await expect(b.locator("#match-view")).to_be_visible()
    return party_id


async def test_two_people_play_each_other_and_a_spectator_follows(
    site: Site, browser: Browser
) -> None:
    """Two browsers play a ranked duel to the end by clicking while a third watches it
    read-only; both players see the result and their rating change."""
    async with (
        person(browser) as (a, a_errors),
        person(browser, locale="ja-JP") as (b, b_errors),
        person(browser) as (watcher, w_errors),
    ):
        party_id = await start_duel(site, a, b, ranked=True)
        match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        await watcher.goto(f"{site.url}/match/{match_id}")
        await expect(watcher.locator("body[data-ready=true]")).to_be_attached()
        assert await watcher.locator("#roll").is_hidden()
        # Play both seats concurrently, each page clicking its own turns.
        await asyncio.gather(play_my_turns(a, until_version=24), play_my_turns(b, until_version=24))
        await shot(b, "match-long-2-ja.png")
        await asyncio.gather(play_my_turns(a), play_my_turns(b))
        events = site.events(match_id)
        # The spectator saw every event, each once, and the final position.
        await expect(watcher.locator("#result")).to_be_visible()
        assert await logged_versions(watcher) == [e["version"] for e in events]
        assert await watcher.locator("#board .piece.movable").count() == 0
        for page in (a, b):
            await expect(
                page.locator("#placements .rating.up, #placements .rating.down")
            ).to_have_count(2)
        winner = site.state(match_id)["placements"].index(1)
        cell = (a if winner == 0 else b).locator(f"#placements > li[data-seat='{winner}'] .rating")
        await expect(cell).to_have_class(re.compile(r"\bup\b"))
        await shot(b, "result-ja.png")
        # The public leaderboard lists both, and a click leads to the player's page.
        await watcher.goto(f"{site.url}/leaderboard")
        await expect(watcher.locator("#board-table tbody tr")).to_have_count(2)
        rated = {
            c["player_id"]: c
            for c in site.http.get(f"/api/ratings/matches/{match_id}").json()["changes"]
        }
        top = watcher.locator("#board-table tbody tr").first
        top_id = await top.get_attribute("data-player")
        assert top_id is not None and rated[top_id]["delta"] > 0
        await expect(top.locator(".rating")).to_have_text(str(rated[top_id]["rating_after"]))
        await top.locator("a").click()
        await watcher.wait_for_url(f"**/players/{top_id}")
        await expect(watcher.locator("#player-rating")).to_have_text(
            str(rated[top_id]["rating_after"])
        )
        await expect(watcher.locator("#history tbody tr")).to_have_count(1)
        await expect(watcher.locator("#history tbody tr a")).to_have_attribute(
            "href", f"/replay/{match_id}"
        )
        await shot(watcher, "player-en.png")
        assert a_errors == b_errors == w_errors == []


async def test_rematch_rotates_the_first_seat(site: Site, browser: Browser) -> None:
    """After a finished duel, もう一度 starts the next match on both pages with the other
    seat first (rotate_first is on in both presets)."""
    async with person(browser) as (a, a_errors), person(browser) as (b, b_errors):
        party_id = await start_duel(site, a, b)
        first = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        await asyncio.gather(play_my_turns(a), play_my_turns(b))
        assert site.state(first)["first_seat"] == 0
        await a.click("#rematch")
        await a.wait_for_function(
            "(old) => document.querySelector('#replay-link').getAttribute('href')"
            " !== `/replay/${old}`",
            arg=first,
        )
        second = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        assert second != first
        assert site.state(second)["first_seat"] == 1
        for page in (a, b):
            await expect(page.locator("#replay-link")).to_have_attribute(
                "href", f"/replay/{second}"
            )
        # bob plays first now: alice's page names him, his own page says it to him.
        await expect(a.locator("#log li").nth(1)).to_contain_text("bob plays first")
        await expect(b.locator("#log li").nth(1)).to_have_text("The match begins. You play first.")
        assert a_errors == b_errors == []


# Every word the reloaded page draws for seat 0's connection, from its first script on.
RECORD_OWN_PRESENCE = """
window.__ownPresence = [];
new MutationObserver(() => {
  const tag = document.querySelector("#players li[data-seat='0'] [data-presence]");
  const said = tag && tag.dataset.presence;
  const all = window.__ownPresence;
  if (said && all[all.length - 1] !== said) all.push(said);
}).observe(document, { childList: true, subtree: true });
"""


async def test_a_reload_mid_match_returns_the_same_seat(site: Site, browser: Browser) -> None:
    """Reloading in the middle of a match brings the player back to the same seat, with
    the live state, able to play on (they roll again from the reloaded page), and never
    draws the player as away meanwhile."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "carol")
        party_id = await create_party(page, seats=2, preset="bga")
        await page.click("[data-add-cpu='1']")
        await page.click("#start")
        await play_my_turns(page, until_version=12)
        match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        await page.add_init_script(RECORD_OWN_PRESENCE)
        await page.reload()
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await expect(page.locator("#players li[data-seat='0'] .name")).to_contain_text("carol")
        await page.wait_for_function(
            "(v) => Number(document.body.dataset.version) >= v",
            arg=site.state(match_id)["version"] - 1,
        )
        assert (
            await logged_versions(page)
            == [e["version"] for e in site.events(match_id)][: len(await logged_versions(page))]
        )
        # The player's next roll, pressed on the reloaded page (a move it offers first is
        # played), is the player's.
        await play_until(page, "() => !document.querySelector('#roll').hidden", act=click)
        resumed = await version(page)
        await page.click("#roll")
        await page.wait_for_function(
            "(v) => Number(document.body.dataset.version) > v", arg=resumed
        )
        after = [
            (e["type"], e["data"].get("seat"))
            for e in site.events(match_id)
            if e["version"] >= resumed  # the page's version counts the events: the next one
        ]
        assert await page.evaluate("window.__ownPresence") == ["online"]
        assert ("DieRolled", 0) in after, after
        assert errors == []


async def every_event_logged_once(page: Page, site: Site, party_id: str) -> None:
    """The page's log holds the party's match's events from its first, each once, in
    order, with none missing (the CPUs play on: the page may be behind the match, never
    ahead of it or out of step)."""
    match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
    logged = await logged_versions(page)
    assert logged == [e["version"] for e in site.events(match_id)][: len(logged)]


async def test_a_dropped_socket_reconnects_and_misses_nothing(site: Site, browser: Browser) -> None:
    """The match socket is cut mid-match: the page says so, comes back by itself from
    the last event it saw, and plays on showing every event exactly once."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "dave")
        await create_party(page, seats=2, preset="bga")
        await page.click("[data-add-cpu='1']")
        sockets: list[Any] = []

        async def relay(route: Any) -> None:
            route.connect_to_server()
            sockets.append(route)

        await page.route_web_socket(re.compile(r"/ws/matches/"), relay)
        await page.click("#start")
        await play_my_turns(page, until_version=10)
        assert len(sockets) == 1
        await sockets[0].close(code=1011, reason="cut by the test")
        await expect(page.locator("#connection")).to_be_visible()
        await expect(page.locator("#connection")).to_contain_text("Reconnect")
        await expect(page.locator("#connection")).to_be_hidden()
        assert len(sockets) == 2
        await play_my_turns(page, until_version=await version(page) + 12)
        party_id = page.url.rsplit("/", 1)[1]
        await every_event_logged_once(page, site, party_id)
        assert errors == []


async def test_the_site_speaks_japanese_and_english(site: Site, browser: Browser) -> None:
    """The browser's language picks the page's; the language menu changes it and it is
    kept (the `ludo_lang` cookie) for the next page load."""
    async with person(browser, locale="ja-JP") as (page, _):
        await page.goto(site.url + "/")
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        await expect(page.locator("#create-button")).to_have_text("作る")
        await expect(page.locator("#rules-table tr[data-option='three_sixes'] .name")).to_have_text(
            "6が3回で番が終わる"
        )
        await shot(page, "lobby-ja.png")
        await choose_language(page, "en")
        await expect(page.locator("#create-button")).to_have_text("Create")
        cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
        assert cookies.get("ludo_lang") == "en"
        await page.reload()
        await expect(page.locator("html")).to_have_attribute("lang", "en")
        await expect(page.locator("#create-button")).to_have_text("Create")
        await expect(page.locator("#lang")).to_have_value("en")
    async with person(browser, locale="en-US") as (page, _):
        await page.goto(site.url + "/")
        await expect(page.locator("html")).to_have_attribute("lang", "en")
        await expect(page.locator("#rules-table tr[data-option='blocks'] .name")).to_have_text(
            "Blocked squares"
        )


async def test_the_lobby_lists_open_parties_live(site: Site, browser: Browser) -> None:
    """A party created in one browser appears in another's lobby without a reload, and
    leaves the list when it starts."""
    async with person(browser) as (host, h_errors), person(browser) as (other, o_errors):
        await other.goto(site.url + "/")
        await expect(other.locator("body[data-ready=true]")).to_be_attached()
        await expect(other.locator("#no-parties")).to_be_visible()
        await name_myself(host, site, "erin")
        party_id = await create_party(host, seats=3, preset="standard")
        row = other.locator(f"#parties li[data-party='{party_id}']")
        await expect(row).to_contain_text("erin")
        await expect(row).to_contain_text("1/3")
        await host.click("[data-add-cpu='1']")
        await expect(row).to_contain_text("2/3")
        # The host can take a CPU away again; the list follows.
        await host.click("[data-remove-cpu='1']")
        await expect(row).to_contain_text("1/3")
        await host.select_option("select[data-level='1']", "hard")
        await host.click("[data-add-cpu='1']")
        await expect(host.locator("#seats-list li[data-seat='1'] .name")).to_have_text("CPU (hard)")
        await host.click("[data-add-cpu='2']")
        await host.click("#start")
        await expect(row).to_have_count(0)
        assert h_errors == o_errors == []


async def tab_to(page: Page, selector: str) -> None:
    """Presses Tab until `selector` has the focus (at most 60 times)."""
    for _ in range(60):
        await page.keyboard.press("Tab")
        if await page.evaluate("(s) => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


async def test_a_match_played_from_the_keyboard_alone(site: Site, browser: Browser) -> None:
    """From the lobby to the result without the mouse: Tab to the name and type it, Tab to
    "Play the CPUs now" and press Enter; at the table R or Space rolls, a piece's
    digit moves it, or Tab reaches it and Enter moves it."""
    async with person(browser) as (page, errors):
        await page.goto(site.url + "/")
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await tab_to(page, "#name")
        await page.keyboard.type("frank")
        await tab_to(page, "#play-now")
        await page.keyboard.press("Enter")
        await page.wait_for_url(re.compile(r"/party/[0-9a-f-]{36}$"))
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        party_id = page.url.rsplit("/", 1)[1]
        turns = 0

        async def keys(page: Page, what: str) -> None:
            nonlocal turns
            turns += 1
            if what == "roll":
                await page.keyboard.press("r" if turns % 2 else "Space")
            elif turns % 3:
                piece = await page.locator("#board .piece.movable").first.get_attribute(
                    "data-piece"
                )
                await page.keyboard.press(str(int(piece or "0") + 1))
            else:
                await tab_to(page, "#board .piece.movable")
                await page.keyboard.press("Enter")

        await play_my_turns(page, act=keys)
        match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        assert site.state(match_id)["status"] == "finished"
        assert await page.locator("#placements > li").count() == 4
        # The log box followed every line to the last, through every change of its size.
        gap = await page.locator("#log").evaluate(
            "b => b.scrollHeight - b.scrollTop - b.clientHeight"
        )
        assert gap < 2
        assert errors == []


async def test_a_phone_plays_a_three_player_match_by_tap(site: Site, browser: Browser) -> None:
    """At 375 px with touch: the T board of three players fits the width, pieces are
    tapped, and the match ends with the result in view."""
    async with person(browser, locale="ja-JP", width=375, height=667, touch=True) as (
        page,
        errors,
    ):
        await name_myself(page, site, "gina")
        party_id = await create_party(page, seats=3, preset="bga")
        await page.tap("[data-add-cpu='1']")
        await expect(page.locator("#seats-list li[data-seat='1'] .tag.cpu")).to_be_visible()
        await page.tap("[data-add-cpu='2']")
        await expect(page.locator("#start")).to_be_enabled()
        await page.tap("#start")
        await expect(page.locator("#match-view")).to_be_visible()
        tapped = 0

        async def tap(page: Page, what: str) -> None:
            nonlocal tapped
            wide = await page.evaluate("() => document.documentElement.scrollWidth")
            assert wide <= 375, f"the page is {wide} px wide on a 375 px screen"
            if what == "roll":
                await page.tap("#roll")
                return
            await page.locator("#board .piece.movable").first.tap()
            tapped += 1
            if tapped == 8:
                await shot(page, "match-t-3-phone-ja.png")

        await play_my_turns(page, act=tap)
        match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
        assert site.state(match_id)["board"]["kind"] == "by_players"
        await expect(page.locator("#placements > li")).to_have_count(3)
        # Each place on one line with its player ("2位" never alone on a line).
        lines = await page.locator("#placements > li").evaluate_all(
            """lis => lis.map(li => [li.querySelector('.place').getBoundingClientRect().top,
                                     li.querySelector('.who').getBoundingClientRect().top])"""
        )
        assert all(abs(place - name) < 4 for place, name in lines), lines
        # Each place says whose it is in words (the colour's mark is not read out): two CPUs
        # of one level are told apart by their colours' names.
        names = await page.locator("#placements > li .who").all_inner_texts()
        assert len(set(names)) == 3, names
        await shot(page, "result-375-ja.png")
        assert tapped > 0 and errors == []


async def test_timer_stand_in_reclaim_and_sound(
    database_url: str, tmp_path: Path, browser: Browser
) -> None:
    """A 30 s turn limit counts down on the page; leaving puts a CPU in the seat (marked
    on the seat) until 'take my seat back'; the sound switch is kept over a reload."""
    # CPUs that take 0.2 s a move, so the match is still on when the seat is taken back.
    with running_site(database_url, tmp_path, cpu_delay=0.2) as site:
        await _timer_stand_in_reclaim_and_sound(site, browser)


async def _timer_stand_in_reclaim_and_sound(site: Site, browser: Browser) -> None:
    async with person(browser) as (page, errors):
        await name_myself(page, site, "hana")
        await page.click("#limit label:has(input[value='30'])")
        await create_party(page, seats=2, preset="bga")
        await page.click("[data-add-cpu='1']")
        await page.click("#start")
        timer = page.locator("#timer")
        await expect(timer).to_have_text(re.compile(r"^(30|29|28) s left$"))
        shown = await timer.text_content()
        await expect(timer).not_to_have_text(shown or "")  # it counts down
        assert int((await timer.text_content() or "0").split()[0]) < int((shown or "0").split()[0])

        page.once("dialog", lambda dialog: dialog.accept())
        await page.click("#leave-match")
        mark = page.locator("#players li[data-seat='0'] [data-stood-in='left']")
        await expect(mark).to_be_visible()
        await page.click("#reclaim")
        await expect(mark).to_have_count(0)
        await expect(page.locator("#reclaim")).to_be_hidden()

        await expect(page.locator("#sound")).to_have_text("Sound: on")
        await page.click("#sound")
        await expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")
        await page.reload()
        await expect(page.locator("#sound")).to_have_text("Sound: off")
        assert errors == []


async def test_a_timed_out_turn_is_the_cpus_not_the_players(
    database_url: str, tmp_path: Path, browser: Browser
) -> None:
    """When a player's turn times out, the CPU plays the rest of it: the player's page
    says so and offers neither the die nor a piece, until the turn has passed."""
    with running_site(database_url, tmp_path, cpu_delay=3.0) as site:
        async with person(browser) as (page, errors):
            await name_myself(page, site, "ichiro")
            await page.click("#limit label:has(input[value='30'])")
            party_id = await create_party(page, seats=2, preset="bga")
            await page.click("[data-add-cpu='1']")
            await page.click("#start")
            await expect(page.locator("#roll")).to_be_visible()
            match_id = site.http.get(f"/api/parties/{party_id}").json()["match_id"]
            # The turn's deadline is due now (instead of in 30 s): the scheduler fires it.
            with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
                conn.execute(
                    "UPDATE turn_deadlines SET due_at = now() WHERE stream_id = %s",
                    (f"match-{match_id}",),
                )
            timed_out = page.locator("#log li", has_text="time ran out")
            await expect(timed_out).to_have_count(1)
            assert site.state(match_id)["deadline"]["kind"] == "cpu"
            # While the CPU plays the rest of the turn (a roll every 3 s, more after sixes)
            # the page says so; once the turn has passed, that the other CPU thinks.
            await expect(page.locator("#status")).to_contain_text(
                re.compile(r"a CPU plays the rest of your turn|a CPU is thinking")
            )
            await expect(page.locator("#roll")).to_be_hidden()
            assert await page.locator("#board .piece.movable").count() == 0
            assert errors == []


async def test_going_offline_says_so_and_comes_back(site: Site, browser: Browser) -> None:
    """The browser going offline mid-match is said at once; back online, the page
    reconnects and misses nothing."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "kazu")
        party_id = await create_party(page, seats=2, preset="bga")
        await page.click("[data-add-cpu='1']")
        await page.click("#start")
        await play_my_turns(page, until_version=8)
        await page.context.set_offline(True)
        await expect(page.locator("#connection")).to_be_visible()
        await page.context.set_offline(False)
        await expect(page.locator("#connection")).to_be_hidden()
        await play_my_turns(page, until_version=await version(page) + 12)
        await every_event_logged_once(page, site, party_id)
        assert errors == []


async def test_a_new_name_keeps_the_same_guest(site: Site, browser: Browser) -> None:
    """Saving another name in the lobby renames this device's guest: the same id and
    token, the new name shown."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "leo")
        before = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        await page.fill("#name", "leon")
        await expect(page.locator("#name-note")).to_be_visible()
        await page.click("#name-form button[type=submit]")
        await expect(page.locator("#me")).to_have_text("leon")
        after = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        assert after == {**before, "name": "leon"}
        me = site.http.get(
            "/api/players/me", headers={"Authorization": f"Bearer {after['token']}"}
        ).json()
        assert me == {"id": before["id"], "name": "leon"}
        assert errors == []
