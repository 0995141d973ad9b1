"""The lobby as issue 28 arranged it, in a real browser: quick play first, then the tables
this device's guest sits at, then the open parties, then the party form with its local
rules folded behind their summary; in Japanese and English, on a 375×812 phone and a
desktop.

Debian's Chromium driven by Playwright (tests/browser.py) against the match and ranking
services on loopback ports (this folder's conftest.py), quick play against the pool
service of docs/pools.md (pairing passes on, as `ludo up` runs them). The waiting is
on the page's own state (`body[data-ready]`, `body[data-tables]`, rows drawn), never on a
clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.eventstore import EventStore
from services.shared.standing import standing
from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, create_party, name_myself, play_my_turns
from tests.services.ranking.finished_matches import write_match
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

PHONE = (375, 812)
DESKTOP = (1280, 800)
LOCALES = {"ja": "ja-JP", "en": "en-GB"}
# The words the tests read, in each language.
WORDS = {
    "ja": {
        "quick": "クイック対戦",
        "enter": "対戦相手を探す",
        "leave": "待つのをやめる",
        "fold": "ローカルルール: このサイトの初期値（12項目）",
        "fold_changed": "ローカルルール: このサイトの初期値から1項目を変更",
        "return": "戻る",
        "open": "メンバー募集中（{taken}/{n}人）",
        "playing": "対局中",
    },
    "en": {
        "quick": "Quick play",
        "enter": "Find opponents",
        "leave": "Stop waiting",
        "fold": "Local rules: This site's defaults (12 rules)",
        "fold_changed": "Local rules: This site's defaults, 1 changed",
        "return": "Return",
        "open": "Waiting for players ({taken}/{n})",
        "playing": "Match in play",
    },
}

# The top and bottom of each of the lobby's parts, in page coordinates.
_BOXES = """() => Object.fromEntries(
  ["section.intro", "#quick", "#mine", "#open", "#create", "#quick-button", "#play-now"]
    .map((s) => { const n = document.querySelector(s);
                  const b = n.getBoundingClientRect();
                  return [s, { top: b.top + scrollY, bottom: b.bottom + scrollY,
                               shown: n.checkVisibility() }]; }))"""


async def visit(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


def guest_of(site: Site, name: str) -> dict[str, str]:
    """A guest made over HTTP: its id, name and bearer header."""
    made = site.http.post("/api/players", json={"name": name}).json()
    return {"id": made["id"], "name": name, "auth": f"Bearer {made['token']}"}


def post(site: Site, path: str, who: dict[str, str], body: Any = None) -> dict[str, Any]:
    """A command over HTTP as `who`, asserted to succeed; its answer."""
    r = site.http.post(path, json=body, headers={"Authorization": who["auth"]})
    assert r.status_code in (200, 201), r.text
    answer: dict[str, Any] = r.json()
    return answer


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_quick_play_comes_first_and_the_rules_are_folded(
    site: Site, browser: Browser, lang: str
) -> None:
    """At 375×812 quick play (its big button too) is in the first screen, the open
    parties come before the party form, and the twelve local rules are folded behind a
    one-line summary that opens to all twelve and counts a change; ranked hides the CPU
    wait and says how pairing by rating works; 44 px targets, nothing serious to axe."""
    words = WORDS[lang]
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        await visit(page, site.url + "/")
        await expect(page.locator("#quick h2")).to_have_text(words["quick"])
        await expect(page.locator("#quick-button")).to_have_text(words["enter"])
        boxes: dict[str, Any] = await page.evaluate(_BOXES)
        order = ["section.intro", "#quick", "#open", "#create"]
        tops = [boxes[s]["top"] for s in order]
        assert tops == sorted(tops), boxes
        assert boxes["#quick-button"]["bottom"] <= PHONE[1], boxes
        assert not boxes["#mine"]["shown"]  # a new visitor sits at no table
        await shot(page, f"lobby-first-375-{lang}.png", full_page=False)
        assert await small_targets(page) == []
        # The rules: folded, one line; open, all twelve; a change is counted.
        summary = page.locator("#rules-fold summary")
        await expect(summary).to_have_text(words["fold"])
        await expect(page.locator("#rules-table")).to_be_hidden()
        await summary.click()
        await expect(page.locator("#rules-table tbody tr")).to_have_count(12)
        for row in await page.locator("#rules-table tbody tr").all():
            await expect(row).to_be_visible()
        await page.select_option("#opt-three_sixes", "false")
        await expect(summary).to_have_text(words["fold_changed"])
        await summary.press("Enter")  # the keyboard folds it again
        await expect(page.locator("#rules-table")).to_be_hidden()
        # Ranked: no CPU wait to choose, a word on pairing by rating instead.
        await expect(page.locator("#q-wait-field")).to_be_visible()
        await page.click("#q-mode label:has(input[value='ranked'])")
        await expect(page.locator("#q-wait-field")).to_be_hidden()
        await expect(page.locator("#q-ranked-note")).to_be_visible()
        await page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
        await page.click("#q-mode label:has(input[value='casual'])")
        await summary.click()
        await expect(page.locator("#rules-table")).to_be_visible()
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await summary.click()
        await shot(page, f"lobby-desktop-{lang}.png")
        assert errors == []


async def test_a_guest_back_in_the_lobby_returns_to_their_table_in_one_press(
    site: Site, browser: Browser
) -> None:
    """A guest who created a party and went back to the lobby finds it under "your
    tables" and returns in one press; the row follows the party live (a guest sits down,
    the match starts) and then returns to the match, in both languages; its targets are
    44 px and axe finds nothing serious."""
    for lang, locale in LOCALES.items():
        words = WORDS[lang]
        async with person(browser, locale=locale, width=PHONE[0], height=PHONE[1]) as (
            page,
            errors,
        ):
            await name_myself(page, site, f"host-{lang}")
            party_id = await create_party(page, seats=3, preset="standard")
            await visit(page, site.url + "/")
            row = page.locator(f"#my-tables li[data-table='{party_id}']")
            await expect(row).to_contain_text(words["open"].format(taken=1, n=3))
            await expect(page.locator("#mine")).to_be_visible()
            boxes: dict[str, Any] = await page.evaluate(_BOXES)
            assert boxes["#quick"]["top"] < boxes["#mine"]["top"] < boxes["#open"]["top"]
            # Live: a guest sits down, then the host's seat count follows.
            host = await page.evaluate("JSON.parse(localStorage.getItem('ludo.guest'))")
            host["auth"] = f"Bearer {host['token']}"
            guest = guest_of(site, "guest")
            post(site, f"/api/parties/{party_id}/join", guest, {"client_seed": "g"})
            await expect(row).to_contain_text(words["open"].format(taken=2, n=3))
            await page.evaluate("() => window.scrollTo(0, 0)")
            await shot(page, f"lobby-tables-375-{lang}.png")
            # Listed, the tables keep the page's promises: large targets, nothing serious to axe.
            assert await small_targets(page) == []
            assert await axe_violations(page) == []
            # One press returns to the party's table.
            await row.get_by_role("link").click()
            await page.wait_for_url(f"{site.url}/party/{party_id}")
            await expect(page.locator("#seats-list li")).to_have_count(3)
            # The match starts while the host is in the lobby: the row says so.
            await visit(page, site.url + "/")
            await expect(row).to_contain_text(words["open"].format(taken=2, n=3))
            post(site, f"/api/parties/{party_id}/cpus", host, {"level": "easy"})
            post(site, f"/api/parties/{party_id}/start", host)
            await expect(row).to_have_attribute("data-status", "playing")
            await expect(row).to_contain_text(words["playing"])
            link = row.get_by_role("link")
            await expect(link).to_have_text(words["return"])
            await link.press("Enter")
            await page.wait_for_url(re.compile(rf"/party/{party_id}$"))
            await expect(page.locator("#match-view")).to_be_visible()
            assert errors == []


async def test_two_guests_enter_a_pool_wait_in_words_and_are_seated(
    site: Site, browser: Browser
) -> None:
    """One press enters a people-only 2-player pool: the page says the wait and how many
    wait, the counts come live, a second press leaves; when a second guest enters, both
    pages are taken to the same match."""
    async with (
        person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (a, a_errors),
        person(browser) as (b, b_errors),
    ):
        for page, name in ((a, "みか"), (b, "ken")):
            await name_myself(page, site, name)
            await page.click("#q-seats label:has(input[value='2'])")
            await page.click("#q-wait label:has(input[value='people'])")
        await a.click("#quick-button")
        await expect(a.locator("#quick-button")).to_have_text(WORDS["ja"]["leave"])
        await expect(a.locator("#quick-clock")).to_contain_text("このプールで1人が待っています")
        await expect(a.locator("#quick-detail")).to_contain_text("人がそろうまで待ちます")
        await expect(b.locator("#pool-counts")).to_contain_text("2 players, casual: 1 waiting")
        await shot(a, "lobby-waiting-375-ja.png", full_page=False)
        # A second press leaves; the count follows on the other page.
        await a.click("#quick-button")
        await expect(a.locator("#quick-button")).to_have_text(WORDS["ja"]["enter"])
        await expect(b.locator("#pool-counts")).to_contain_text("2 players, casual: 0 waiting")
        await a.click("#quick-button")
        await expect(a.locator("body[data-pool='2-casual']")).to_be_attached()
        await b.click("#quick-button")
        await a.wait_for_url(re.compile(r"/match/[0-9a-f-]{36}$"))
        await b.wait_for_url(re.compile(r"/match/[0-9a-f-]{36}$"))
        assert a.url == b.url
        assert a_errors == b_errors == []


async def test_a_ranked_pool_says_its_rating_range(site: Site, browser: Browser) -> None:
    """Waiting in a ranked pool, the page says which ratings it accepts and that the
    range widens with the wait."""
    async with person(browser) as (page, errors):
        await name_myself(page, site, "rin")
        await page.click("#q-mode label:has(input[value='ranked'])")
        await page.click("#quick-button")
        await expect(page.locator("#quick-detail")).to_contain_text(
            re.compile(r"Accepting ratings \d+–\d+, widening as you wait")
        )
        await page.click("#quick-button")
        await expect(page.locator("#quick-button")).to_have_text(WORDS["en"]["enter"])
        assert errors == []


async def test_a_lone_guest_in_the_four_player_pool_plays_three_cpus_after_the_wait(
    site: Site, browser: Browser
) -> None:
    """Alone in the 4-player casual pool with a 10 s CPU wait, a guest on a phone is taken
    to a started match whose other three seats are CPUs."""
    async with person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (page, errors):
        await name_myself(page, site, "ひとり")
        await page.click("#q-seats label:has(input[value='4'])")
        await page.click("#q-wait label:has(input[value='10'])")
        await page.click("#quick-button")
        await expect(page.locator("#quick-clock")).to_contain_text("このプールで1人が待っています")
        await page.wait_for_url(re.compile(r"/match/[0-9a-f-]{36}$"), timeout=60_000)
        players = page.locator("#players li")
        await expect(players).to_have_count(4)
        await expect(players.filter(has_text="CPU")).to_have_count(3)
        await expect(players.filter(has_text="ひとり")).to_have_count(1)
        assert errors == []


async def test_a_leaver_is_told_why_and_until_when_ranked_pools_are_closed(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A guest who left three ranked matches today presses Quick play, ranked: the page
    says ranked play is closed to them until a time, and why; a casual pool still takes
    them."""
    async with person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (page, errors):
        await name_myself(page, site, "lea")
        me = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        for _ in range(3):
            await write_match(engine, pg_store, [me["id"], None], [2, 1], stood_in={0: "left"})

        async def paused() -> bool:
            mine = await standing(engine, me["id"], dt.datetime.now(dt.UTC))
            return mine.ranked_block is not None

        await wait_until(paused, what="the ranking service folds the three abandons")
        await page.click("#q-seats label:has(input[value='2'])")
        await page.click("#q-mode label:has(input[value='ranked'])")
        await page.click("#quick-button")
        said = page.locator("#quick-error")
        await expect(said).to_contain_text(
            re.compile(r"ランク戦は.+まで参加できません（24時間で3回途中で抜けたため）")
        )
        await expect(page.locator("#quick-button")).to_have_text(WORDS["ja"]["enter"])
        await shot(page, "lobby-ranked-paused-375-ja.png", full_page=False)
        await page.click("#q-mode label:has(input[value='casual'])")
        await page.click("#quick-button")
        await expect(page.locator("#quick-button")).to_have_text(WORDS["ja"]["leave"])
        # The browser logs the refused entry's status itself; nothing else went wrong.
        assert [e for e in errors if "status of 403" not in e] == []


async def test_two_guests_press_ranked_quick_play_and_play_it_out(
    site: Site, browser: Browser
) -> None:
    """Two browsers (Japanese on a phone, English on a desktop) press Quick play, 2
    players, ranked: both land at the same table, play it out by clicking, and both see
    the result with its rating change."""
    async with (
        person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (a, a_errors),
        person(browser) as (b, b_errors),
    ):
        for page, name in ((a, "みか"), (b, "ken")):
            await name_myself(page, site, name)
            await page.click("#q-seats label:has(input[value='2'])")
            await page.click("#q-mode label:has(input[value='ranked'])")
        await a.click("#quick-button")
        await expect(a.locator("body[data-pool='2-ranked']")).to_be_attached()
        await b.click("#quick-button")
        await a.wait_for_url(re.compile(r"/match/[0-9a-f-]{36}$"))
        await b.wait_for_url(re.compile(r"/match/[0-9a-f-]{36}$"))
        assert a.url == b.url
        match_id = a.url.rsplit("/", 1)[1]
        assert site.state(match_id)["seats"][0]["name"] == "みか"
        await asyncio.gather(play_my_turns(a), play_my_turns(b))
        for page in (a, b):
            await expect(page.locator("#result")).to_be_visible()
            await expect(
                page.locator("#placements .rating.up, #placements .rating.down")
            ).to_have_count(2)
        assert a_errors == b_errors == []


async def test_the_open_parties_show_each_hosts_completion_rate(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A host who finished one match and left another opens a party: the lobby lists it
    with their completion rate beside their name, in words of the page's language."""
    host = guest_of(site, "hana")
    await write_match(engine, pg_store, [host["id"], None], [1, 2])
    await write_match(engine, pg_store, [host["id"], None], [2, 1], stood_in={0: "left"})

    async def folded() -> bool:
        mine = await standing(engine, host["id"], dt.datetime.now(dt.UTC))
        return mine.completion is not None and mine.completion.started == 2

    await wait_until(folded, what="the ranking service folds both matches")
    party = post(site, "/api/parties", host, {"seats": 2})
    async with person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (page, errors):
        await visit(page, site.url + "/")
        row = page.locator(f"#parties li[data-party='{party['id']}']")
        await expect(row).to_contain_text("hanaの卓")
        await expect(row.locator(".completion")).to_have_text("完走率 50%")
        assert errors == []
