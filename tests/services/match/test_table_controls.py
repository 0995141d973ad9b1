"""The table's controls beyond a roll and a move, in Chromium (tests/browser.py): the
keyboard's way from the roll button to the pieces, the only move played for the player,
the CPUs' speed, conceding a lost match against CPUs, and a ranked table's ratings.

Against the match service with its deadline worker (CPUs play at once unless a test
asks for their pause) as in test_table.py, whose helpers these tests share. Waiting is on
the page's own state (`body[data-version]`, the roll button, movable pieces, texts),
never on a clock.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, name_myself, version
from tests.services.match.test_table import (
    Recorder,
    keys,
    match_of,
    my_decision,
    play_now,
    play_until,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

# (width, height, locale): a phone in Japanese, a desktop in English.
SIZES = ((375, 812, "ja-JP"), (1280, 800, "en-GB"))


async def roll_from_the_keyboard_until_a_choice(page: Page) -> None:
    """Rolls with Enter on the focused roll button until the roll leaves a choice of
    pieces (a roll with no move, or one played for the player, rolls again next turn)."""
    while True:
        await page.wait_for_function(
            "() => { const r = document.querySelector('#roll'); return !r.hidden && !r.disabled; }"
        )
        await page.focus("#roll")
        before = await version(page)
        await page.keyboard.press("Enter")
        await page.wait_for_function(
            """(v) => Number(document.body.dataset.version) > v
                 && (document.querySelector('#board .piece.movable:not(.chosen)[role=button]')
                     || ((r) => !r.hidden && !r.disabled)(document.querySelector('#roll')))""",
            arg=before,
        )
        if await page.locator("#board .piece.movable:not(.chosen)[role=button]").count():
            return


@pytest.mark.parametrize(("width", "height", "locale"), SIZES)
async def test_the_movable_pieces_come_next_after_the_roll_button_in_tab_order(
    site: Site, browser: Browser, width: int, height: int, locale: str
) -> None:
    """Rolled with Enter on the roll button, one Tab reaches a movable piece (not the
    stamps, the players or the log first), and Enter on it moves it."""
    async with person(browser, locale=locale, width=width, height=height) as (page, errors):
        await name_myself(page, site, "kei")
        await play_now(page)
        await roll_from_the_keyboard_until_a_choice(page)
        await page.keyboard.press("Tab")
        focused = page.locator(":focus")
        await expect(focused).to_have_class(re.compile(r"\bpiece\b.*\bmovable\b"))
        await expect(focused).to_have_attribute("role", "button")
        before = await version(page)
        await page.keyboard.press("Enter")
        await page.wait_for_function("(v) => Number(document.body.dataset.version) > v", arg=before)
        assert errors == []


# ------------------------------------------------------------------ the only move, for you

ONE_DISTINCT_MOVE = """() => {
  const pieces = [...document.querySelectorAll('#board .piece.movable[role=button]')];
  const labels = new Set(pieces.map((p) => p.getAttribute('aria-label').replace(/\\d+: /, '')));
  return pieces.length > 0 && labels.size === 1;
}"""


@pytest.mark.parametrize(("width", "height", "locale"), SIZES)
async def test_the_only_move_is_played_for_the_player_and_said_so(
    site: Site, browser: Browser, width: int, height: int, locale: str
) -> None:
    """With the setting on (the default), a roll that leaves one move plays it: the turn
    line says so while it goes, the log line says it was played for the player (again
    after a reload), and the move is the player's own command with their die."""
    said = {
        "ja-JP": (
            "動かせる手は1つだけです。自動で動かしています…",
            "（動かせる手が1つだけなので自動で動かしました）",
        ),
        "en-GB": ("Only one move: playing it for you…", "(played for you: the only move)"),
    }[locale]
    async with person(browser, locale=locale, width=width, height=height) as (page, errors):
        await name_myself(page, site, "kei")
        await play_now(page)
        await expect(page.locator("#auto-move")).to_be_checked()
        recorder = Recorder(page)
        await recorder.start()
        auto = page.locator("#log li[data-auto=true]")
        while not await auto.count():
            what = await my_decision(page)
            assert what != "over", "the match ended before a roll with one move"
            before = await version(page)
            await keys(page, what)
            await page.wait_for_function(
                "(v) => Number(document.body.dataset.version) > v", arg=before
            )
        await expect(auto.first).to_contain_text(said[1])
        assert said[0] in [r["status"] for r in await recorder.records()]
        # The move was the player's own command, with the player's rolled die.
        version_of = int(await auto.first.get_attribute("data-version") or "-1")
        moved = site.events(await match_of(page, site))[version_of]
        assert moved["type"] == "PieceMoved" and moved["data"]["seat"] == 0
        assert moved["data"]["die"] is not None
        # A reload says the same log: the tab kept which move it played for the player.
        await page.reload()
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await expect(page.locator(f'#log li[data-version="{version_of}"]')).to_contain_text(said[1])
        assert errors == []


async def test_switched_off_the_only_move_waits_for_the_player(
    site: Site, browser: Browser
) -> None:
    """Unticked (kept on this device), a roll with one move offers it and waits: the turn
    line asks the player to choose."""
    async with person(browser, width=375, height=812) as (page, errors):
        await name_myself(page, site, "kei")
        await play_now(page)
        await page.locator("#auto-move").uncheck()
        assert await page.evaluate("localStorage.getItem('ludo.autoMove')") == "off"
        await play_until(page, ONE_DISTINCT_MOVE)
        await expect(page.locator("#status")).to_have_text(re.compile(r"^You rolled \d\."))
        assert await page.locator("#log li[data-auto=true]").count() == 0
        await page.reload()
        await expect(page.locator("#auto-move")).not_to_be_checked()
        assert errors == []


# ------------------------------------------------------------------------ the CPUs' speed


@pytest.mark.parametrize(("width", "height", "locale"), SIZES)
async def test_the_host_makes_the_cpus_fast_from_the_keyboard_during_the_match(
    site: Site, browser: Browser, width: int, height: int, locale: str
) -> None:
    """The host's CPU speed is two radio buttons in words at the table (normal checked);
    an arrow key picks fast, which the party then holds (its frame and its read say so)."""
    fast = {"ja-JP": "速い", "en-GB": "Fast"}[locale]
    async with person(browser, locale=locale, width=width, height=height) as (page, errors):
        await name_myself(page, site, "kei")
        await play_now(page)
        speed = page.locator("#match-speed")
        await expect(speed).to_be_visible()
        await expect(speed.locator("label").nth(1)).to_have_text(fast)
        await expect(speed.locator("input[value=normal]")).to_be_checked()
        await speed.locator("input[value=normal]").focus()
        await page.keyboard.press("ArrowRight")
        party_id = page.url.rsplit("/", 1)[1]
        # The party's frame says fast (the server's word), and the radio stays on it.
        await expect(speed).to_have_attribute("data-speed", "fast")
        await expect(speed.locator("input[value=fast]")).to_be_checked()
        party = site.http.get(f"/api/parties/{party_id}").json()
        assert party["cpu_speed"] == "fast"
        assert await small_targets(page) == []
        await shot(page, f"table-speed-{width}x{height}-{locale[:2]}.png", full_page=False)
        assert errors == []


# ------------------------------------------------------------------------------ conceding


@pytest.mark.parametrize(("width", "height", "locale"), SIZES)
async def test_a_lost_match_against_cpus_is_conceded_after_a_question_in_words(
    site: Site, browser: Browser, width: int, height: int, locale: str
) -> None:
    """Concede opens a dialog saying what it does (the focus on "Keep playing"; Escape
    keeps playing); Tab and Enter on Concede end the match at once, the player last and
    the log saying so."""
    words = {
        "ja-JP": (
            "投了する",
            "投了しますか？",
            "最下位",
            "あなたが投了しました。あなたは最下位です。",
        ),
        "en-GB": (
            "Concede",
            "Concede the match?",
            "placed last",
            "You conceded and are placed last.",
        ),
    }[locale]
    async with person(browser, locale=locale, width=width, height=height) as (page, errors):
        await name_myself(page, site, "kei")
        await play_now(page)
        concede = page.locator("#concede")
        await expect(concede).to_have_text(words[0])
        dialog = page.locator("#concede-dialog")
        await concede.click()
        await expect(dialog).to_be_visible()
        await expect(dialog.locator("h2")).to_have_text(words[1])
        await expect(dialog.locator("#concede-text")).to_contain_text(words[2])
        await expect(page.locator("#concede-cancel")).to_be_focused()
        assert await axe_violations(page) == []
        await shot(page, f"table-concede-{width}x{height}-{locale[:2]}.png", full_page=False)
        await page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()
        assert site.state(await match_of(page, site))["status"] == "playing"
        await concede.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#concede-cancel")).to_be_focused()
        await page.keyboard.press("Tab")
        await expect(page.locator("#concede-confirm")).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator("#result")).to_be_visible()
        await expect(page.locator('#placements > li[data-seat="0"]')).to_have_attribute(
            "data-place", "4"
        )
        await expect(page.locator("#log li").filter(has_text=words[3])).to_have_count(1)
        assert site.state(await match_of(page, site))["placements"][0] == 4
        assert errors == []


# ------------------------------------------------------------------------ a ranked table


def ranked_match(site: Site, tokens: list[dict[str, str]]) -> tuple[str, str]:
    """A ranked two-seat table of the two guests, started: (party id, match id)."""
    party = site.http.post("/api/parties", json={"seats": 2, "ranked": True}, headers=tokens[0])
    assert party.status_code == 201, party.text
    party_id = party.json()["id"]
    joined = site.http.post(f"/api/parties/{party_id}/join", json={}, headers=tokens[1])
    assert joined.status_code == 200, joined.text
    started = site.http.post(f"/api/parties/{party_id}/start", headers=tokens[0])
    assert started.status_code == 201, started.text
    return party_id, started.json()["match_id"]


def play_out(site: Site, match_id: str, tokens: list[dict[str, str]]) -> None:
    """Both seats play the match to its end over HTTP (roll, then the first legal move)."""
    for _ in range(5000):
        state = site.state(match_id)
        if state["status"] == "finished":
            return
        who = tokens[state["turn"]]
        if state["phase"] == "roll":
            r = site.http.post(f"/api/matches/{match_id}/roll", headers=who)
        else:
            moves = site.http.get(f"/api/matches/{match_id}/moves").json()["moves"]
            r = site.http.post(
                f"/api/matches/{match_id}/move", json={"piece": moves[0]["piece"]}, headers=who
            )
        assert r.status_code == 200, r.text
    raise AssertionError("the match did not end")


async def test_a_ranked_table_shows_its_badge_and_each_players_rating(
    site: Site, browser: Browser
) -> None:
    """At a ranked table (after a rated match between the two, so the ratings are not
    the starting 1500), each page shows the Ranked badge in the turn box and each player's
    rating beside their name, in its language, as the reputation read gives it; nobody
    may concede; axe finds nothing serious."""
    guests = []
    for name in ("ann", "ben"):
        body = site.http.post("/api/players", json={"name": name}).json()
        guests.append({"id": body["id"], "name": name, "token": body["token"]})
    tokens = [{"Authorization": f"Bearer {g['token']}"} for g in guests]
    _, first = ranked_match(site, tokens)
    play_out(site, first, tokens)

    async def rated() -> bool:
        return bool(site.http.get(f"/api/ratings/matches/{first}").json()["rated"])

    await wait_until(rated, 30, what="the first match rated")
    ids = ",".join(g["id"] for g in guests)
    shown = [
        p["rating"] for p in site.http.get(f"/api/players/reputation?ids={ids}").json()["players"]
    ]
    assert shown[0] != shown[1]  # one won: neither is the starting rating any more
    party_id, _ = ranked_match(site, tokens)
    pages = (
        ("ja-JP", 375, 812, "ランク戦", "レート {}"),
        ("en-GB", 1280, 800, "Ranked", "Rating {}"),
    )
    for (locale, width, height, badge, rating), guest in zip(pages, guests, strict=True):
        async with person(browser, locale=locale, width=width, height=height) as (page, errors):
            await page.add_init_script(
                f"localStorage.setItem('ludo.guest', {json.dumps(json.dumps(guest))})"
            )
            await page.goto(f"{site.url}/party/{party_id}")
            await expect(page.locator("body[data-ready=true]")).to_be_attached()
            await expect(page.locator("#ranked-badge")).to_be_visible()
            await expect(page.locator("#ranked-badge")).to_have_text(badge)
            for seat, value in enumerate(shown):
                tag = page.locator(f'#players li[data-seat="{seat}"] .tag.rating')
                await expect(tag).to_have_text(rating.format(value))
            await expect(page.locator("#concede")).to_be_hidden()
            assert await axe_violations(page) == []
            await shot(page, f"table-ranked-{width}x{height}-{locale[:2]}.png", full_page=False)
            assert errors == []
