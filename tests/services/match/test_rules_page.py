"""The rules page, /rules: over HTTP, and in a real browser in Japanese, English and Hindi
and on a 375 px phone (Debian's Chromium driven by Playwright, tests/browser.py).

The match service runs under uvicorn on a loopback port (the live tests' `Instance`), as in
test_site.py; the waiting is on the page's own state (`body[data-ready]`, the article
shown), never on a clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from services.shared.settings import Settings
from tests.browser import launched, person, requires_chromium, shot
from tests.services.conftest import Api
from tests.services.match.test_live import Instance

pytestmark = pytest.mark.anyio

expect.set_options(timeout=15_000)

LOCAL_RULES = "#rules #local-rules table"


async def test_the_rules_page_is_served_under_its_csp(api: Api) -> None:
    """GET /rules is the rules page: HTML under a nonce-based CSP, never cached, with the
    rules in the reader's language in its article and its words block."""
    r = await api.call("GET", "/rules")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'nonce-" in csp and "style-src 'self'" in csp
    assert "default-src 'none'" in csp and "unsafe" not in csp
    assert r.headers["cache-control"] == "no-store"
    assert "Three sixes end the turn" in r.text and "ルドーのルール" not in r.text
    # The article's text is in the HTML itself, not only in the words block.
    assert '<h1 data-t="rules.top.title" data-t-html>Ludo: the rules and how to play</h1>' in r.text
    assert '<span class="mark c-yellow">○</span>' in r.text
    ja = await api.call("GET", "/rules", headers={"Accept-Language": "ja-JP,ja;q=0.9"})
    assert '<html lang="ja">' in ja.text and "6が3回で番が終わる" in ja.text
    assert "<title>ルドーのルール・遊び方</title>" in ja.text
    assert "http://" not in r.text.replace("http://www.w3.org", "")


@pytest.fixture
def site(database_url: str, tmp_path: Path) -> Iterator[str]:
    settings = Settings(data_dir=tmp_path, database_url=database_url, scheduler=False)
    with Instance(settings) as instance:
        yield instance.http


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with launched() as chromium:
        yield chromium


async def open_rules(page: Page, site: str) -> None:
    await page.goto(site + "/rules")
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


@pytest.mark.slow
@requires_chromium
async def test_the_rules_page_in_japanese(site: str, browser: Browser) -> None:
    """In a ja-JP browser the Japanese rules show: the heading, the defaults, the 11 local
    rules (12 rows with the header) and the play button to the lobby."""
    async with person(browser, "ja-JP") as (page, errors):
        await open_rules(page, site)
        await expect(page.locator("h1:visible")).to_have_text("ルドーのルール・遊び方")
        await expect(page).to_have_title("ルドーのルール・遊び方")
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        rows = page.locator(LOCAL_RULES + " tr")
        await expect(rows).to_have_count(12)
        await expect(rows.filter(has_text="6が3回で番が終わる")).to_have_count(1)
        await expect(page.locator("#defaults tbody tr")).to_have_count(5)
        await expect(page.locator("#terms dt")).to_have_count(6)
        await expect(page.locator("#faq details")).to_have_count(4)
        play = page.get_by_role("link", name="このルールでそのまま遊ぶ")
        await expect(play).to_have_attribute("href", "/")
        await expect(page.locator("nav a[href='/rules']")).to_have_text("ルール")
        colours = await page.eval_on_selector_all(
            "#setup .mark", "marks => marks.map(m => [m.textContent, getComputedStyle(m).color])"
        )
        assert [c[0] for c in colours] == ["○", "□", "△", "✚"]
        assert len({c[1] for c in colours}) == 4
        await shot(page, "rules-ja.png")
        assert errors == []


@pytest.mark.slow
@requires_chromium
async def test_the_rules_page_in_english_and_the_language_menu(site: str, browser: Browser) -> None:
    """In an en-GB browser the English rules show with the lobby's rule names; the
    language menu redraws the one article in Japanese, then Hindi, and back, its marks,
    links and tables whole in each."""
    async with person(browser, "en-GB") as (page, errors):
        await open_rules(page, site)
        await expect(page.locator("h1:visible")).to_have_text("Ludo: the rules and how to play")
        rows = page.locator(LOCAL_RULES + " tr")
        await expect(rows).to_have_count(12)
        await expect(rows.filter(has_text="Three sixes end the turn")).to_have_count(1)
        await expect(page.locator("nav a[href='/rules']")).to_have_text("Rules")
        await shot(page, "rules-en.png")
        await page.select_option("#lang", "ja")
        await expect(page.locator("h1:visible")).to_have_text("ルドーのルール・遊び方")
        await expect(page.locator("html")).to_have_attribute("lang", "ja")
        await expect(page).to_have_title("ルドーのルール・遊び方")
        await expect(rows.filter(has_text="6が3回で番が終わる")).to_have_count(1)
        await page.select_option("#lang", "hi")
        await expect(page.locator("h1:visible")).to_have_text("लूडो: नियम और खेलने का तरीका")
        await expect(page.locator("html")).to_have_attribute("lang", "hi")
        await expect(page.locator("#setup .mark")).to_have_count(4)
        await expect(page.locator("#local-rules a[href='/#create']")).to_have_count(1)
        await expect(page.locator("#faq details")).to_have_count(4)
        await shot(page, "rules-hi.png")
        await page.select_option("#lang", "en")
        await expect(page.locator("h1:visible")).to_have_text("Ludo: the rules and how to play")
        await expect(page).to_have_title("Ludo: the rules and how to play")
        assert errors == []


@pytest.mark.slow
@requires_chromium
@pytest.mark.parametrize("locale", ["ja-JP", "en-GB", "hi-IN"])
async def test_the_rules_page_fits_a_phone(site: str, browser: Browser, locale: str) -> None:
    """At 375 px the page is no wider than the screen: the tables scroll in their own box."""
    async with person(browser, locale, width=375, height=667) as (page, errors):
        await open_rules(page, site)
        await expect(page.locator("html")).to_have_attribute("lang", locale[:2])
        await expect(page.locator("#rules h1")).not_to_be_empty()
        wide = await page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= 375, f"the page is {wide} px wide on a 375 px screen"
        box = page.locator("#local-rules .scroll")
        scrolls = await box.evaluate("(el) => el.scrollWidth > el.clientWidth")
        assert scrolls, "the local rules table should scroll inside its box"
        assert errors == []
