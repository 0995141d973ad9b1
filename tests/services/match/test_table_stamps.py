"""Quick-chat stamps and who is connected at the table, in Chromium: two people at one table, one
reading Japanese and one English; a stamp sent by one is shown beside that seat to the other in the
other's language and said in the log; muted, the next is not; the host switches stamps off; each
seat says whether its player is connected. Waiting is on the pages' own state and frames, never on a
clock.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site, create_party, name_myself
from tests.services.match.test_table import RECORD_FRAMES, RECORD_SCROLLS

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]


async def sit_at(page: Page, site: Site, name: str, party_url: str) -> None:
    """Name this person in the lobby, open the party's link and take the first free seat."""
    await name_myself(page, site, name)
    await page.goto(party_url)
    await page.locator("[data-sit]").first.click()
    await expect(page.locator("#leave-party")).to_be_visible()


async def stamp_frames(page: Page) -> int:
    """How many stamp frames the page's sockets received."""
    count: int = await page.evaluate(
        "window.__frames.filter(f => JSON.parse(f).type === 'stamp').length"
    )
    return count


async def test_a_stamp_is_seen_by_the_other_player_in_their_language_until_muted(
    site: Site, browser: Browser
) -> None:
    """よろしく sent from a Japanese page shows as "Good luck" beside that seat on an English
    page (a bubble, and a line in the log), with each seat marked online; once the English
    player mutes the sender, the next stamp reaches the page and is neither shown nor said;
    the mute button then says what pressing it does ("Unmute", ミュート解除)."""
    async with (
        person(browser, locale="ja-JP") as (host, host_errors),
        person(browser, locale="en-GB", width=375, height=812, touch=True) as (guest, errors),
    ):
        for page in (host, guest):
            await page.add_init_script(RECORD_FRAMES)
        await guest.add_init_script(RECORD_SCROLLS)
        await name_myself(host, site, "はな")
        await create_party(host, seats=2)
        await sit_at(guest, site, "Sam", host.url)
        await host.click("#start")
        for page in (host, guest):
            await expect(page.locator("#stamps-box")).to_be_visible()
            await expect(page.locator('#players li[data-seat="1"] [data-presence]')).to_have_text(
                re.compile("online|接続中")
            )
        await expect(guest.locator('#players li[data-seat="0"] [data-presence]')).to_have_text(
            "● online"
        )

        good_luck = host.locator('#stamp-palette [data-stamp="good_luck"]')
        await expect(good_luck).to_have_text("よろしく")
        await good_luck.click()
        bubble = guest.locator('#bubbles .bubble[data-seat="0"]')
        await expect(bubble).to_have_text("Good luck")
        await expect(guest.locator("#log li.stamp").last).to_contain_text("はな: “Good luck”")
        await expect(host.locator("#log li.stamp").last).to_have_text("あなた: 「よろしく」")
        await shot(guest, "table-stamp-375x812-en.png", full_page=False)
        await shot(host, "table-stamp-1280x900-ja.png", full_page=False)
        assert await guest.evaluate("window.__scrolls") == []

        # A second stamp within 3 s is refused, said beside the palette.
        await expect(host.locator('#stamp-palette [data-stamp="nice"]')).to_be_disabled()

        mute = guest.locator('#players [data-mute="0"]')
        await expect(mute).to_have_text("Mute")
        await expect(mute).to_have_accessible_name("Mute ○Yellow はな's stamps")
        await mute.click()
        # The button now says what pressing it does, and a tag says the state.
        await expect(mute).to_have_text("Unmute")
        await expect(mute).to_have_accessible_name("Unmute ○Yellow はな's stamps")
        assert await mute.get_attribute("aria-pressed") is None
        await expect(guest.locator('#players li[data-seat="0"] .tag.muted')).to_have_text("Muted")
        await expect(mute).to_be_focused()
        await expect(bubble).to_have_count(0)
        said = await guest.locator("#log li.stamp").count()

        nice = host.locator('#stamp-palette [data-stamp="nice"]')
        await expect(nice).to_be_enabled(timeout=10_000)  # the palette's 3 s rest
        await nice.click()
        await expect(host.locator("#log li.stamp").last).to_have_text("あなた: 「ナイス！」")
        await guest.wait_for_function(
            "window.__frames.filter(f => JSON.parse(f).type === 'stamp').length >= 2"
        )
        assert await stamp_frames(guest) == 2
        await expect(guest.locator("#bubbles .bubble")).to_have_count(0)
        assert await guest.locator("#log li.stamp").count() == said
        assert await guest.evaluate("localStorage.getItem('ludo.muted')") is not None
        # In Japanese too: the button says ミュート解除 once muted, the tag ミュート中.
        host_mute = host.locator('#players [data-mute="1"]')
        await expect(host_mute).to_have_text("ミュート")
        await host_mute.click()
        await expect(host_mute).to_have_text("ミュート解除")
        await expect(host.locator('#players li[data-seat="1"] .tag.muted')).to_have_text(
            "ミュート中"
        )
        await host_mute.click()
        await expect(host_mute).to_have_text("ミュート")
        await expect(host.locator('#players li[data-seat="1"] .tag.muted')).to_have_count(0)
        assert await small_targets(guest) == []
        assert await axe_violations(guest) == []
        assert errors == [] and host_errors == []


async def test_the_host_switches_stamps_off_and_a_spectator_gets_no_palette(
    site: Site, browser: Browser
) -> None:
    """The host (and only the host) has the stamps switch, at the party and during the
    match; "Stamps: off" turns the players' palettes off with words saying why; a visitor
    at /match/{id} sees no palette; back on, the palette works and the visitor sees it."""
    async with (
        person(browser) as (host, host_errors),
        person(browser) as (guest, errors),
        person(browser) as (visitor, visitor_errors),
    ):
        await name_myself(host, site, "Ann")
        await create_party(host, seats=2)
        await sit_at(guest, site, "Ben", host.url)
        await expect(host.locator("#party-stamps")).to_have_text("Stamps: on")
        await expect(guest.locator("#party-stamps")).to_be_hidden()
        await host.click("#start")
        switch = host.locator("#match-stamps")
        await expect(switch).to_have_text("Stamps: on")
        await expect(guest.locator("#match-stamps")).to_be_hidden()
        await switch.click()
        await expect(switch).to_have_text("Stamps: off")
        await expect(switch).to_have_attribute("aria-pressed", "false")
        await expect(guest.locator('#stamp-palette [data-stamp="thanks"]')).to_be_disabled()
        await expect(guest.locator("#stamps-note")).to_have_text(
            "The host has switched stamps off."
        )
        match_id = await host.evaluate("document.querySelector('#replay-link').pathname")
        await visitor.goto(site.url + "/match/" + match_id.rsplit("/", 1)[1])
        await expect(visitor.locator("body[data-ready=true]")).to_be_attached()
        await expect(visitor.locator("#stamps-box")).to_be_hidden()
        await switch.click()
        await expect(switch).to_have_text("Stamps: on")
        thanks = guest.locator('#stamp-palette [data-stamp="thanks"]')
        await expect(thanks).to_be_enabled()
        await thanks.click()
        await expect(host.locator('#bubbles .bubble[data-seat="1"]')).to_have_text("Thanks")
        await expect(visitor.locator('#bubbles .bubble[data-seat="1"]')).to_have_text("Thanks")
        assert errors == [] and host_errors == [] and visitor_errors == []


async def test_the_replay_viewer_shows_the_stamps_on_its_timeline(
    site: Site, browser: Browser
) -> None:
    """/replay/{id} lists each stamp after the event before it, in the viewer's language,
    with a mark on the timeline."""
    http = site.http
    tokens = []
    for name in ("ann", "ben"):
        token = http.post("/api/players", json={"name": name}).json()["token"]
        tokens.append({"Authorization": f"Bearer {token}"})
    party = http.post("/api/parties", json={"seats": 2}, headers=tokens[0]).json()["id"]
    assert http.post(f"/api/parties/{party}/join", json={}, headers=tokens[1]).status_code == 200
    match_id = http.post(f"/api/parties/{party}/start", headers=tokens[0]).json()["match_id"]
    r = http.post(f"/api/matches/{match_id}/stamps", json={"stamp": "good_luck"}, headers=tokens[0])
    assert r.status_code == 201, r.text
    r = http.post(f"/api/matches/{match_id}/stamps", json={"stamp": "star"}, headers=tokens[1])
    assert r.status_code == 201, r.text
    for locale, lines in (
        ("ja-JP", ("ann: 「よろしく」", "ben: スタンプ「星」")),
        ("en-GB", ("ann: “Good luck”", "ben: sticker “Star”")),
    ):
        async with person(browser, locale=locale) as (page, errors):
            await page.goto(f"{site.url}/replay/{match_id}")
            await expect(page.locator("body[data-stamps='2']")).to_be_attached()
            rows = page.locator("#events li.stamp")
            await expect(rows).to_have_count(2)
            for row, text in zip(await rows.all(), lines, strict=True):
                await expect(row).to_contain_text(text)
            await expect(page.locator("#timeline .m-stamp")).to_have_count(2)
            assert errors == []
