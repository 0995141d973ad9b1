"""The table's controls beyond a roll and a move, in Chromium (tests/browser.py): the
keyboard's way from the roll button to the pieces, the only move played for the player,
the CPUs' speed, conceding a lost match against CPUs, and a ranked table's ratings.

Against the match service with its deadline worker (CPUs play at once unless a test
asks for their pause) as in test_table.py, whose helpers these tests share. Waiting is on
the page's own state (`body[data-version]`, the roll button, movable pieces, texts),
never on a clock.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import person, requires_chromium
from tests.services.match.site_pages import Site, name_myself, version
from tests.services.match.test_table import play_now

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
        await page.wait_for_function(
            "(v) => Number(document.body.dataset.version) > v", arg=before
        )
        assert errors == []
