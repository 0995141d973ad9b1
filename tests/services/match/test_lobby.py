"""The lobby in its order, in a real browser: quick play first, then the tables
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
        "return_match": "対局に戻る",
        "online_1": "オンライン 1人",
        "made": "名前を自動でつけました。いつでも変えられます。",
        "needed": "名前を入れてください（1〜32文字）",
        "change": "名前を変えても、レートはそのままです。",
        "saved": "名前を保存しました。",
        "alone": "このプールにほかの人はまだいません",
        "you_included": "2人・カジュアル: 1人待ち（あなたを含む）",
        "cpu": "CPU（ふつう）",
        "cpu_easy": "CPU（弱い）",
        "watch": "観戦",
        "no_live": "いま進んでいる対局はありません。",
        "ranked": "ランク戦",
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
        "return_match": "Return to your match",
        "online_1": "1 online",
        "made": "We made up a name for you: change it any time.",
        "needed": "Enter a name (1–32 characters)",
        "change": "A new name keeps your rating.",
        "saved": "Name saved",
        "alone": "nobody else in this pool yet",
        "you_included": "2 players, casual: 1 waiting (you included)",
        "cpu": "CPU (normal)",
        "cpu_easy": "CPU (easy)",
        "watch": "Watch",
        "no_live": "No match is being played right now.",
        "ranked": "Ranked",
    },
}

# The top and bottom of each of the lobby's parts, in page coordinates.
_BOXES = """() => Object.fromEntries(
  ["#return", "section.intro", "#quick", "#mine", "#open", "#live", "#create", "#quick-button",
   "#play-now", "#name", "#name-notes"]
    .map((s) => { const n = document.querySelector(s);
                  if (!n) return [s, { top: 0, bottom: 0, shown: false }];
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
    """A guest back in the lobby finds their party under "your tables", follows it live
    and returns in one press, in both languages, with 44 px targets and nothing serious
    to axe.

    The row follows the party: a guest sits down, a CPU is added (named by its level, as
    the table names it), the match starts and its table goes to the top."""
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
            # The CPU is named as the table names it, in the page's language.
            await expect(row).to_contain_text(words["cpu_easy"])
            await expect(row).not_to_contain_text("CPU 3")
            post(site, f"/api/parties/{party_id}/start", host)
            # Its match in play, the table goes to the top: "Return to your match".
            await expect(row).to_have_count(0)
            playing = page.locator(f"#return-list li[data-table='{party_id}']")
            await expect(playing).to_have_attribute("data-status", "playing")
            link = playing.get_by_role("link")
            await expect(link).to_have_text(words["return_match"])
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
        await expect(a.locator("#quick-clock")).to_contain_text(WORDS["ja"]["alone"])
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
        await expect(page.locator("#quick-clock")).to_contain_text(WORDS["ja"]["alone"])
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


async def match_of_mine_in_play(site: Site, page: Page) -> tuple[str, str]:
    """This page's guest (named over HTTP and kept on the device) plays three normal CPUs:
    a match in play, waiting for its first roll. Returns the party and match ids."""
    me = guest_of(site, "mika")
    await page.goto(site.url + "/rules")  # the site's origin, to keep the guest on
    token = me["auth"].split()[1]
    await page.evaluate(
        "(g) => localStorage.setItem('ludo.guest', JSON.stringify(g))",
        {"id": me["id"], "name": me["name"], "token": token},
    )
    party = post(site, "/api/parties", me, {"seats": 4})
    for _ in range(3):
        post(site, f"/api/parties/{party['id']}/cpus", me, {"level": "normal"})
    match_id: str = post(site, f"/api/parties/{party['id']}/start", me)["match_id"]
    return party["id"], match_id


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_a_running_match_of_yours_is_the_first_thing_on_the_first_screen(
    site: Site, browser: Browser, lang: str
) -> None:
    """Back in the lobby while a match of theirs runs, a guest on a 375×812 phone finds
    "Return to your match" above everything else, inside the first screen.

    Not under the name and quick play below the fold; the page is drawn once, with it,
    not pushed down by it; one press returns; 44 px targets, nothing serious to axe on the
    phone and the desktop."""
    words = WORDS[lang]
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        party_id, _ = await match_of_mine_in_play(site, page)
        # Where the quick-play card is in each frame the page draws while loading, from
        # the first drawn (`data-drawn`) until it is ready and 3 frames are seen: it must
        # never move (the return card is there from the first drawing on).
        await page.add_init_script(
            """window.__quick = [];
               const watch = () => { const q = document.querySelector("#quick");
                 if (q && document.body && document.body.dataset.drawn)
                   window.__quick.push(q.getBoundingClientRect().top);
                 const ready = document.body && document.body.dataset.ready;
                 if (!ready || window.__quick.length < 3) requestAnimationFrame(watch); };
               requestAnimationFrame(watch);"""
        )
        await visit(page, site.url + "/")
        back = page.locator("#return-list li a")
        await expect(back).to_have_text(words["return_match"])
        await expect(page.locator("#return-list li")).to_contain_text(words["cpu"])
        boxes: dict[str, Any] = await page.evaluate(_BOXES)
        assert boxes["#return"]["shown"]
        others = [b["top"] for k, b in boxes.items() if k != "#return" and b["shown"]]
        assert boxes["#return"]["top"] < min(others), boxes
        link = await back.bounding_box()
        assert link is not None and link["y"] + link["height"] <= PHONE[1]
        tops = set(await page.evaluate("window.__quick"))
        assert len(tops) == 1, tops  # drawn once, never pushed
        await shot(page, f"lobby-return-375-{lang}.png", full_page=False)
        assert await small_targets(page) == []
        assert await axe_violations(page) == []
        await page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
        assert await axe_violations(page) == []
        await shot(page, f"lobby-return-desktop-{lang}.png", full_page=False)
        await back.click()
        await page.wait_for_url(f"{site.url}/party/{party_id}")
        await expect(page.locator("#match-view")).to_be_visible()
        assert errors == []


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_the_name_never_pushes_the_page_and_the_counts_speak_from_the_readers_side(
    site: Site, browser: Browser, lang: str
) -> None:
    """A new visitor on a phone is counted online, every note about the name moves
    nothing on the page, and a wait is said from the reader's side.

    At 375×812: "1 online", not 0; a name made up on Save with the field empty, "Enter a
    name" when it is emptied, a new name keeps the rating, saved: each under the field,
    nothing moving by a pixel; alone in a pool, nobody else waits and the pool's count
    says it includes the reader."""
    words = WORDS[lang]
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        await visit(page, site.url + "/")
        await expect(page.locator("#pool-counts")).to_contain_text(words["online_1"])
        start: dict[str, Any] = await page.evaluate(_BOXES)

        async def nothing_moved(when: str) -> None:
            now: dict[str, Any] = await page.evaluate(_BOXES)
            moved = {
                k: (start[k]["top"], now[k]["top"])
                for k in start
                if start[k]["shown"] and abs(start[k]["top"] - now[k]["top"]) > 0.5
            }
            assert moved == {}, f"{when}: {moved}"

        notes = page.locator("#name-notes .note.on")
        # Save with nothing typed: the server makes a name up, in the page's language.
        await page.click("#name-form button[type=submit]")
        await expect(notes).to_have_text(words["made"])
        made = await page.input_value("#name")
        assert re.match(
            r"^.+の\D+\d{2}$" if lang == "ja" else r"^[A-Z]\w+ [A-Z][\w ]+ \d{2}$", made
        )
        await nothing_moved("a name made up")
        await page.fill("#name", "")
        await page.click("#name-form button[type=submit]")
        await expect(notes).to_have_text(words["needed"])
        await expect(page.locator("#name")).to_have_attribute("aria-invalid", "true")
        await nothing_moved("Enter a name")
        await shot(page, f"lobby-name-needed-375-{lang}.png", full_page=False)
        await page.fill("#name", "rio")
        await expect(notes).to_have_text(words["change"])
        await nothing_moved("a new name")
        await page.click("#name-form button[type=submit]")
        await expect(notes).to_have_text(words["saved"])
        await expect(page.locator("#name")).not_to_have_attribute("aria-invalid", "true")
        await nothing_moved("saved")
        # Alone in a pool: said from the reader's side.
        await page.click("#q-seats label:has(input[value='2'])")
        await page.click("#q-wait label:has(input[value='people'])")
        await page.click("#quick-button")
        await expect(page.locator("#quick-clock")).to_contain_text(words["alone"])
        await expect(page.locator("#pool-counts")).to_contain_text(words["you_included"])
        await page.click("#quick-button")
        assert await axe_violations(page) == []
        assert errors == []


@pytest.mark.parametrize("lang", ["ja", "en"])
async def test_a_new_visitor_plays_without_typing_a_name(
    site: Site, browser: Browser, lang: str
) -> None:
    """A new visitor presses "Play the CPUs now" with the name field empty: a guest is made
    with a name made up in the page's language, seated at the new table under it; back in
    the lobby the field holds it, and a new name saved renames the same guest."""
    words = WORDS[lang]
    async with person(browser, locale=LOCALES[lang], width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        await visit(page, site.url + "/")
        assert await page.input_value("#name") == ""
        await page.click("#play-now")
        await page.wait_for_url(re.compile(r"/party/[0-9a-f-]{36}$"))
        me = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        if lang == "ja":
            assert re.match(r"^.+の\D+\d{2}$", me["name"]), me
        else:
            assert re.match(r"^[A-Z]\w+ [A-Z][\w ]+ \d{2}$", me["name"]), me
        await expect(page.locator("#players li[data-seat='0'] .name")).to_contain_text(me["name"])
        await visit(page, site.url + "/")
        assert await page.input_value("#name") == me["name"]
        await page.fill("#name", "sora")
        await page.click("#name-form button[type=submit]")
        await expect(page.locator("#name-notes .note.on")).to_have_text(words["saved"])
        again = site.http.get(
            "/api/players/me", headers={"Authorization": f"Bearer {me['token']}"}
        ).json()
        assert again == {"id": me["id"], "name": "sora"}
        assert errors == []


async def test_live_matches_to_watch_come_and_go_and_cpus_have_one_name(
    site: Site, browser: Browser
) -> None:
    """Another guest's ranked match against CPUs appears in the lobby's live matches
    without a reload (its players, CPUs named as the table and the replay name them,
    ranked, pieces home, when it began), on a phone and a desktop in both languages; Watch
    opens it read-only; when it ends it leaves the list by itself."""
    host = guest_of(site, "hana")
    party = post(site, "/api/parties", host, {"seats": 2, "ranked": True})
    post(site, f"/api/parties/{party['id']}/cpus", host, {"level": "normal"})
    async with (
        person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (ja, ja_errors),
        person(browser, locale="en-GB", width=DESKTOP[0], height=DESKTOP[1]) as (en, en_errors),
    ):
        pages = {"ja": ja, "en": en}
        for page in pages.values():
            await visit(page, site.url + "/")
            await expect(page.locator("#no-live")).to_be_visible()
        match_id = post(site, f"/api/parties/{party['id']}/start", host)["match_id"]
        for lang, page in pages.items():
            words = WORDS[lang]
            row = page.locator(f"#live-list > li[data-match='{match_id}']")
            await expect(row).to_be_visible()
            await expect(row.locator(".seats > li")).to_have_count(2)
            await expect(row.locator(".seats > li").first).to_contain_text("hana")
            await expect(row.locator(".seats > li").nth(1)).to_have_text(
                re.compile(re.escape(words["cpu"]))
            )
            await expect(row).not_to_contain_text("CPU 2")
            await expect(row.locator(".tag.ranked")).to_have_text(words["ranked"])
            await expect(row.get_by_role("link")).to_have_text(words["watch"])
            await expect(row.get_by_role("link")).to_have_attribute("href", f"/match/{match_id}")
            await shot(page, f"lobby-live-{lang}.png", full_page=False)
            assert await axe_violations(page) == []
            assert await small_targets(page) == []
        # Watch: the table, read-only, naming the CPU as the lobby did.
        await en.locator(f"#live-list > li[data-match='{match_id}'] a").click()
        await en.wait_for_url(f"{site.url}/match/{match_id}")
        await expect(en.locator("body[data-ready=true]")).to_be_attached()
        await expect(en.locator("#players li[data-seat='1'] .name")).to_contain_text(
            WORDS["en"]["cpu"]
        )
        await expect(en.locator("#players")).not_to_contain_text("CPU 2")
        assert await en.locator("#roll").is_hidden()
        # The host leaves: the CPUs play it out, and it leaves the list by itself.
        r = site.http.post(
            f"/api/matches/{match_id}/leave", headers={"Authorization": host["auth"]}
        )
        assert r.status_code == 200, r.text
        await expect(ja.locator(f"#live-list > li[data-match='{match_id}']")).to_have_count(
            0, timeout=60_000
        )
        await expect(ja.locator("#no-live")).to_have_text(WORDS["ja"]["no_live"])
        # The replay names the CPU the same way.
        await en.goto(f"{site.url}/replay/{match_id}")
        await expect(en.locator("body[data-ready=true]")).to_be_attached()
        await expect(en.locator("body")).to_contain_text(WORDS["en"]["cpu"])
        await expect(en.locator("body")).not_to_contain_text("CPU 2")
        assert ja_errors == en_errors == []


async def test_the_return_card_goes_when_the_match_ends(site: Site, browser: Browser) -> None:
    """A guest's match that ends while they look at the lobby leaves the top by itself:
    "Return to your match" goes, and the table is listed as over (for もう一度)."""
    async with person(browser, locale="ja-JP", width=PHONE[0], height=PHONE[1]) as (
        page,
        errors,
    ):
        party_id, match_id = await match_of_mine_in_play(site, page)
        await visit(page, site.url + "/")
        await expect(page.locator("#return")).to_be_visible()
        await expect(page.locator(f"#live-list > li[data-match='{match_id}']")).to_be_visible()
        me = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest'))")
        r = site.http.post(
            f"/api/matches/{match_id}/leave", headers={"Authorization": f"Bearer {me['token']}"}
        )
        assert r.status_code == 200, r.text
        await expect(page.locator("#return")).to_be_hidden(timeout=60_000)
        row = page.locator(f"#my-tables li[data-table='{party_id}']")
        await expect(row).to_have_attribute("data-status", "finished")
        assert errors == []
