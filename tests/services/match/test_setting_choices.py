"""The pages' settings forms offer exactly the domain's values (`domain.settings`, served to
them as `SETTINGS`), checked in a real browser: the lobby's party and quick-play forms, the
arenas' create form, each choice's value and the one checked at first.

Debian's Chromium driven by Playwright (tests/browser.py) against the match service on a
loopback port (tests/services/match/site_pages.py); the waiting is on the forms being
drawn, never on a clock.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from domain.settings import CHOICES
from tests.browser import requires_chromium
from tests.services.match.site_pages import Site

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)


def _word(value: Any) -> str:
    """A value as the form's radio holds it (an empty string for "none")."""
    return "" if value is None else str(value)


async def _offered(page: Page, box: str) -> tuple[list[str], str]:
    """The radio values of the segmented control `box`, and the one checked."""
    inputs = page.locator(f"{box} input[type=radio]")
    await expect(inputs.first).to_be_attached()
    values = await inputs.evaluate_all("(all) => all.map((i) => i.value)")
    checked = await page.locator(f"{box} input:checked").get_attribute("value")
    return values, checked or ""


async def test_the_forms_offer_the_domains_values(site: Site, browser: Browser) -> None:
    """Lobby: seats, turn limit (none first), pool seats and CPU wait ("people": none);
    arenas: seats, rules, turn limit, minutes: each the domain's values, its default
    checked."""
    party, pool, arena = CHOICES["party"], CHOICES["pool"], CHOICES["arena"]
    page = await browser.new_page()
    try:
        await page.goto(site.url + "/")
        assert await _offered(page, "#seats") == (
            [_word(v) for v in party["seats"]],
            _word(party["defaults"]["seats"]),
        )
        assert await _offered(page, "#limit") == (
            [_word(v) for v in party["turn_limit"]],
            _word(party["defaults"]["turn_limit"]),
        )
        assert await _offered(page, "#q-seats") == (
            [_word(v) for v in pool["seats"]],
            _word(pool["defaults"]["seats"]),
        )
        people = ["people" if v is None else _word(v) for v in pool["cpu_after"]]
        assert await _offered(page, "#q-wait") == (people, _word(pool["defaults"]["cpu_after"]))

        await page.goto(site.url + "/tournaments")
        for box, key in (
            ("#c-seats", "seats"),
            ("#c-rules", "rules"),
            ("#c-limit", "turn_limit"),
            ("#c-minutes", "minutes"),
        ):
            assert await _offered(page, box) == (
                [_word(v) for v in arena[key]],
                _word(arena["defaults"][key]),
            ), box
    finally:
        await page.close()
