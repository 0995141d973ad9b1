"""The site's pages in a third language: every page the match service serves from the
catalogues (web/i18n/<lang>.json, services/shared/words.py) reads in Hindi for a hi-IN
browser with no word missing; the language menu redraws a match in play without a
reload, and the next page load keeps the choice (the `ludo_lang` cookie); a guest who
gives no name gets a Hindi one.

Debian's Chromium driven by Playwright (tests/browser.py) against the match and ranking
services on loopback ports (this folder's `site` fixture); the waiting is on the pages'
own state (`body[data-ready]`, <html lang>, lines drawn), never on a clock.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from services.shared.words import catalogue
from tests.browser import person, requires_chromium, shot
from tests.services.match.site_pages import Site, choose_language, play_my_turns
from tests.services.match.test_site_a11y import NOT_FOUND_LOG, open_party
from tests.services.match.test_table import log_lines, play_now

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

HI = catalogue("hi")
DEVANAGARI = re.compile(r"[\u0900-\u097f]")
NOWHERE = "/party/00000000-0000-0000-0000-000000000000"


async def ready(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


async def test_every_page_reads_in_hindi_for_a_hindi_browser(site: Site, browser: Browser) -> None:
    """With the browser's language hi-IN, the lobby, the arenas, a party's table, the
    ratings, the rules and the 404 page are `<html lang="hi">`, say their own words in
    Hindi (and the header's), and log no error: no key without a word."""
    party_id = open_party(site)
    common = HI["common"]
    pages = {
        "/": ("#quick-title", [HI["lobby"]["quick_play"]]),
        "/tournaments": ("main h1, #live-title", [common["arenas"], HI["arenas"]["live_arenas"]]),
        f"/party/{party_id}": ("#party-view label[for=share-link]", [common["share"]]),
        "/leaderboard": ("#leaderboard-title", [common["leaderboard"]]),
        "/rules": ("#rules h1", [HI["rules"]["rules"]["top"]["title"]]),
        NOWHERE: ("#what", [common["missing"]["party"]]),
    }
    async with person(browser, locale="hi-IN") as (page, errors):
        for path, (where, words) in pages.items():
            if path == f"/party/{party_id}":  # a party waiting: no match, no data-ready
                await page.goto(site.url + path)
                await expect(page.locator("#party-view")).to_be_visible()
            else:
                await ready(page, site.url + path)
            await expect(page.locator("html")).to_have_attribute("lang", "hi")
            await expect(page.locator("nav a[href='/']")).to_have_text(common["lobby"])
            await expect(page.locator("#lang")).to_have_value("hi")
            for word in words:
                assert DEVANAGARI.search(word), word
                await expect(page.locator(where).filter(has_text=word).first).to_be_visible()
            name = path.strip("/").split("/")[0] or "lobby"
            await shot(page, f"{name}-hi.png")
        assert [e for e in errors if e != NOT_FOUND_LOG] == []


async def test_the_language_menu_redraws_a_match_in_play_and_is_kept(
    site: Site, browser: Browser
) -> None:
    """Mid-match, choosing हिन्दी in the header's menu says the log, the turn line and the
    controls in Hindi in the same page (no reload: the page's own state survives), sets
    the `ludo_lang` cookie, and the next load of the table is Hindi from its first paint."""
    async with person(browser) as (page, errors):
        await ready(page, site.url + "/")
        await page.fill("#name", "meera")
        await page.click("#name-form button[type=submit]")
        await play_now(page)
        await play_my_turns(page, until_version=12)
        english = await log_lines(page)
        await page.evaluate("() => { window.__samePage = true; }")
        await choose_language(page, "hi")
        assert await page.evaluate("() => window.__samePage === true")
        said = await log_lines(page)
        # The CPUs play on while the words load: the log may have grown, never shrunk,
        # and every line the page showed in English is now redrawn in Hindi.
        assert set(english) <= set(said)
        for version, line in said.items():
            assert DEVANAGARI.search(line), line
            assert version not in english or line != english[version]
        sound = (re.escape(HI["common"][key]) for key in ("sound_on", "sound_off"))
        await expect(page.locator("#sound")).to_have_text(re.compile("^(" + "|".join(sound) + ")$"))
        cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
        assert cookies.get("ludo_lang") == "hi"
        await page.reload()
        await expect(page.locator("body[data-ready=true]")).to_be_attached()
        assert await page.evaluate("() => window.__samePage === undefined")
        await expect(page.locator("html")).to_have_attribute("lang", "hi")
        await expect(page.locator("#lang")).to_have_value("hi")
        for line in (await log_lines(page)).values():
            assert DEVANAGARI.search(line), line
        await shot(page, "table-hi.png", full_page=False)
        assert errors == []


async def test_a_hindi_reader_without_a_name_gets_a_hindi_one(site: Site, browser: Browser) -> None:
    """In a hi-IN browser, playing at once without typing a name makes a guest whose name
    the server made up in Hindi (a colour, an animal, a number), shown as the player's."""
    async with person(browser, locale="hi-IN") as (page, errors):
        await ready(page, site.url + "/")
        await play_now(page)
        name = await page.evaluate("() => JSON.parse(localStorage.getItem('ludo.guest')).name")
        colours, animals = HI["guest_names"]["colours"], HI["guest_names"]["animals"]
        colour = next(c for c in colours if name.startswith(c + " "))
        assert any(name == f"{colour} {a} {name[-2:]}" for a in animals), name
        assert re.fullmatch(r"\d{2}", name[-2:]), name
        await expect(page.locator("#me")).to_have_text(name)
        assert errors == []


async def test_the_language_menu_works_from_the_keyboard(site: Site, browser: Browser) -> None:
    """Tab reaches the header's language menu, an arrow key switches the page (each
    press a language, in the catalogues' order: English, हिन्दी, 日本語), and the menu
    keeps the keyboard's focus throughout."""
    async with person(browser) as (page, errors):
        await ready(page, site.url + "/rules")
        for _ in range(12):  # the brand, four links, then the menu
            await page.keyboard.press("Tab")
            if await page.evaluate("() => document.activeElement.id === 'lang'"):
                break
        assert await page.evaluate("() => document.activeElement.id") == "lang"
        await page.keyboard.press("ArrowDown")
        await expect(page.locator("html")).to_have_attribute("lang", "hi")
        await expect(page.locator("#rules h1")).to_have_text(HI["rules"]["rules"]["top"]["title"])
        await page.keyboard.press("ArrowDown")
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        await expect(page.locator("#lang")).to_be_focused()
        assert errors == []
