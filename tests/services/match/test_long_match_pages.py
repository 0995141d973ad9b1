"""A long match's pages in Chromium: the table (`/match/{id}`) and the replay viewer
(`/replay/{id}`) draw a match of 2,000 events and more from what its first screen needs
(the state, the latest lines, the steps in view), and bring the rest when the reader asks,
at a phone's size and a desktop's, in Japanese and English.

What a first load fetched is counted (requests, event frames, steps), never timed: the
times are `ludo bench site`'s (docs/benchmarks.md). The matches are stored as
`benchmarks/long_match.py` stores them (a few milliseconds, not a long game played).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.long_match import long_match, store_match
from domain.events import Event, SeatSpec
from services.shared.database import create_engine
from services.shared.words import catalogue
from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, running_site
from tests.services.match.site_words import site_words
from tests.services.match.test_table import RECORD_ANNOUNCEMENTS

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

LONG = 2000
TAIL = 50  # the table's first lines (table.js LOG_TAIL)
SIZES = ((375, 812), (1280, 800))
LOCALES = (("ja-JP", "ja"), ("en-GB", "en"))

# Every message the page's sockets receive, from its first script on.
RECORD_FRAMES = """
window.__frames = [];
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (e) => window.__frames.push(String(e.data)));
  }
};
"""


class LongSite(Site):
    """The site, and long matches stored on its database."""

    def __init__(self, site: Site, database_url: str) -> None:
        super().__init__(site.match)
        self.database_url = database_url

    async def store(self, events: list[Event], seed: bytes) -> str:
        """The match stored under a new id (as `benchmarks/long_match.py` stores it)."""
        match_id = str(uuid.uuid4())
        engine: AsyncEngine = create_engine(self.database_url)
        try:
            await store_match(engine, match_id, events, seed)
        finally:
            await engine.dispose()
        return match_id


@pytest.fixture
def site(database_url: str, tmp_path: Path) -> Iterator[LongSite]:
    with running_site(database_url, tmp_path) as running:
        site = LongSite(running, database_url)
        yield site
        site.http.close()


async def _page_back_to_the_start(page: Page) -> None:
    """Press "Show earlier events" until there is nothing earlier."""
    while await page.locator("#log-more").is_visible():
        before = await page.locator("#log li").count()
        await page.click("#log-more")
        await page.wait_for_function(
            "(n) => document.querySelectorAll('#log li').length > n", arg=before
        )


async def _frames(page: Page) -> list[dict[str, Any]]:
    """The match socket's frames so far, a batch's one by one."""
    found: list[dict[str, Any]] = await page.evaluate(
        """() => window.__frames.flatMap((raw) => {
             const f = JSON.parse(raw);
             return f.type === "batch" ? f.frames : [f];
           })"""
    )
    return found


def _requested(page: Page) -> list[str]:
    """The URLs `page` requests from now on, filled as it asks."""
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    return urls


async def _versions(page: Page, where: str = "#log li") -> list[int]:
    found: list[int] = await page.locator(where).evaluate_all(
        "lis => lis.map(li => Number(li.dataset.version))"
    )
    return found


# ------------------------------------------------------------------------------ the table


@pytest.mark.parametrize(("locale", "lang"), LOCALES)
async def test_a_long_finished_match_draws_from_its_latest_lines_and_loads_earlier_ones(
    site: LongSite, browser: Browser, locale: str, lang: str
) -> None:
    """`/match/{id}` of a finished 2,000-event match draws from its last 50 events and loads
    earlier ones on demand, at a phone's size and a desktop's.

    The result and the board at once from the socket's last 50 events and the state (no
    other read of events); the log offers the earlier ones in words, loads a page of them on
    a press and another when the reader scrolls to the top of the box, keeps the lines in
    view where they were, and announces none of them. axe finds nothing serious."""
    words = site_words()[lang]
    events, seed = long_match(LONG, finished=True)
    match_id = await site.store(events, seed)
    head = len(events)
    for width, height in SIZES:
        async with person(browser, locale=locale, width=width, height=height) as (page, errors):
            await page.add_init_script(RECORD_FRAMES)
            requests = _requested(page)
            await page.goto(f"{site.url}/match/{match_id}")
            await expect(page.locator("body[data-ready=true]")).to_be_attached()
            await expect(page.locator("#result")).to_be_visible()
            assert await page.locator("#placements > li").count() == 4
            # What the first drawing took: the skipped frame, the last 50 events, the state.
            # (who is connected may be said first: a frame of its own, outside the match's)
            frames = [f for f in await _frames(page) if f["type"] in ("skipped", "event")]
            assert frames[0] == {"type": "skipped", "from": 0, "until": head - TAIL}
            assert [f["version"] for f in frames if f["type"] == "event"] == list(
                range(head - TAIL, head)
            )
            assert not [u for u in requests if re.search(r"/(events|log|steps|replay)\b", u)]
            assert await _versions(page) == list(range(head - TAIL, head))
            more = page.locator("#log-more")
            await expect(more).to_have_text(words["log_more"].format(n=head - TAIL))
            await shot(page, f"long-match-{width}-{lang}.png", full_page=False)
            assert await axe_violations(page) == []
            assert await small_targets(page) == []

            await page.evaluate(RECORD_ANNOUNCEMENTS)
            box = page.locator("#log")
            await box.evaluate("b => { b.scrollTop = 0; }")
            await page.locator(".log-card").scroll_into_view_if_needed()
            await shot(page, f"long-match-log-{width}-{lang}.png", full_page=False)
            first_line = page.locator(f"#log li[data-version='{head - TAIL}']")
            await more.click()
            await expect(page.locator("#log-older li")).to_have_count(TAIL)
            await expect(page.locator("#log-note")).to_have_text(words["log_added"].format(n=TAIL))
            await expect(more).to_have_text(words["log_more"].format(n=head - 2 * TAIL))
            assert await _versions(page) == list(range(head - 2 * TAIL, head))
            # The line the reader was at is still in view.
            line = await first_line.bounding_box()
            frame = await box.bounding_box()
            assert line is not None and frame is not None
            assert frame["y"] <= line["y"] < frame["y"] + frame["height"]
            # Scrolled up to the top of the box: the page before that, added above.
            await box.hover()
            await page.mouse.wheel(0, -20_000)
            await expect(page.locator("#log-older li")).to_have_count(2 * TAIL)
            assert await _versions(page) == list(range(head - 3 * TAIL, head))
            assert await box.evaluate("b => b.scrollTop") > 0
            # Heard: that earlier lines were added (twice), none of the lines themselves (the
            # analysis line of the result may be said meanwhile).
            heard: list[str] = await page.evaluate("window.__heard")
            lines = set(await page.locator("#log li").all_text_contents())
            assert heard.count(words["log_added"].format(n=TAIL)) == 2
            assert not lines & set(heard)
            await shot(page, f"long-match-earlier-{width}-{lang}.png", full_page=False)
            assert await axe_violations(page) == []
            logs = [u for u in requests if "/log?" in u]
            assert len(logs) == 2 and all(f"limit={TAIL}" in u for u in logs)
            assert errors == []


async def test_the_log_reaches_the_first_event_and_says_nothing_more_is_earlier(
    site: LongSite, browser: Browser
) -> None:
    """A match of 130 events opened: pressing on loads every earlier page down to the
    first event (each once, in order), and then the offer is gone."""
    events, seed = long_match(130)
    match_id = await site.store(events, seed)
    async with person(browser) as (page, errors):
        await page.goto(f"{site.url}/match/{match_id}")
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        await _page_back_to_the_start(page)
        assert await _versions(page) == list(range(len(events)))
        assert await page.locator("#log-earlier").is_hidden()
        assert errors == []


# A fling: one wheel turn, then the box keeps scrolling up by itself, a step every 0.4 s,
# reaching the top 2 s after the wheel (as a phone's momentum, or a busy page's smooth
# scroll, does). The steps are the behaviour simulated, not a wait for the page.
FLING = """async (box) => {
  box.dispatchEvent(new WheelEvent("wheel", {deltaY: -100, bubbles: true}));
  const from = box.scrollTop;
  for (let i = 1; i <= 5; i++) {
    await new Promise((done) => setTimeout(done, 400));
    box.scrollTop = Math.round(from * (1 - i / 5));
  }
}"""


async def test_a_fling_to_the_top_loads_the_earlier_lines(site: LongSite, browser: Browser) -> None:
    """The reader's scroll that reaches the top of the log more than a second after their
    gesture, still moving (a fling), loads the earlier lines as a quick one does."""
    events, seed = long_match(300)
    match_id = await site.store(events, seed)
    async with person(browser) as (page, errors):
        await page.goto(f"{site.url}/match/{match_id}")
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        assert await page.locator("#log-older li").count() == 0
        await page.locator("#log").evaluate(FLING)
        await expect(page.locator("#log-older li")).to_have_count(TAIL)
        assert errors == []


async def test_a_spectator_of_a_long_match_in_play_follows_it_exactly_through_a_long_drop(
    site: LongSite, browser: Browser
) -> None:
    """A spectator of a 2,000-event match in play sees every event exactly once, through a
    drop longer than the log's first page.

    It joins: the last 50 lines and the state. The players play on: every new event is
    drawn once. It goes offline while more than 50 events are played and comes back: the
    log starts again from the latest 50 (the rest offered), the board is the server's
    state, and paging back gives every event exactly once."""
    guests = []
    for i in range(4):
        made = site.http.post("/api/players", json={"name": f"p{i}"}).json()
        guests.append(made)
    seats = tuple(SeatSpec(name=g["name"], player_id=g["id"]) for g in guests)
    events, seed = long_match(LONG, seats=seats)
    match_id = await site.store(events, seed)

    def act() -> int:
        state = site.state(match_id)
        auth = {"Authorization": f"Bearer {guests[state['turn']]['token']}"}
        if state["phase"] == "roll":
            r = site.http.post(f"/api/matches/{match_id}/roll", headers=auth)
        else:
            moves = site.http.get(f"/api/matches/{match_id}/moves").json()["moves"]
            r = site.http.post(
                f"/api/matches/{match_id}/move", headers=auth, json={"piece": moves[0]["piece"]}
            )
        assert r.status_code == 200, r.text
        version: int = r.json()["version"]
        return version

    async with person(browser, locale="ja-JP", width=375, height=812) as (page, errors):
        await page.goto(f"{site.url}/match/{match_id}")
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        head = len(events)
        assert await _versions(page) == list(range(head - TAIL, head))
        version = head
        for _ in range(8):
            version = act()
        await page.wait_for_function(
            "(v) => Number(document.body.dataset.version) >= v", arg=version
        )
        assert await _versions(page) == list(range(head - TAIL, version))
        await page.context.set_offline(True)
        await expect(page.locator("#connection")).to_be_visible()
        gone = version
        while version - gone <= TAIL + 10:
            version = act()
        await page.context.set_offline(False)
        await page.wait_for_function(
            "(v) => Number(document.body.dataset.version) >= v", arg=version
        )
        await expect(page.locator("#connection")).to_be_hidden()
        assert await _versions(page) == list(range(version - TAIL, version))
        pieces = await page.locator("#board .piece").count()
        assert pieces == 16
        state = site.state(match_id)
        assert await page.evaluate("Number(document.body.dataset.version)") == state["version"]
        # Paged back to the start: every event once.
        await _page_back_to_the_start(page)
        assert await _versions(page) == list(range(version))
        assert errors == []


# ------------------------------------------------------------------------ the replay viewer

RANGE = 100  # the steps the viewer reads at a time (replay_viewer.html)

# What the fairness panel said of the dice when the page set `body[data-ready]` (its first
# drawing): recorded by the page itself, in the same turn of its event loop.
DICE_AT_READY = """
new MutationObserver((changes, seen) => {
  if (document.body && document.body.dataset.ready === "true") {
    window.__diceAtReady = document.querySelector("#fair-summary").textContent;
    seen.disconnect();
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready"] });
"""


def _replay_words(lang: str) -> dict[str, Any]:
    words: dict[str, Any] = catalogue(lang)["replay"]["viewer"]
    return words


@pytest.mark.parametrize(("locale", "lang"), LOCALES)
async def test_a_long_replay_draws_from_one_range_and_reads_the_rest_on_demand(
    site: LongSite, browser: Browser, locale: str, lang: str
) -> None:
    """`/replay/{id}#1500` of a 2,036-event match draws from one range of steps and reads
    the rest on demand, at a phone's size and a desktop's.

    One answer (the match and the 100 steps from event 1500, under an eighth of the whole
    model's bytes), the dice check said as pending; then earlier and later events on a
    press and on a scroll of the list by hand, the last event with End, and every die
    checked in the page after the first drawing. axe finds nothing serious."""
    words = _replay_words(lang)
    events, seed = long_match(LONG, finished=True)
    match_id = await site.store(events, seed)
    count = len(events)
    whole = len(site.http.get(f"/api/matches/{match_id}/steps").content)
    rolls = site.http.get(f"/api/matches/{match_id}/fairness").json()["rolls"]
    for width, height in SIZES:
        async with person(browser, locale=locale, width=width, height=height) as (page, errors):
            answers: list[tuple[str, int]] = []

            async def on_response(response: Any, seen: list[tuple[str, int]] = answers) -> None:
                if "/steps" in response.url:
                    seen.append((response.url, len(await response.body())))

            page.on("response", on_response)
            requests = _requested(page)
            await page.add_init_script(DICE_AT_READY)
            await page.goto(f"{site.url}/replay/{match_id}#1500")
            await expect(page.locator("body[data-ready=true]")).to_be_attached()
            # The first drawing: one range read, the dice check still to come.
            at_ready = [u for u in requests if "/steps" in u]
            assert len(at_ready) == 1 and at_ready[0].endswith(f"/steps?from=1500&limit={RANGE}")
            await expect(page.locator("#counter")).to_have_text(f"1501 / {count}")
            assert await page.evaluate("window.__diceAtReady") == words["dice_reading"]
            assert await _versions(page, "#events li") == list(range(1500, 1600))
            await expect(page.locator("#events-shown")).to_have_text(
                words["events_shown"].format(**{"from": 1500, "to": 1599, "count": count})
            )
            await expect(page.locator("#events li.current")).to_have_attribute(
                "data-version", "1500"
            )
            await shot(page, f"long-replay-{width}-{lang}.png", full_page=False)
            # Earlier events on a press; later ones when the list is scrolled to its end.
            await page.click("#events-earlier")
            await expect(page.locator("#events li")).to_have_count(2 * RANGE)
            assert await _versions(page, "#events li") == list(range(1400, 1600))
            await page.locator("#events").hover()
            await page.mouse.wheel(0, 50_000)
            await expect(page.locator("#events li")).to_have_count(3 * RANGE)
            assert await _versions(page, "#events li") == list(range(1400, 1700))
            await expect(page.locator("#events-earlier")).to_have_text(words["events_earlier"])
            # The last event: its range read when asked for.
            await page.locator("#next").focus()
            await page.keyboard.press("End")
            await expect(page.locator("#counter")).to_have_text(f"{count} / {count}")
            await expect(page.locator("#events li.current")).to_have_attribute(
                "data-version", str(count - 1)
            )
            assert await _versions(page, "#events li") == list(range(2000, count))
            # Every die re-derived in the page, after the first drawing.
            await expect(page.locator("body[data-dice=checked]")).to_be_attached(timeout=60_000)
            await expect(page.locator("#fair-dice tbody tr.ok")).to_have_count(len(rolls))
            await expect(page.locator("#fair-summary")).to_have_text(
                words["dice_summary"].format(good=len(rolls), total=len(rolls)) + " ✓"
            )
            steps = [size for url, size in answers]
            assert len(steps) == 4 and max(steps) * 8 < whole, (steps, whole)
            assert await axe_violations(page) == []
            assert await small_targets(page) == []
            await shot(page, f"long-replay-end-{width}-{lang}.png", full_page=False)
            assert errors == []
