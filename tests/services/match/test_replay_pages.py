"""The replay viewer and the dispute report page in a real browser: Debian's Chromium
driven by Playwright, as in tests/services/ranking/test_dashboard.py.

The match service runs under uvicorn on a loopback port (the live tests' `Instance`) with
its deadline worker on, so CPU seats play whole matches by themselves. No Playwright-managed
browser download: the system's Chromium headless shell (benchmarks/chromium.py; CI installs
it, see .ci/run).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect
from websockets.sync.client import connect

from domain.dice import die_for_roll
from services.shared.settings import Settings
from services.shared.words import catalogue, page_words
from tests.browser import (
    axe_violations,
    console_errors,
    launched,
    new_page,
    person,
    requires_chromium,
    shot,
    small_targets,
)
from tests.databases import migrated_database
from tests.services.match.test_live import Instance
from tests.services.match.test_site_a11y import axe_at_both_sizes
from tests.waiting import wait_until_sync
from tests.words import leaves

TOKEN = "op-secret"
RANGE = 100  # the viewer reads this many steps at a time (replay_viewer.html)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]


class Site:
    """The running service plus a plain HTTP client for setting matches up."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.http = httpx.Client(base_url=instance.http, timeout=30)

    def player(self, name: str) -> dict[str, str]:
        r = self.http.post("/api/players", json={"name": name})
        assert r.status_code == 201, r.text
        body = r.json()
        return {"id": body["id"], "token": body["token"]}

    def start(
        self,
        host: dict[str, str],
        seats: int,
        rules: dict[str, Any],
        cpus: int,
        level: str = "easy",
        client_seed: str = "host-seed",
    ) -> str:
        """A table of `seats`: the host, `cpus` CPU seats of `level` and guests for the rest."""
        auth = {"Authorization": f"Bearer {host['token']}"}
        party = self.http.post(
            "/api/parties",
            json={"seats": seats, "rules": rules, "client_seed": client_seed},
            headers=auth,
        ).json()
        for i in range(seats - 1):
            if i < cpus:
                r = self.http.post(
                    f"/api/parties/{party['id']}/cpus", json={"level": level}, headers=auth
                )
            else:
                guest = self.player(f"guest{i}")
                r = self.http.post(
                    f"/api/parties/{party['id']}/join",
                    json={},
                    headers={"Authorization": f"Bearer {guest['token']}"},
                )
            assert r.status_code == 200, r.text
        r = self.http.post(f"/api/parties/{party['id']}/start", headers=auth)
        assert r.status_code == 201, r.text
        match_id: str = r.json()["match_id"]
        return match_id

    def wait_finished(self, match_id: str) -> dict[str, Any]:
        def finished() -> dict[str, Any] | None:
            state: dict[str, Any] = self.http.get(f"/api/matches/{match_id}").json()
            return state if state["status"] == "finished" else None

        return wait_until_sync(finished, 120, what="the CPU match to finish", pause=0.1)

    def steps(self, match_id: str) -> dict[str, Any]:
        model: dict[str, Any] = self.http.get(f"/api/matches/{match_id}/steps").json()
        return model


@pytest.fixture(scope="module")
def site(
    server_url: str, template_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    """One service and database for the module: its tests only read the matches they are
    given or start their own, and a whole CPU match played once (`cpu_match`) serves four
    of them."""
    with migrated_database(server_url, template_name) as database_url:
        settings = Settings(
            data_dir=tmp_path_factory.mktemp("replay-pages"),
            database_url=database_url,
            operator_token=TOKEN,
            cpu_delay=0,
            scheduler=True,
            db_pool_size=4,
        )
        with Instance(settings) as instance:
            site = Site(instance)
            yield site
            site.http.close()


def played_out(site: Site, level: str) -> str:
    """A finished 4-seat cross-board match played by CPUs of `level`: the host opens a
    live connection, leaves the match (a CPU stands in), and the connection closes."""
    host = site.player("hostess")
    match_id = site.start(host, 4, {"preset": "standard"}, cpus=3, level=level)
    with connect(site.instance.ws(match_id)) as ws:
        ws.send(json.dumps({"type": "hello", "token": host["token"]}))
        while True:
            frame = ws.recv(timeout=10)
            if '"hello"' in frame:
                assert '"seat":0' in frame
                break
        r = site.http.post(
            f"/api/matches/{match_id}/leave",
            headers={"Authorization": f"Bearer {host['token']}"},
        )
        assert r.status_code == 200, r.text
    site.wait_finished(match_id)
    return match_id


@pytest.fixture(scope="module")
def cpu_match(site: Site) -> str:
    """A finished match of easy CPUs and a host who left (see `played_out`)."""
    return played_out(site, "easy")


@pytest.fixture(scope="module")
def normal_cpu_match(site: Site) -> str:
    """A finished match of normal CPUs and a host who left (see `played_out`)."""
    return played_out(site, "normal")


@pytest.fixture
async def browser_page() -> AsyncIterator[tuple[Page, list[str]]]:
    """A Chromium page of an en-GB browser and the console errors it logs (CSP violations
    among them)."""
    async with new_page(locale="en-GB") as page:
        yield page, console_errors(page)


@pytest.fixture
async def ja_page() -> AsyncIterator[tuple[Page, list[str]]]:
    """A Chromium page of a ja-JP browser and the console errors it logs."""
    async with new_page(locale="ja-JP") as page:
        yield page, console_errors(page)


@pytest.fixture
async def hi_page() -> AsyncIterator[tuple[Page, list[str]]]:
    """A Chromium page of a hi-IN browser and the console errors it logs."""
    async with new_page(locale="hi-IN") as page:
        yield page, console_errors(page)


# The words the viewer shows an event in, as site.js's `ev.*` and replay_words.js have
# them: written out here again so the page is checked against them, not against itself.
WORDS: dict[str, dict[str, str]] = {
    "en": {
        "yellow": "Yellow",
        "blue": "Blue",
        "red": "Red",
        "green": "Green",
        "easy": "CPU (easy)",
        "normal": "CPU (normal)",
        "hard": "CPU (hard)",
        "created": "The table is set. The dice seed is sealed (hash {hash}…).",
        "started": "The match begins. {who} plays first.",
        "rolled": "{who} rolled {die}",
        "entered": "{who}'s piece {piece} came out of the nest.",
        "moved": "{who}'s piece {piece} moved {n} squares.",
        "moved_one": "{who}'s piece {piece} moved 1 square.",
        "to_home": "{who}'s piece {piece} turned into its home column.",
        "to_goal": "{who}'s piece {piece} reached the goal.",
        "auto_enter": "(entered without rolling)",
        "captured": "It captured {who}'s piece and sent it home.",
        "bonus": "One more roll.",
        "bonus_n": "{n} more rolls.",
        "pass_none": "{who}: no piece can move; the turn ends.",
        "pass_retry": "{who}: no entering value; roll again.",
        "pass_sixes": "{who}: a third six in a row ends the turn.",
        "turn": "{who} to play.",
        "timeout": "{who}'s time ran out; a CPU plays the rest of the turn.",
        "stand_in_timeouts": "After three timeouts in a row, a CPU plays for {who}.",
        "stand_in_disconnected": "{who} did not come back; a CPU plays for them.",
        "stand_in_left": "{who} left; a CPU plays for them.",
        "reclaimed": "{who} is back.",
        "finished_player": "{who} finished in place {n}.",
        "over": "The match is over.",
        "seed": "The dice seed is revealed: the replay checks every die.",
    },
    "ja": {
        "yellow": "黄",
        "blue": "青",
        "red": "赤",
        "green": "緑",
        "easy": "CPU（弱い）",
        "normal": "CPU（ふつう）",
        "hard": "CPU（強い）",
        "created": "対局の準備ができました。サイコロの種は封印済みです（ハッシュ {hash}…）。",
        "started": "対局開始。先手は{who}です。",
        "rolled": "{who}: {die}",
        "entered": "{who}のコマ{piece}が巣から出ました。",
        "moved": "{who}のコマ{piece}が{n}マス進みました。",
        "moved_one": "{who}のコマ{piece}が1マス進みました。",
        "to_home": "{who}のコマ{piece}がゴールの道に入りました。",
        "to_goal": "{who}のコマ{piece}がゴールに入りました。",
        "auto_enter": "（振らずに出ました）",
        "captured": "{who}のコマを取って巣へ戻しました。",
        "bonus": "もう1回振れます。",
        "bonus_n": "あと{n}回振れます。",
        "pass_none": "{who}: 動かせるコマが無いので番が終わります。",
        "pass_retry": "{who}: 出せる目が出ませんでした。もう一度振れます。",
        "pass_sixes": "{who}: 6が3回続いたので番が終わります。",
        "turn": "{who}の番です。",
        "timeout": "{who}の時間切れ。CPUが続きを打ちます。",
        "stand_in_timeouts": "3回続けて時間切れのため、{who}の代わりにCPUが打ちます。",
        "stand_in_disconnected": "{who}の接続が戻らないため、CPUが代わりに打ちます。",
        "stand_in_left": "{who}が抜けたので、CPUが代わりに打ちます。",
        "reclaimed": "{who}が席に戻りました。",
        "finished_player": "{who}が{n}位で上がりました。",
        "over": "対局終了。",
        "seed": "サイコロの種が公開されました。リプレイで全部の目を確かめられます。",
    },
}
SYMBOLS = {"yellow": "○", "blue": "□", "red": "△", "green": "✚"}


def seat_said(model: dict[str, Any], seat: int, lang: str) -> str:
    """A seat as the pages name it in `lang`: "○黄 CPU（弱い）", "○Yellow hostess"."""
    w = WORDS[lang]
    s = model["seats"][seat]
    name = w[s["cpu"]] if s["cpu"] else s["name"]
    return f"{SYMBOLS[s['colour']]}{w[s['colour']]} {name}"


def shown(model: dict[str, Any], step: dict[str, Any], lang: str) -> str:
    """The text the viewer should show for `step` in `lang`, from the step's fields."""
    w = WORDS[lang]

    def who(seat: int) -> str:
        return seat_said(model, seat, lang)

    kind = step["type"]
    me = who(step["seat"]) if step["seat"] is not None else ""
    board = model["board"]
    if kind == "MatchCreated":
        return w["created"].format(hash=model["fairness"]["seed_hash"][:16])
    if kind == "MatchStarted":
        return w["started"].format(who=who(model["first_seat"]))
    if kind == "DieRolled":
        return w["rolled"].format(who=me, die=step["die"])
    if kind == "PieceMoved":
        frm, to, piece = step["from"], step["to"], step["chosen"] + 1
        if frm < 0:
            text = w["entered"].format(who=me, piece=piece)
        elif to >= board["goal"]:
            text = w["to_goal"].format(who=me, piece=piece)
        elif to >= board["home"] > frm:
            text = w["to_home"].format(who=me, piece=piece)
        else:
            text = w["moved_one" if to - frm == 1 else "moved"].format(
                who=me, piece=piece, n=to - frm
            )
        if step["die"] is None:
            text += " " + w["auto_enter"]
        for seat, _ in step["captures"]:
            text += " " + w["captured"].format(who=who(seat))
        if step["bonus"]:
            text += " " + (
                w["bonus"] if step["bonus"] == 1 else w["bonus_n"].format(n=step["bonus"])
            )
        return text
    if kind == "RollPassed":
        key = (
            "pass_sixes"
            if step["reason"] == "three_sixes"
            else ("pass_retry" if step["retry"] else "pass_none")
        )
        return w[key].format(who=me)
    if kind == "TurnEnded":
        return w["turn"].format(who=who(step["next_seat"]))
    if kind == "TurnTimedOut":
        return w["timeout"].format(who=me)
    if kind == "SeatStoodIn":
        return w[f"stand_in_{step['reason']}"].format(who=me)
    if kind == "SeatReclaimed":
        return w["reclaimed"].format(who=me)
    if kind == "PlayerFinished":
        return w["finished_player"].format(who=me, n=step["place"])
    if kind == "MatchFinished":
        return w["over"]
    assert kind == "SeedRevealed", kind
    return w["seed"]


async def progresses(page: Page) -> list[str]:
    pieces: list[str] = await page.locator("#board g.piece").evaluate_all(
        "cs => cs.map(c => `${c.dataset.seat}:${c.dataset.piece}:${c.dataset.progress}`)"
    )
    return pieces


async def go_to(page: Page, index: int) -> None:
    await page.locator("#scrub").evaluate(
        "(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input')); }", index
    )


async def language_cookie(page: Page) -> str | None:
    """The page's `ludo_lang` cookie (the language a switch chose), None without one."""
    cookies = await page.context.cookies()
    return next((c["value"] for c in cookies if c["name"] == "ludo_lang"), None)


async def test_viewer_steps_through_a_finished_cpu_match(
    site: Site, cpu_match: str, browser_page: tuple[Page, list[str]]
) -> None:
    """An en-GB browser steps through a CPU match in English, the dice checked in the page."""
    page, errors = browser_page
    model = site.steps(cpu_match)
    steps = model["steps"]
    n = len(steps)
    await page.goto(f"{site.instance.http}/replay/{cpu_match}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()

    # The board (services/shared/board.js): 52 squares with 8 safe ones, 4 home columns
    # of 5, 4 nests, 16 pieces.
    assert await page.locator("#board rect[data-track]").count() == 52
    assert await page.locator("#board rect.cell.safe").count() == 8
    assert await page.locator("#board rect[data-home]").count() == 20
    assert await page.locator("#board [data-nest]").count() == 4
    await expect(page.locator("#board g.piece")).to_have_count(16)
    # The list: the first range of events read (a long match is read a range at a time).
    await expect(page.locator("#events li")).to_have_count(min(n, RANGE))
    await expect(page.locator("html")).to_have_attribute("lang", "en")
    await expect(page.locator("header.site nav a")).to_have_text(
        ["Lobby", "Arenas", "Ratings", "Rules"]
    )
    await expect(page.locator("#lang")).to_have_value("en")
    # Every event of the list in English, worded from the step's fields.
    texts = await page.locator("#events li").all_inner_texts()
    for step, text in zip(steps[: len(texts)], texts, strict=True):
        assert text.startswith(f"{step['version']} {shown(model, step, 'en')}"), text
    # CPU seats named as the table names them; places once the match is over.
    seats = await page.locator("#seats li").all_inner_texts()
    assert (
        seats[1].startswith(f"{SYMBOLS[model['seats'][1]['colour']]}") and "CPU (easy)" in seats[1]
    )
    assert all("Place " in text for text in seats)
    await expect(page.locator("#status")).to_have_text("finished")

    # Stepping with the buttons and the keyboard changes the event text.
    await expect(page.locator("#event-text")).to_have_text(shown(model, steps[0], "en"))
    await expect(page.locator("#counter")).to_have_text(f"1 / {n}")
    await page.click("#next")
    await expect(page.locator("#event-text")).to_have_text(shown(model, steps[1], "en"))
    await page.keyboard.press("ArrowRight")
    await expect(page.locator("#counter")).to_have_text(f"3 / {n}")
    await expect(page.locator("#event-text")).to_have_text(shown(model, steps[2], "en"))
    await page.keyboard.press("ArrowLeft")
    await expect(page.locator("#event-text")).to_have_text(shown(model, steps[1], "en"))
    await page.keyboard.press("End")
    await expect(page.locator("#event-text")).to_have_text(shown(model, steps[-1], "en"))
    await page.click("#first")
    await expect(page.locator("#counter")).to_have_text(f"1 / {n}")
    # The current event stays in view in the list (it scrolled past it before).
    assert await page.evaluate(
        """() => { const box = document.querySelector('#events').getBoundingClientRect();
                   const li = document.querySelector('#events li.current').getBoundingClientRect();
                   return li.top >= box.top && li.bottom <= box.bottom; }"""
    )
    # Editing the address's #N (or Back) moves the viewer there.
    await page.evaluate("location.hash = '#5'")
    await expect(page.locator("#counter")).to_have_text(f"6 / {n}")
    await page.go_back()
    await expect(page.locator("#counter")).to_have_text(f"1 / {n}")

    # Scrubbing to a move puts the board where the model says, and moves one piece.
    move = next(s for s in steps if s["type"] == "PieceMoved" and s["pieces"] != steps[2]["pieces"])
    await go_to(page, 2)
    before = await progresses(page)
    await go_to(page, move["version"])
    await expect(page.locator("#event-text")).to_have_text(shown(model, move, "en"))
    after = await progresses(page)
    assert after != before
    expected = sorted(
        f"{seat}:{piece}:{p}"
        for seat, row in enumerate(move["pieces"])
        for piece, p in enumerate(row)
    )
    assert sorted(after) == expected
    await expect(page.locator("#board g.piece.moved")).to_have_count(1)

    # A roll with a choice: every legal move listed, the one played highlighted.
    roll = next(s for s in steps if s["type"] == "DieRolled" and len(s["options"] or []) >= 2)
    await go_to(page, roll["version"])
    await expect(page.locator("#options li")).to_have_count(len(roll["options"]))
    chosen = page.locator("#options li.chosen")
    await expect(chosen).to_have_count(1)
    assert await chosen.get_attribute("data-piece") == str(roll["chosen"])
    await expect(page.locator("#board .target")).to_have_count(len(roll["options"]))
    await expect(page.locator("#board .target.chosen")).to_have_count(1)
    chosen_target = page.locator("#board .target.chosen")
    assert await chosen_target.get_attribute("data-piece") == str(roll["chosen"])
    # the pieces that could move are marked, each its own token; none is pickable here
    await expect(page.locator("#board g.piece.movable")).to_have_count(
        len({o["piece"] for o in roll["options"]})
    )
    await expect(page.locator("#board g.piece[tabindex]")).to_have_count(0)
    await expect(page.locator("#die-value")).to_have_text(str(roll["die"]))
    if os.environ.get("LUDO_REPLAY_SCREENSHOT"):
        await page.screenshot(path=os.environ["LUDO_REPLAY_SCREENSHOT"], full_page=True)

    # Marks on the timeline: the stand-in of the host who left, every capture.
    assert await page.locator("#timeline line.m-stand-in").count() == 1
    captures = sum(1 for s in steps if "capture" in s["marks"])
    assert await page.locator("#timeline line.m-capture").count() == captures
    await expect(page.locator("#events li .badge.m-stand-in")).to_have_count(1)

    # Fairness: the seed hashes to the commitment, every die re-derived in the page.
    rolls = [s for s in steps if s["type"] == "DieRolled"]
    await expect(page.locator("#fair-seed-status")).to_contain_text("matches the commitment")
    await expect(page.locator("#fair-seed-status")).to_have_class("ok")
    await expect(page.locator("#fair-dice tbody tr")).to_have_count(len(rolls))
    await expect(page.locator("#fair-dice tbody tr.ok")).to_have_count(len(rolls))
    await expect(page.locator("#fair-summary")).to_have_text(
        f"{len(rolls)} of {len(rolls)} dice match the revealed seed ✓"
    )
    derived = await page.locator("#fair-dice tbody td.derived").all_inner_texts()
    seed = bytes.fromhex(model["fairness"]["server_seed"])
    client = model["fairness"]["client_seed"]
    assert derived == [str(die_for_roll(seed, client, r["n"])) for r in rolls]
    await expect(page.locator("#audit")).to_contain_text("every check holds")
    # The page's own SHA-256 agrees with hashlib on lengths around the block boundaries.
    for size in (0, 3, 55, 56, 64, 119, 1000):
        data = bytes((7 * i + size) % 256 for i in range(size))
        ours = await page.evaluate(
            "b => ludoFair.hex(ludoFair.sha256(new Uint8Array(b)))", list(data)
        )
        assert ours == hashlib.sha256(data).hexdigest()
    # On a phone the page is no wider than the screen: long seeds wrap, the dice table
    # scrolls in its own box.
    await page.set_viewport_size({"width": 375, "height": 800})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    if os.environ.get("LUDO_REPLAY_SCREENSHOT_PHONE_EN"):
        await page.screenshot(path=os.environ["LUDO_REPLAY_SCREENSHOT_PHONE_EN"], full_page=True)
    assert errors == []


async def test_a_redraw_before_the_hashchange_keeps_the_step_the_address_names(
    site: Site, cpu_match: str, browser_page: tuple[Page, list[str]]
) -> None:
    """A redraw between Back (or an edit of `#N`) and its `hashchange` leaves the address
    alone, so the viewer goes where the address says.

    The viewer redraws its step on its own (the words of another language, an analysis
    asked again on a timer, a range read, a resize). Pinned by the redraw of a language
    switch (its `languagechange` event, which the page answers at once) sent from
    `popstate`, which comes after the address changed and before `hashchange`."""
    page, errors = browser_page
    n = len(site.steps(cpu_match)["steps"])
    await page.goto(f"{site.instance.http}/replay/{cpu_match}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    redraw_first = """addEventListener("popstate",
        () => document.dispatchEvent(new CustomEvent("languagechange")), { once: true })"""
    await page.click("#next")
    await page.click("#first")
    await expect(page.locator("#counter")).to_have_text(f"1 / {n}")
    await page.evaluate(redraw_first)
    await page.evaluate("location.hash = '#5'")
    await expect(page.locator("#counter")).to_have_text(f"6 / {n}")
    await page.evaluate(redraw_first)
    await page.go_back()
    await expect(page.locator("#counter")).to_have_text(f"1 / {n}")
    assert page.url.endswith("#0"), page.url
    await page.go_forward()
    await expect(page.locator("#counter")).to_have_text(f"6 / {n}")
    assert errors == []


async def test_viewer_shows_the_client_seed_exactly(
    site: Site, browser_page: tuple[Page, list[str]]
) -> None:
    """A client seed with `\\`, `"` and spaces is shown as itself (not JSON-escaped), so the
    text shown, copied into the page's own derivation, gives every recorded die."""
    page, errors = browser_page
    seed_text = 'h(@/_Y\\sP "q"  z\\ '
    host = site.player("host")
    match_id = site.start(host, 2, {"preset": "bga"}, cpus=1, client_seed=seed_text)
    r = site.http.post(
        f"/api/matches/{match_id}/leave", headers={"Authorization": f"Bearer {host['token']}"}
    )
    assert r.status_code == 200, r.text
    site.wait_finished(match_id)
    model = site.steps(match_id)
    client = model["fairness"]["client_seed"]
    assert client.startswith(seed_text + "|")
    await page.goto(f"{site.instance.http}/replay/{match_id}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    shown = await page.locator("#fair-client-seed").text_content()
    assert shown == client
    rolls = [s for s in model["steps"] if s["type"] == "DieRolled"]
    derived = await page.evaluate(
        """([ns, server]) => {
          const text = document.querySelector("#fair-client-seed").textContent;
          const seed = ludoFair.unhex(server);
          return ns.map((n) => ludoFair.dieFor(seed, text, n));
        }""",
        [[s["n"] for s in rolls], model["fairness"]["server_seed"]],
    )
    assert derived == [s["die"] for s in rolls]
    seed = bytes.fromhex(model["fairness"]["server_seed"])
    assert derived == [die_for_roll(seed, client, s["n"]) for s in rolls]
    await expect(page.locator("#fair-dice tbody tr.ok")).to_have_count(len(rolls))
    assert errors == []


@pytest.mark.parametrize(
    ("rules", "players", "squares"),
    [
        ({"preset": "bga"}, 2, 26),
        ({"preset": "bga"}, 3, 39),
        ({"preset": "bga"}, 4, 52),
        ({"preset": "standard"}, 3, 52),
    ],
)
async def test_viewer_draws_every_board_and_waits_for_the_seed(
    site: Site,
    browser_page: tuple[Page, list[str]],
    rules: dict[str, Any],
    players: int,
    squares: int,
) -> None:
    """A match being played by guests (nobody acts): the board of its ruleset and player
    count, and no dice to check until the seed is revealed."""
    page, errors = browser_page
    host = site.player("host")
    match_id = site.start(host, players, rules, cpus=0)
    await page.goto(f"{site.instance.http}/replay/{match_id}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    assert await page.locator("#board rect[data-track]").count() == squares
    assert await page.locator("#board rect[data-home]").count() == 5 * players
    assert await page.locator("#board [data-nest]").count() == players
    await expect(page.locator("#board g.piece")).to_have_count(4 * players)
    await expect(page.locator("#fair-summary")).to_contain_text("checkable after the match ends")
    await expect(page.locator("#fair-seed")).to_have_text("not revealed yet")
    await expect(page.locator("#fair-dice-wrap")).to_be_hidden()
    await expect(page.locator("#message")).to_contain_text("still being played")
    assert errors == []


async def test_viewer_speaks_japanese_and_switches_to_english(
    site: Site, normal_cpu_match: str, ja_page: tuple[Page, list[str]]
) -> None:
    """A ja-JP browser gets the viewer in Japanese; the switch flips it to English for good."""
    page, errors = ja_page
    model = site.steps(normal_cpu_match)
    steps = model["steps"]
    await page.goto(f"{site.instance.http}/replay/{normal_cpu_match}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("html")).to_have_attribute("lang", "ja")
    await expect(page.locator("header.site nav a")).to_have_text(
        ["ロビー", "アリーナ", "ランキング", "ルール"]
    )
    await expect(page.locator("header.site nav a").first).to_have_attribute("href", "/")
    await expect(page.locator("h1")).to_have_text("リプレイ")
    await expect(page.locator("#step-title")).to_have_text("対局を1手ずつ見る")
    await expect(page.locator("#status")).to_have_text("終了")
    await expect(page.locator("#first")).to_have_attribute("title", "最初のイベント（Home）")

    # A piece coming out of its nest, in the table's words; a CPU seat as CPU（ふつう）.
    entry = next(s for s in steps if s["type"] == "PieceMoved" and s["from"] < 0)
    await go_to(page, entry["version"])
    text = shown(model, entry, "ja")
    assert "が巣から出ました。" in text
    await expect(page.locator("#event-text")).to_have_text(text)
    await expect(page.locator("#event-meta")).to_contain_text("決めたのは")
    cpu = model["seats"][1]
    await expect(page.locator("#seats li[data-seat='1']")).to_contain_text(
        f"{SYMBOLS[cpu['colour']]}{WORDS['ja'][cpu['colour']]}: CPU（ふつう）"
    )
    await expect(page.locator("#seats li[data-seat='0'] .place")).to_have_text(re.compile(r"^\d位"))
    # Every event of the list (its first range) in Japanese; the host's leaving among them.
    texts = await page.locator("#events li").all_inner_texts()
    assert len(texts) == min(len(steps), RANGE)
    for step, line in zip(steps[: len(texts)], texts, strict=True):
        assert line.startswith(f"{step['version']} {shown(model, step, 'ja')}"), line
    assert any("が抜けたので、CPUが代わりに打ちます。" in line for line in texts)
    await expect(page.locator("#events li .badge.m-stand-in")).to_have_text("CPUが代わり")
    # A roll with a choice: its moves listed in Japanese.
    roll = next(s for s in steps if s["type"] == "DieRolled" and len(s["options"] or []) >= 2)
    await go_to(page, roll["version"])
    await expect(page.locator("#options-title")).to_contain_text("で動かせるコマ")
    await expect(page.locator("#options li.chosen .chosen-mark")).to_have_text("← 選んだ手")
    # The fairness panel and the audit verdict.
    await expect(page.locator("#fairness h2")).to_have_text("サイコロの公正さ")
    await expect(page.locator("#fair-seed-status")).to_contain_text("✓ 約束と一致します")
    rolls = sum(1 for s in steps if s["type"] == "DieRolled")
    await expect(page.locator("#fair-summary")).to_have_text(
        f"{rolls}回中{rolls}回の目が公開された種と一致します ✓"
    )
    await expect(page.locator("#audit")).to_contain_text("すべての確認に合格しました")
    if os.environ.get("LUDO_REPLAY_SCREENSHOT_JA"):
        await page.screenshot(path=os.environ["LUDO_REPLAY_SCREENSHOT_JA"], full_page=True)

    # The switch: English at once, at the same step, and still after a reload.
    await page.select_option("#lang", "en")
    await expect(page.locator("html")).to_have_attribute("lang", "en")
    await expect(page.locator("#lang")).to_have_value("en")
    await expect(page.locator("#step-title")).to_have_text("Step through the match")
    await expect(page.locator("#counter")).to_have_text(f"{roll['version'] + 1} / {len(steps)}")
    await expect(page.locator("#event-text")).to_have_text(shown(model, roll, "en"))
    await expect(page.locator("#options-title")).to_contain_text("Legal moves for")
    await expect(page.locator("#seats li[data-seat='1']")).to_contain_text("CPU (normal)")
    await expect(page.locator("#fair-summary")).to_have_text(
        f"{rolls} of {rolls} dice match the revealed seed ✓"
    )
    await expect(page.locator("#audit")).to_contain_text("every check holds")
    assert await language_cookie(page) == "en"
    await page.reload()
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("#step-title")).to_have_text("Step through the match")
    await expect(page.locator("header.site nav a")).to_have_text(
        ["Lobby", "Arenas", "Ratings", "Rules"]
    )
    await expect(page.locator("#event-text")).to_have_text(shown(model, roll, "en"))
    # On a phone the Japanese page is no wider than the screen either.
    await page.select_option("#lang", "ja")
    await expect(page.locator("#step-title")).to_have_text("対局を1手ずつ見る")
    await page.set_viewport_size({"width": 375, "height": 800})
    assert await page.evaluate("() => document.documentElement.scrollWidth") <= 375
    if os.environ.get("LUDO_REPLAY_SCREENSHOT_PHONE"):
        await page.screenshot(path=os.environ["LUDO_REPLAY_SCREENSHOT_PHONE"], full_page=True)
    assert errors == []


async def test_viewer_speaks_hindi_to_a_hindi_browser(
    site: Site, normal_cpu_match: str, hi_page: tuple[Page, list[str]]
) -> None:
    """A hi-IN browser gets the viewer in Hindi (its catalogue's words, the menu on हिन्दी),
    with no key missing a word (page_common.js would log it) and no other error."""
    page, errors = hi_page
    hi = catalogue("hi")
    viewer = hi["replay"]["viewer"]
    steps = site.steps(normal_cpu_match)["steps"]
    rolls = sum(1 for s in steps if s["type"] == "DieRolled")
    await page.goto(f"{site.instance.http}/replay/{normal_cpu_match}")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("html")).to_have_attribute("lang", "hi")
    await expect(page.locator("#lang")).to_have_value("hi")
    await expect(page.locator("header.site nav a").first).to_have_text(hi["common"]["lobby"])
    await expect(page.locator("h1")).to_have_text(viewer["title"])
    await expect(page.locator("#step-title")).to_have_text(viewer["step_through"])
    await expect(page.locator("#status")).to_have_text(viewer["finished"])
    await expect(page.locator("#fairness h2")).to_have_text(viewer["fair"])
    await expect(page.locator("#fair-summary")).to_have_text(
        viewer["dice_summary"].format(good=rolls, total=rolls) + " ✓"
    )
    await expect(page.locator("#audit")).to_contain_text(viewer["audit_ok"].split("(")[0])
    # A roll with a choice: its moves listed in Hindi.
    roll = next(s for s in steps if s["type"] == "DieRolled" and len(s["options"] or []) >= 2)
    await go_to(page, roll["version"])
    await expect(page.locator("#options li.chosen .chosen-mark")).to_have_text(viewer["chosen"])
    assert await page.title() == hi["meta"]["titles"]["replay_viewer"]
    # On a phone the Hindi page is no wider than the screen, its targets 44 px.
    await page.set_viewport_size({"width": 375, "height": 800})
    assert await page.evaluate("() => document.documentElement.scrollWidth") <= 375
    assert await small_targets(page) == []
    assert errors == []


async def test_viewer_of_an_unknown_match_is_404(
    site: Site, browser_page: tuple[Page, list[str]]
) -> None:
    """The viewer of an unknown match answers 404 with a page that says so."""
    page, _ = browser_page
    response = await page.goto(f"{site.instance.http}/replay/{uuid.uuid4()}")
    assert response is not None and response.status == 404
    await expect(page.locator("h1")).to_have_text("No such match")


async def test_report_page_shows_the_timeline_with_the_operator_token(
    site: Site, cpu_match: str, browser_page: tuple[Page, list[str]]
) -> None:
    """The report page refuses a wrong token, then shows the timeline to the operator."""
    page, errors = browser_page
    report = site.http.get(
        f"/api/matches/{cpu_match}/report", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()
    await page.goto(f"{site.instance.http}/report/{cpu_match}")
    await expect(page.locator("#token")).to_be_visible()
    await expect(page.locator("#report")).to_be_hidden()

    await page.fill("#token", "not-the-token")
    await page.click("#login button[type=submit]")
    await expect(page.locator("#message")).to_contain_text("Wrong or missing operator token")
    await expect(page.locator("#report")).to_be_hidden()

    await page.fill("#token", TOKEN)
    await page.click("#login button[type=submit]")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("#message")).to_be_hidden()
    await expect(page.locator("#summary tbody tr")).to_have_count(4)
    await expect(page.locator("#turns .turn")).to_have_count(len(report["turns"]))
    # The host's live connection and its close, the stand-in, who chose each move.
    await expect(page.locator("tr.connected")).to_have_count(1)
    await expect(page.locator("tr.disconnected")).to_have_count(1)
    await expect(page.locator("tr.m-stand-in")).to_have_count(1)
    assert await page.locator(".chooser.by-stand-in").count() > 0
    assert await page.locator(".chooser.by-cpu").count() > 0
    assert await page.locator("ul.options li.chosen").count() > 0
    host = page.locator("#summary tbody tr[data-seat='0'] td")
    cells = await host.all_inner_texts()
    assert cells[-2:] == ["1", "1"]  # one connect, one disconnect
    assert cells[7] == "1"  # one stand-in

    if os.environ.get("LUDO_REPORT_SCREENSHOT"):
        await page.screenshot(path=os.environ["LUDO_REPORT_SCREENSHOT"], full_page=False)
    # Only the flagged turns: the one where the host left (and its connection changed).
    await page.check("#only-flagged")
    visible = page.locator("#turns .turn:visible")
    assert 1 <= await visible.count() < len(report["turns"])
    # On a phone the page is no wider than the screen (the seat table scrolls in its box).
    await page.set_viewport_size({"width": 375, "height": 800})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    await page.set_viewport_size({"width": 1280, "height": 1000})
    # The token is kept for the tab: a reload goes straight to the report.
    await page.reload()
    await expect(page.locator("#turns .turn")).to_have_count(len(report["turns"]))
    await expect(page.locator("#login")).to_be_hidden()
    # The one error logged is the refused wrong token; nothing broke the CSP.
    assert [e for e in errors if "status of 401" not in e] == []


# The dispute report in each language, written out here again (the catalogues have them)
# so that the page is checked against them, not against itself: its headings, the seat
# table's columns, and a live connection's line.
REPORT: dict[str, dict[str, Any]] = {
    "ja": {
        "title": "調査レポート",
        "token": "運営トークン",
        "sign_in": "ログイン",
        "wrong_token": "運営トークンが違うか、入っていません。"
        "LUDO_OPERATOR_TOKEN を入れてログインしてください。",
        "sections": ["席ごとのまとめ", "手番ごとの経過"],
        "columns": [
            *("席", "プレイヤー", "順位", "手番", "平均（秒/手番）", "最長（秒/手番）"),
            *("時間切れ", "CPUが代わり", "席に戻った", "接続", "切断"),
        ],
        "before": "最初の手番の前",
        "after": "終了のあと",
        "turn": "{n}手番目 · {who} · ",
        "connected": "{who}: 接続しました",
        "disconnected": "{who}: 接続が切れました",
    },
    "en": {
        "title": "Dispute report",
        "sections": ["Per seat", "Timeline, turn by turn"],
        "columns": [
            *("Seat", "Player", "Place", "Turns", "Mean s/turn", "Max s/turn"),
            *("Timeouts", "Stand-ins", "Reclaims", "Connects", "Disconnects"),
        ],
        "before": "Before the first turn",
        "after": "After the end",
        "turn": "Turn {n} · {who} · ",
        "connected": "{who}: live connection opened",
        "disconnected": "{who}: live connection closed",
    },
}


def report_lines(report: dict[str, Any], lang: str) -> list[str]:
    """Every line of the report's timeline as the page should say it in `lang`, in order."""
    lines = report["prologue"] + [e for t in report["turns"] for e in t["entries"]]
    out = []
    for line in lines + report["epilogue"]:
        if line["kind"] == "event":
            out.append(shown(report, line, lang))
        else:
            who = seat_said(report, line["seat"], lang)
            out.append(REPORT[lang][line["kind"]].format(who=who))
    return out


def english_words() -> set[str]:
    """The words (3 letters or more, lower case) of the English texts of the dispute
    report's words (its catalogue sections: common, replay, dispute) that no Japanese text
    uses."""

    def words(lang: str) -> set[str]:
        table = page_words(lang, ("common", "replay", "dispute"))["words"]
        texts = " ".join(leaves(table).values())
        return set(re.findall(r"[a-z]{3,}", re.sub(r"\{\w+\}", " ", texts).lower()))

    return words("en") - words("ja")


async def english_left(page: Page, match_id: str) -> list[str]:
    """The English words of the page's own (english_words) it shows: its text, its title,
    its aria-labels, the match id and hashes aside."""
    text: str = await page.evaluate(
        """() => [document.title, document.body.innerText,
                  ...Array.from(document.querySelectorAll("[aria-label]"),
                                (n) => n.getAttribute("aria-label"))].join(" ")"""
    )
    # A hash's hex digits may spell a word ("add"): numbers, not words.
    text = re.sub(r"[0-9a-f]{8,}", " ", text.replace(match_id, " "))
    found = set(re.findall(r"[a-z]{3,}", text.lower()))
    return sorted(found & english_words())


async def within_the_screen(page: Page) -> bool:
    """Nothing of the page lies beyond the window's right edge."""
    fits: bool = await page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    return fits


async def shown_lines(page: Page) -> list[str]:
    """The text of each timeline line as drawn (its badges and roll details aside)."""
    lines: list[str] = await page.evaluate(
        """() => Array.from(document.querySelectorAll("tr.entry td.what"),
                            (td) => td.firstChild.textContent)"""
    )
    return lines


async def test_report_page_speaks_japanese_on_a_phone_and_switches_to_english(
    site: Site, cpu_match: str, ja_page: tuple[Page, list[str]]
) -> None:
    """A ja-JP phone gets the dispute report all in Japanese, fitting 375 px with 44 px
    targets, and the keyboard's switch redraws it in English with no new request, kept
    after a reload.

    Japanese: the sign-in, headings, the seat table, every line worded as the replay viewer
    words it; 1280 px is checked too, and English on the phone."""
    page, errors = ja_page
    report = site.http.get(
        f"/api/matches/{cpu_match}/report", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/report" in r.url else None)
    ja, en = REPORT["ja"], REPORT["en"]
    await page.set_viewport_size({"width": 375, "height": 812})
    await page.goto(f"{site.instance.http}/report/{cpu_match}")
    await expect(page.locator("html")).to_have_attribute("lang", "ja")
    await expect(page.locator("h1")).to_have_text(ja["title"])
    await expect(page.locator("#login label")).to_have_text(ja["token"])
    await expect(page.locator("#login button")).to_have_text(ja["sign_in"])
    await page.fill("#token", "not-the-token")
    await page.click("#login button[type=submit]")
    await expect(page.locator("#message")).to_have_text(ja["wrong_token"])
    assert await english_left(page, cpu_match) == []
    assert await within_the_screen(page) and await small_targets(page) == []

    await page.fill("#token", TOKEN)
    await page.click("#login button[type=submit]")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("main h2")).to_have_text(ja["sections"])
    await expect(page.locator("#summary th")).to_have_text(ja["columns"])
    await expect(page.locator("#summary tbody tr[data-seat='1'] td").nth(1)).to_have_text(
        "CPU（弱い）"
    )
    await expect(page.locator("#prologue h3")).to_have_text(ja["before"])
    await expect(page.locator("#epilogue h3")).to_have_text(ja["after"])
    first = report["turns"][0]
    await expect(page.locator("#turns .turn h3").first).to_contain_text(
        ja["turn"].format(n=1, who=seat_said(report, first["seat"], "ja"))
    )
    assert await shown_lines(page) == report_lines(report, "ja")
    await expect(page.locator(".chooser.by-stand-in").first).to_have_text(
        "決めたのは代わりに打つCPU"
    )
    assert await english_left(page, cpu_match) == []
    assert await within_the_screen(page)
    assert await small_targets(page) == []
    # The flagged turns only: the screenshots' view, kept through the switch below.
    await page.check("#only-flagged")
    flagged = await page.locator("#turns .turn:visible").count()
    assert 1 <= flagged < len(report["turns"])
    await shot(page, "dispute-report-ja-phone.png")
    await page.set_viewport_size({"width": 1280, "height": 900})
    assert await within_the_screen(page) and await small_targets(page) == []
    await shot(page, "dispute-report-ja-desktop.png")

    # The switch, from the keyboard (the menu focused, "E" picks English by its first
    # letter): English at once, from the report the page holds.
    await page.set_viewport_size({"width": 375, "height": 812})
    read = len(asked)
    await page.focus("#lang")
    await page.keyboard.press("E")
    await expect(page.locator("html")).to_have_attribute("lang", "en")
    await expect(page.locator("#lang")).to_have_value("en")
    await expect(page.locator("h1")).to_have_text(en["title"])
    await expect(page.locator("main h2")).to_have_text(en["sections"])
    await expect(page.locator("#summary th")).to_have_text(en["columns"])
    await expect(page.locator("#turns .turn:visible")).to_have_count(flagged)
    assert await shown_lines(page) == report_lines(report, "en")
    assert await page.title() == "Ludo: dispute report"
    assert len(asked) == read
    assert await within_the_screen(page) and await small_targets(page) == []
    assert await language_cookie(page) == "en"
    await page.reload()
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("html")).to_have_attribute("lang", "en")
    await expect(page.locator("h1")).to_have_text(en["title"])
    assert await shown_lines(page) == report_lines(report, "en")
    # The one error logged is the refused wrong token; nothing broke the CSP.
    assert [e for e in errors if "status of 401" not in e] == []


async def test_report_page_speaks_hindi_to_a_hindi_browser(
    site: Site, cpu_match: str, hi_page: tuple[Page, list[str]]
) -> None:
    """A hi-IN browser gets the dispute report in Hindi (its catalogue's words: headings,
    the seat table, a live connection's line), with no key missing a word and no error."""
    page, errors = hi_page
    words = catalogue("hi")["dispute"]["dispute"]
    await page.goto(f"{site.instance.http}/report/{cpu_match}")
    await expect(page.locator("html")).to_have_attribute("lang", "hi")
    await expect(page.locator("#lang")).to_have_value("hi")
    await expect(page.locator("h1")).to_have_text(words["title"])
    await expect(page.locator("#login label")).to_have_text(words["token"])
    await page.fill("#token", TOKEN)
    await page.click("#login button[type=submit]")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()
    await expect(page.locator("main h2")).to_have_text([words["per_seat"], words["timeline"]])
    await expect(page.locator("#summary th")).to_have_text(list(words["col"].values()))
    await expect(page.locator("tr.connected td.what")).to_contain_text(
        words["connected"].split("{who}")[1]
    )
    assert await page.title() == catalogue("hi")["meta"]["titles"]["dispute_report"]
    await page.set_viewport_size({"width": 375, "height": 812})
    assert await within_the_screen(page) and await small_targets(page) == []
    assert errors == []


def capture_lines(report: dict[str, Any]) -> int:
    """How many lines of the report's timeline are marked as a capture."""
    lines = report["prologue"] + [e for t in report["turns"] for e in t["entries"]]
    return sum("capture" in line["marks"] for line in lines + report["epilogue"])


# The colour of each mark's badge (white words on it): the rows never take it.
BADGES = {
    "capture": "rgb(220, 38, 38)",
    "timeout": "rgb(180, 83, 9)",
    "stand-in": "rgb(124, 58, 237)",
    "reclaim": "rgb(15, 118, 110)",
    "finish": "rgb(161, 98, 7)",
}

# Each marked line as drawn: its mark, the row's background (the first one painted, from
# the row up) and its badge's background and colour.
MARKED_ROWS = """() => Array.from(document.querySelectorAll("tr.entry"), (tr) => {
  const badge = tr.querySelector("td.what > .badge[class*=' m-']");
  if (!badge) return null;
  const mark = [...badge.classList].find((c) => c.startsWith("m-")).slice(2);
  let node = tr, back = "rgba(0, 0, 0, 0)";
  while (node && back === "rgba(0, 0, 0, 0)") {
    back = getComputedStyle(node).backgroundColor;
    node = node.parentElement;
  }
  const b = getComputedStyle(badge);
  return { mark, row: back, badge: b.backgroundColor, ink: b.color };
}).filter(Boolean)"""


async def test_report_lines_are_readable_and_axe_finds_nothing_serious(
    site: Site, cpu_match: str
) -> None:
    """Signed in, in Japanese and English, at 375×812 and 1280×800: every marked line of
    a real match (captures among them) keeps a light background under its words, its badge
    alone takes the mark's colour, and axe-core finds nothing serious or critical (signed
    out too)."""
    report = site.http.get(
        f"/api/matches/{cpu_match}/report", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()
    assert capture_lines(report) > 0  # the CPUs captured: the lines the page once painted red
    found: list[str] = []
    async with launched() as browser:
        for lang, locale in (("ja", "ja-JP"), ("en", "en-GB")):
            async with person(browser, locale=locale, width=375, height=812) as (page, errors):
                await page.goto(f"{site.instance.http}/report/{cpu_match}")
                await expect(page.locator("#token")).to_be_visible()
                found += await axe_at_both_sizes(page, f"report {lang} (signed out)")
                await page.fill("#token", TOKEN)
                await page.click("#login button[type=submit]")
                await expect(page.locator("body[data-ready=true]")).to_be_attached()
                rows: list[dict[str, str]] = await page.evaluate(MARKED_ROWS)
                marks = {r["mark"] for r in rows}
                assert "capture" in marks, marks
                for r in rows:
                    assert r["row"] not in BADGES.values(), r
                    assert r["badge"] == BADGES.get(r["mark"], r["badge"]), r
                    assert r["ink"] == "rgb(255, 255, 255)", r
                found += await axe_at_both_sizes(page, f"report {lang}")
                await page.check("#only-flagged")
                found += await axe_at_both_sizes(page, f"report {lang} (flagged only)")
                await page.set_viewport_size({"width": 375, "height": 812})
                await page.uncheck("#only-flagged")
                await page.locator("tr.entry.m-capture").first.scroll_into_view_if_needed()
                await shot(page, f"dispute-report-captures-{lang}-phone.png", full_page=False)
                assert await axe_violations(page) == []
                assert errors == []
    assert found == [], "\n".join(found)
