"""The arena pages in a real browser (docs/site.md, The arenas; docs/arenas.md): the list
(`/tournaments`) and one arena (`/tournament/{id}`) on a 375×812 phone and a desktop in
Japanese and English, a private arena created from the form, and the main story: two
guests join a running arena, are taken to their table by themselves, play it out, come
back to the arena by themselves, are paired again, and see the standings move and the
podium once the arena's clock has run out during their second match.

Debian's Chromium driven by Playwright (tests/browser.py) against the match and ranking
services on loopback ports (tests/services/match/site_pages.py), the arenas' runner on (it
pairs, scores and ends the arenas as `ludo up` runs it) and no recurring arena. The
arenas are created through the service (`Arenas.create`, with a start in the past) on the
test's database. The matches are played over the HTTP API with the guests' own tokens
(what the table sends, faster than clicking: the table's own play is test_table.py's).
The waiting is on the pages' own state (`body[data-status]`, `body[data-you]`, rows
drawn, the URL), never on a clock.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.parts import MatchParts
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from services.shared.standing import standing
from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, name_myself, running_site
from tests.services.ranking.finished_matches import write_match
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

PHONE = (375, 812)
DESKTOP = (1280, 800)
LOCALES = {"ja": "ja-JP", "en": "en-GB"}
PARTY = re.compile(r"/party/[0-9a-f-]{36}$")
# The words the tests read, in each language.
WORDS: dict[str, dict[str, str | re.Pattern[str]]] = {
    "ja": {
        "title": "アリーナ",
        "left": re.compile(r"残り \d+:\d\d"),
        "starts": re.compile(r"開始まで \d+:\d\d"),
        "not_joined": "まだ参加していません。",
        "waiting": "対戦相手を待っています",
        "paused": "一時停止中です",
        "join": "参加する",
        "winner": "優勝",
        "name_needed": "名前を入れてください",
    },
    "en": {
        "title": "Arenas",
        "left": re.compile(r"\d+:\d\d left"),
        "starts": re.compile(r"Starts in \d+:\d\d"),
        "not_joined": "You have not joined.",
        "waiting": "Waiting for opponents",
        "paused": "Paused",
        "join": "Join",
        "winner": "Winner",
        "name_needed": "Enter a name",
    },
}


@pytest.fixture
def site(database_url: str, tmp_path: Path) -> Iterator[Site]:
    """The services with the arenas' runner and no recurring arena."""
    with running_site(database_url, tmp_path, arena_schedule="[]") as site:
        yield site


async def new_arena(
    engine: AsyncEngine,
    store: EventStore,
    *,
    name: str,
    ends_in: float,
    minutes: int = 20,
    private: bool = False,
) -> str:
    """An arena of two seats created through the service, its clock running out in
    `ends_in` seconds (negative: over already; more than its length: upcoming)."""
    settings = Settings(data_dir=Path("unused"), arena_schedule="[]")
    service = MatchParts(engine, store, settings)
    state = await service.arenas.create(
        name=name,
        seats=2,
        rules="standard",
        turn_limit=30,
        minutes=minutes,
        starts_at=time.time() + ends_in - minutes * 60,
        private=private,
    )
    assert state.created is not None
    return state.created.arena_id


def run_the_clock_out(site: Site, *, after: float) -> None:
    """The arenas' clock in the running match service moved `after` seconds on (plus one),
    as if that time had passed: the runner ends what ran out at its next pass, and every
    view and socket frame reads the same clock."""
    parts: MatchParts = site.match.app.state.parts
    parts.arenas.clock = lambda: time.time() + after + 1


async def visit(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


async def no_page_scroll(page: Page) -> None:
    """The page is no wider than the window (nothing scrolls sideways)."""
    wide = await page.evaluate("document.documentElement.scrollWidth")
    assert wide <= await page.evaluate("document.documentElement.clientWidth")


async def token(page: Page) -> str:
    """The bearer header of the guest this page's device keeps."""
    guest: dict[str, str] = await page.evaluate(
        "() => JSON.parse(localStorage.getItem('ludo.guest'))"
    )
    return f"Bearer {guest['token']}"


async def play_out(http: httpx.AsyncClient, match_id: str, auth: dict[str, str]) -> None:
    """The match played to its end over the API by its seats' guests (`auth`: player id
    -> bearer header): the seat to act rolls, or moves its first legal piece (one read of
    the legal moves a step); a seat a CPU stands in for (its turns timed out) is taken
    back first, and a turn the CPU is finishing is left to it."""
    url = f"/api/matches/{match_id}"
    players: list[str] = [s["player_id"] for s in (await http.get(url)).json()["seats"]]
    for _ in range(5000):
        now: dict[str, Any] = (await http.get(f"{url}/moves")).json()
        if now["phase"] == "over":
            return
        who = {"Authorization": auth[players[now["seat"]]]}
        if now["phase"] == "roll":
            r = await http.post(f"{url}/roll", headers=who)
        else:
            r = await http.post(
                f"{url}/move", json={"piece": now["moves"][0]["piece"]}, headers=who
            )
        if r.status_code == 200:
            continue
        # Refused: a timer or a CPU acted first (409), or a CPU plays for the seat.
        state: dict[str, Any] = (await http.get(url)).json()
        if state["status"] == "playing" and state["seats"][state["turn"]].get("stood_in"):
            await http.post(f"{url}/reclaim", headers=who)
    raise AssertionError("the match did not end")


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_the_arena_pages_on_a_phone_and_a_desktop(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore, lang: str
) -> None:
    """Both arena pages work at 375×812 and 1280×800 in words, without sideways scroll.

    The list shows a live arena with its time left, an upcoming one with its countdown
    and a finished one with its winner; one arena says its clock and that you have not
    joined; a visitor with no name is asked for one, joins, pauses and continues, each
    state said in words; a private arena made with the form shows its link. Every target
    is 44 px, axe finds nothing serious."""
    words = WORDS[lang]
    live = await new_arena(engine, pg_store, name="Live arena", ends_in=600)
    await new_arena(engine, pg_store, name="Later arena", ends_in=1500)
    done = await new_arena(engine, pg_store, name="Done arena", ends_in=-60)
    ann = site.http.post("/api/players", json={"name": "ann"}).json()
    r = site.http.post(
        f"/api/tournaments/{live}/join",
        json={"client_seed": "a"},
        headers={"Authorization": f"Bearer {ann['token']}"},
    )
    assert r.status_code == 200, r.text
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        await visit(page, site.url + "/tournaments")
        await expect(page.locator("#arena-list h1")).to_have_text(words["title"])
        live_row = page.locator(f"#live li[data-arena='{live}']")
        await expect(live_row).to_contain_text(words["left"])
        await expect(page.locator("#upcoming li").first).to_contain_text(words["starts"])
        # The runner ends the arena whose clock ran out: it is listed with its result.
        done_row = page.locator(f"#finished li[data-arena='{done}']")
        await expect(done_row).to_be_attached(timeout=20_000)
        await expect(page.locator("header.site nav a[aria-current=page]")).to_have_text(
            words["title"]
        )
        for size in (PHONE, DESKTOP):
            await page.set_viewport_size({"width": size[0], "height": size[1]})
            await no_page_scroll(page)
            assert await small_targets(page) == []
            assert await axe_violations(page) == []
        await shot(page, f"arenas-desktop-{lang}.png")
        await page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
        await shot(page, f"arenas-375-{lang}.png")
        # One arena: its clock, and the visitor not joined yet.
        await live_row.get_by_role("link").click()
        await page.wait_for_url(f"{site.url}/tournament/{live}")
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await expect(page.locator("#clock")).to_have_text(words["left"])
        await expect(page.locator("#you-state")).to_have_text(words["not_joined"])
        await expect(page.locator("#standings tbody tr")).to_have_count(1)
        # Join asks for a name first, as the lobby does.
        await page.click("#join")
        await expect(page.locator("#message")).to_contain_text(words["name_needed"])
        await page.fill("#join-name", "みか" if lang == "ja" else "mika")
        await page.click("#join")
        await expect(page.locator("body[data-you=waiting]")).to_be_attached()
        await expect(page.locator("#you-state")).to_contain_text(words["waiting"])
        await expect(page.locator("#standings tbody tr")).to_have_count(2)
        await expect(page.locator("#standings tr.me")).to_have_count(1)
        await page.click("#pause")
        await expect(page.locator("body[data-you=paused]")).to_be_attached()
        await expect(page.locator("#you-state")).to_contain_text(words["paused"])
        await page.locator("#continue").press("Enter")  # the keyboard too
        await expect(page.locator("body[data-you=waiting]")).to_be_attached()
        await page.click("#pause")  # paused, so that nobody is paired while measured
        await expect(page.locator("body[data-you=paused]")).to_be_attached()
        for size in (DESKTOP, PHONE):
            await page.set_viewport_size({"width": size[0], "height": size[1]})
            await no_page_scroll(page)
            assert await small_targets(page) == []
            assert await axe_violations(page) == []
            name = "desktop" if size == DESKTOP else "375"
            await shot(page, f"arena-{name}-{lang}.png")
        # A private arena from the form: its page, with its link to copy.
        await visit(page, site.url + "/tournaments")
        await page.fill("#arena-name", "Friday" if lang == "en" else "金曜の会")
        await page.click("#c-seats label:has(input[value='4'])")
        await page.click("#c-rules label:has(input[value='bga'])")
        await page.click("#c-minutes label:has(input[value='30'])")
        await page.click("#create-button")
        await page.wait_for_url(re.compile(r"/tournament/[0-9a-f-]{36}$"))
        await expect(page.locator("body[data-status=upcoming]")).to_be_attached()
        await expect(page.locator("#clock")).to_have_text(words["starts"])
        await expect(page.locator("#share-link")).to_have_value(page.url)
        await expect(page.locator("#arena-tags")).to_contain_text("Board Game Arena")
        assert await small_targets(page) == []
        assert errors == []


# The create and cancel forms' own words, in each language.
FORM_WORDS: dict[str, dict[str, str]] = {
    "ja": {
        "plain": "プライベートアリーナ",
        "me": "みか",
        "named": "みかのアリーナ",
        "name_needed": "名前を入れてください（1〜32文字）",
        "bad_name": "アリーナの名前を入れてください（1〜60文字）。",
        "bad_reason": "中止する理由を入れてください（1〜200文字）。",
        "reason": "日程の都合",
        "cancelled": "中止されました: 日程の都合",
    },
    "en": {
        "plain": "Private arena",
        "me": "mika",
        "named": "mika's arena",
        "name_needed": "Enter a name (1–32 characters)",
        "bad_name": "Enter the arena's name (1–60 characters).",
        "bad_reason": "Say why you cancel it (1–200 characters).",
        "reason": "wrong day",
        "cancelled": "Cancelled: wrong day",
    },
}


async def said_on(page: Page, field: str, text: str) -> None:
    """The page's own message says `text` about `field`: announced (role=alert), the field
    marked invalid, described by it, and focused, on a page that has not moved sideways."""
    message = page.locator("#message")
    await expect(message).to_have_text(text)
    await expect(message).to_have_attribute("role", "alert")
    await expect(page.locator(field)).to_have_attribute("aria-invalid", "true")
    await expect(page.locator(field)).to_have_attribute("aria-describedby", re.compile("message"))
    await expect(page.locator(field)).to_be_focused()


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_a_new_visitor_creates_an_arena_every_message_in_the_pages_words(
    site: Site, browser: Browser, lang: str
) -> None:
    """A new visitor's arena name is filled in, and every form message is the page's own,
    in its language, on the field.

    The name reads "Private arena", then "<their name>'s arena" as they type it. Create
    with a field left empty, and the creator's Cancel with no reason, say what to do in
    the page's language, on the field (never the browser's own bubble, in its own
    language), at 375×812 and 1280×800, every target 44 px, axe clean."""
    words = FORM_WORDS[lang]
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        await visit(page, site.url + "/tournaments")
        me, name = page.locator("#create-me"), page.locator("#arena-name")
        await expect(me).to_be_visible()
        await expect(name).to_have_value(words["plain"])
        await page.click("#create-button")  # no name of their own yet
        await said_on(page, "#create-me", words["name_needed"])
        for size in (PHONE, DESKTOP):
            await page.set_viewport_size({"width": size[0], "height": size[1]})
            await no_page_scroll(page)
            assert await small_targets(page) == []
            assert await axe_violations(page) == []
        await shot(page, f"arena-create-name-needed-desktop-{lang}.png")
        await page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
        await me.fill(words["me"])
        await expect(page.locator("#message")).to_be_hidden()
        await expect(name).to_have_value(words["named"])
        await name.fill("")
        await page.click("#create-button")
        await said_on(page, "#arena-name", words["bad_name"])
        assert await axe_violations(page) == []
        await shot(page, f"arena-create-bad-name-375-{lang}.png", full_page=False)
        await name.fill(words["named"] + "!")
        await expect(page.locator("#message")).to_be_hidden()
        await page.click("#create-button")
        await page.wait_for_url(re.compile(r"/tournament/[0-9a-f-]{36}$"))
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await expect(page.locator("#arena-name-title")).to_have_text(words["named"] + "!")
        # The creator's cancel asks for a reason the same way.
        await expect(page.locator("#cancel-form")).to_be_visible()
        await page.click("#cancel")
        await said_on(page, "#cancel-reason", words["bad_reason"])
        for size in (DESKTOP, PHONE):
            await page.set_viewport_size({"width": size[0], "height": size[1]})
            await no_page_scroll(page)
            assert await small_targets(page) == []
            assert await axe_violations(page) == []
        await shot(page, f"arena-cancel-bad-reason-375-{lang}.png")
        await page.fill("#cancel-reason", words["reason"])
        await expect(page.locator("#message")).to_be_hidden()
        await page.locator("#cancel-reason").press("Enter")  # the keyboard too
        await expect(page.locator("#clock")).to_have_text(words["cancelled"])
        assert errors == []


async def test_two_guests_play_an_arena_from_joining_to_the_podium(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Two guests join a running arena, play, are paired again and see the podium.

    Japanese on a phone, English on a desktop, and a third person watches. The two are
    taken to one table by themselves; it says it is an arena's match and has no もう一度.
    They play it out: one page goes back to the arena by itself and on to the next table
    (paired again), the other stays ("stay here") and is told with a link when its next
    match is ready; the watcher sees the standings move. The arena's clock runs out during
    the second match: once it is over, the first stays on the table, the second is taken
    back to the arena, and both see the podium and the two matches' replay links."""
    # Long enough never to run out by itself however slow the machine; the test runs the
    # arenas' clock out once the second match is under way (`run_the_clock_out`).
    arena_id = await new_arena(engine, pg_store, name="Story arena", ends_in=1000)
    http = httpx.AsyncClient(base_url=site.url, timeout=30)
    async with (
        person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (a, a_errors),
        person(browser, width=DESKTOP[0], height=DESKTOP[1]) as (b, b_errors),
        person(browser, width=DESKTOP[0], height=DESKTOP[1]) as (watcher, w_errors),
    ):
        arena_url = f"{site.url}/tournament/{arena_id}"
        await visit(watcher, arena_url)
        for page, name in ((a, "みか"), (b, "ken")):
            await name_myself(page, site, name)
            await visit(page, arena_url)
            await expect(page.locator("#join")).to_have_text(
                WORDS["ja"]["join"] if page is a else WORDS["en"]["join"]
            )
            await page.click("#join")
        # Paired: both pages go to the same table by themselves.
        await a.wait_for_url(PARTY)
        await b.wait_for_url(PARTY)
        assert a.url == b.url
        first_party = a.url.rsplit("/", 1)[1]
        auth = {
            (await a.evaluate("JSON.parse(localStorage.getItem('ludo.guest')).id")): await token(a),
            (await b.evaluate("JSON.parse(localStorage.getItem('ludo.guest')).id")): await token(b),
        }
        # The table says it is an arena's, with the arena's name as its link.
        for page, said in ((a, "アリーナの対局"), (b, "Arena match")):
            line = page.locator("#arena-line")
            await expect(line).to_contain_text(said)
            await expect(line.get_by_role("link")).to_have_text("Story arena")
            await expect(line.get_by_role("link")).to_have_attribute(
                "href", f"/tournament/{arena_id}"
            )
        await expect(a.locator("#match-view")).to_be_visible()
        await shot(a, "arena-table-375-ja.png", full_page=False)
        # The watcher sees the match running.
        await expect(watcher.locator("#running li")).to_have_count(1)
        await expect(watcher.locator("#running li a")).to_have_attribute(
            "href", re.compile(r"^/match/[0-9a-f-]{36}$")
        )
        party = site.http.get(f"/api/parties/{first_party}").json()
        assert party["arena_id"] == arena_id
        await play_out(http, party["match_id"], auth)
        # The end: no もう一度, "Back to the arena" said and done by itself.
        for page, said in ((a, "秒後にアリーナへ戻ります"), (b, "Back to the arena in")):
            await expect(page.locator("#result")).to_be_visible()
            await expect(page.locator("#rematch")).to_be_hidden()
            await expect(page.locator("#back-to-arena")).to_be_visible()
            await expect(page.locator("#arena-count")).to_contain_text(said)
        await shot(b, "arena-result-en.png", full_page=False)
        # The standings move on the watcher's page: the winner has 2 points.
        await expect(watcher.locator("#standings tbody tr[data-score='2']")).to_have_count(1)
        await expect(watcher.locator("#results li")).to_have_count(1)
        # The one stays on the table ("stay here"); the other goes back to the arena by
        # itself, and is taken on to the next table (paired again) by itself too.
        await b.click("#stay-here")
        await a.wait_for_url(lambda url: not url.endswith(first_party), timeout=30_000)
        await a.wait_for_url(PARTY, timeout=30_000)
        second_party = a.url.rsplit("/", 1)[1]
        # The one who stayed hears their next match is ready: a link, no move.
        await expect(b.locator("#arena-count")).to_have_text("Your next match is ready.")
        await expect(b.locator("#next-table")).to_have_attribute("href", f"/party/{second_party}")
        assert b.url.endswith(first_party)
        await b.locator("#next-table").press("Enter")
        await b.wait_for_url(PARTY)
        assert a.url == b.url
        assert second_party != first_party
        # The clock runs out during the second match (the watcher's page says so).
        run_the_clock_out(site, after=1000)
        await expect(watcher.locator("body[data-status=ended]")).to_be_attached()
        await expect(watcher.locator("#clock")).to_have_text(
            "Time is up: waiting for the matches still running to end."
        )
        await shot(watcher, "arena-ended-en.png")
        second = site.http.get(f"/api/parties/{second_party}").json()
        await play_out(http, second["match_id"], auth)
        # One stays on the table; the other goes back to the arena by itself.
        await expect(a.locator("#stay-here")).to_be_visible()
        await a.click("#stay-here")
        await expect(a.locator("#arena-count")).to_have_text("このページに残ります。")
        await b.wait_for_url(arena_url, timeout=30_000)
        for page in (b, watcher):
            await expect(page.locator("body[data-status=finished]")).to_be_attached(timeout=30_000)
            await expect(page.locator("#podium li")).to_have_count(2)
            await expect(page.locator("#results li")).to_have_count(2)
            await expect(page.locator("#results li a").first).to_have_attribute(
                "href", re.compile(r"^/replay/[0-9a-f-]{36}$")
            )
        await expect(b.locator("#clock")).to_have_text("The arena is over.")
        assert a.url.endswith(second_party)  # stayed
        await a.click("#back-to-arena")
        await a.wait_for_url(arena_url)
        await expect(a.locator("body[data-status=finished]")).to_be_attached()
        await expect(a.locator("#clock")).to_have_text("終了しました。")
        await expect(a.locator("#podium")).to_be_visible()
        await no_page_scroll(a)
        assert await small_targets(a) == []
        assert await axe_violations(a) == []
        await shot(a, "arena-podium-375-ja.png")
        await shot(b, "arena-podium-desktop-en.png")
        assert a_errors == b_errors == w_errors == []
    await http.aclose()


async def test_a_refusal_and_a_cancelled_arena_are_said_in_words(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A guest who left three ranked matches today presses Join: the page says until when
    and why arenas (ranked) are closed to them, and they stay out. A private arena its
    creator cancelled says so with the reason, and offers no Join."""
    live = await new_arena(engine, pg_store, name="Open arena", ends_in=600)
    async with person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (page, errors):
        await name_myself(page, site, "lea")
        me = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        for _ in range(3):
            await write_match(engine, pg_store, [me["id"], None], [2, 1], stood_in={0: "left"})

        async def paused() -> bool:
            mine = await standing(engine, me["id"], dt.datetime.now(dt.UTC))
            return mine.ranked_block is not None

        await wait_until(paused, what="the ranking service folds the three abandons")
        await visit(page, f"{site.url}/tournament/{live}")
        await page.click("#join")
        await expect(page.locator("#message")).to_contain_text(
            re.compile(
                r"アリーナ（ランク戦）には.+まで参加できません（24時間で3回途中で抜けたため）"
            )
        )
        await expect(page.locator("body[data-you=out]")).to_be_attached()
        await expect(page.locator("#join")).to_be_visible()
        await shot(page, "arena-refused-375-ja.png", full_page=False)
        # A private arena, cancelled by its creator.
        made = site.http.post(
            "/api/tournaments",
            json={"name": "雨の日", "starts_in": 300},
            headers={"Authorization": f"Bearer {me['token']}"},
        )
        assert made.status_code == 201, made.text
        arena_id = made.json()["tournament_id"]
        r = site.http.post(
            f"/api/tournaments/{arena_id}/cancel",
            json={"reason": "雨天のため"},
            headers={"Authorization": f"Bearer {me['token']}"},
        )
        assert r.status_code == 200, r.text
        await visit(page, f"{site.url}/tournament/{arena_id}")
        await expect(page.locator("#clock")).to_have_text("中止されました: 雨天のため")
        await expect(page.locator("#join")).to_be_hidden()
        await expect(page.locator("#share")).to_be_hidden()
        assert await small_targets(page) == []
        # The browser logs the refused join's status itself; nothing else went wrong.
        assert [e for e in errors if "status of 403" not in e] == []


async def test_a_socket_frame_older_than_the_pause_does_not_undo_it(
    site: Site, browser: Browser, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The arena's socket frames are throttled, so one folded before the player's pause can
    arrive after the pause's answer: the page keeps the newer view (by `version`) and the
    player stays paused, with Continue offered, never a Pause that the server refuses."""
    live = await new_arena(engine, pg_store, name="Stale arena", ends_in=600)
    frames: list[str] = []
    sockets: list[Any] = []

    def through(ws: Any) -> None:
        # Every frame passes as it is; the test keeps them, and may add one of its own.
        server = ws.connect_to_server()
        sockets.append(ws)

        def heard(message: str | bytes) -> None:
            frames.append(message if isinstance(message, str) else message.decode())
            ws.send(message)

        server.on_message(heard)

    async with person(browser, locale="en-GB", width=PHONE[0], height=PHONE[1]) as (page, errors):
        await page.route_web_socket(re.compile(r"/ws/tournament/"), through)
        await name_myself(page, site, "stella")
        await visit(page, f"{site.url}/tournament/{live}")
        await page.click("#join")
        await expect(page.locator("body[data-you=waiting]")).to_be_attached()

        def waiting_frame() -> dict[str, Any] | None:
            for text in reversed(frames):
                frame = json.loads(text)
                you = frame.get("arena", {}).get("you") if frame.get("type") == "arena" else None
                if you and you["state"] == "waiting":
                    return dict(frame["arena"])
            return None

        stale = await wait_until(waiting_frame, what="a frame showing the player waiting")
        await page.click("#pause")
        await expect(page.locator("body[data-you=paused]")).to_be_attached()
        # Every value body[data-you] takes from here on, then the stale frame, then a newer
        # one named "marker": once the marker shows, the stale frame was heard before it.
        await page.evaluate(
            """() => { window.seen = [];
              new MutationObserver(() => window.seen.push(document.body.dataset.you))
                .observe(document.body, { attributes: true, attributeFilter: ["data-you"] }); }"""
        )
        newer = {**stale, "name": "marker", "version": stale["version"] + 1000}
        newer["you"] = {**stale["you"], "state": "paused"}
        sockets[-1].send(json.dumps({"type": "arena", "arena": stale}))
        sockets[-1].send(json.dumps({"type": "arena", "arena": newer}))
        await expect(page.locator("#arena-name-title")).to_have_text("marker")
        assert "waiting" not in await page.evaluate("() => window.seen")
        await expect(page.locator("#continue")).to_be_visible()
        await expect(page.locator("#pause")).to_be_hidden()
        assert errors == []
