"""The site's pages other than the table, measured for accessibility in a real browser:
the lobby, the ratings (leaderboard and a player's page), the rules, the replay viewer
and the 404 page, in Japanese and English, on three phones and a desktop.

- The header is one row at most 60 CSS px tall on a phone, every link in it a 44×44 target.
- Every interactive target is at least 44×44 CSS px (WCAG 2.5.5; tests/browser.py's
  `small_targets` says exactly what is measured and what is exempt).
- axe-core finds no serious or critical violation, in each state a page has (the lobby's
  empty list, an open party, an error; an empty and a filled leaderboard; the replay at
  its first, a middle and its last step).
- A message about a field clears when the field becomes valid (the lobby's name).

Debian's Chromium driven by Playwright (tests/browser.py), against the match and ranking
services on loopback ports (the `site` fixture of this folder's conftest.py). One browser
page a language is resized with `set_viewport_size` rather than opening a browser per
size. The waiting is on the page's own state (`body[data-ready]`, rows drawn, a rendered
frame), never on a clock.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations, person, requires_chromium, shot, small_targets
from tests.services.match.site_pages import Site
from tests.services.match.test_live import Table
from tests.waiting import wait_until_sync

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

PHONES = [(360, 640), (375, 812), (412, 915)]
DESKTOP = (1280, 800)
# axe looks at the layout of one phone and of the desktop (its rules that depend on the
# layout, such as a box that scrolls, differ between them).
AXE_SIZES = [(375, 812), DESKTOP]
LOCALES = {"ja": "ja-JP", "en": "en-GB", "hi": "hi-IN"}
NOWHERE = "/party/00000000-0000-0000-0000-000000000000"
# What Chromium logs for the 404 page's own document (served with status 404, as it must
# be): the only console error these pages may log.
NOT_FOUND_LOG = "Failed to load resource: the server responded with a status of 404 (Not Found)"


def real(errors: list[str]) -> list[str]:
    """The page errors and requests elsewhere, but the 404 page's own status line."""
    return [e for e in errors if e != NOT_FOUND_LOG]


async def rated_duel(site: Site) -> tuple[str, list[str]]:
    """A ranked duel between two guests played to the end over HTTP and rated by the
    ranking service; returns the match id and the players' ids."""
    async with httpx.AsyncClient(base_url=site.url, timeout=30) as http:
        table = await Table(http).open(ranked=True)
        while (await http.get(f"/api/matches/{table.match_id}")).json()["status"] != "finished":
            await table.step()

    # The ranking service rates the match on its own: asked until it has (a bound, not a
    # time the test asserts).
    def rated_match() -> dict[str, Any] | None:
        rated: dict[str, Any] = site.http.get(f"/api/ratings/matches/{table.match_id}").json()
        return rated if rated["rated"] else None

    rated = wait_until_sync(rated_match, 30, what="the ranking service to rate the duel")
    return table.match_id, [c["player_id"] for c in rated["changes"]]


def open_party(site: Site) -> str:
    """A 3-seat party of another guest, waiting for players; returns its id."""
    host = site.http.post("/api/players", json={"name": "ホスト"}).json()
    r = site.http.post(
        "/api/parties",
        json={"seats": 3, "rules": {"preset": "standard"}, "client_seed": "h"},
        headers={"Authorization": f"Bearer {host['token']}"},
    )
    assert r.status_code == 201, r.text
    party_id: str = r.json()["id"]
    return party_id


async def visit(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


async def resize(page: Page, size: tuple[int, int]) -> None:
    """The page at `size`, once a frame has been drawn at it: the pages' ResizeObservers
    (a box that scrolls joins the Tab order) run before a frame is drawn."""
    await page.set_viewport_size({"width": size[0], "height": size[1]})
    await page.evaluate(
        "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
    )


async def axe_at_both_sizes(page: Page, where: str) -> list[str]:
    """axe's serious and critical violations at each of AXE_SIZES, each line saying where."""
    found = []
    for size in AXE_SIZES:
        await resize(page, size)
        found += [f"{where} {size[0]}×{size[1]}: {v}" for v in await axe_violations(page)]
    return found


# The header as drawn: its height, the page's width, and each visible target's box, the
# box of its words, and the colour of the divider drawn on its left (a link after a link).
_HEADER = r"""() => {
  const header = document.querySelector("header.site");
  const words = (n) => { const r = document.createRange(); r.selectNodeContents(n);
                         return r.getBoundingClientRect(); };
  const targets = [...header.querySelectorAll("a[href], button, select")]
    .filter((n) => n.checkVisibility())
    .map((n) => { const b = n.getBoundingClientRect();
                  // A menu's words are its chosen option's, drawn inside its own box.
                  const w = n.matches("select") ? b : words(n);
                  const name = n.matches("select") ? n.selectedOptions[0].text
                                                   : n.textContent.trim();
                  const drawn = getComputedStyle(n).backgroundImage.match(/rgba?\([^)]*\)/);
                  const divider = n.matches("nav a + a") && drawn ? drawn[0] : null;
                  return { name, top: b.top, bottom: b.bottom,
                           left: b.left, right: b.right, width: b.width, height: b.height,
                           wordsLeft: w.left, wordsRight: w.right, link: n.matches("nav a"),
                           divider }; });
  return { height: header.getBoundingClientRect().height,
           background: getComputedStyle(header).backgroundColor,
           width: document.documentElement.clientWidth,
           scrollWidth: document.documentElement.scrollWidth, targets };
}"""


def _luminance(css: str) -> float:
    """The relative luminance (WCAG) of a CSS `rgb(r, g, b)` colour."""
    r, g, b = (int(float(v)) / 255 for v in re.findall(r"[\d.]+", css)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_the_header_is_one_row_of_large_targets_on_a_phone(
    site: Site, browser: Browser
) -> None:
    """On 360, 375 and 412 px phones and the desktop the header is one row of 44×44
    targets at most 60 px tall, and its four links read as four words, in all three
    languages.

    The links and the language menu (and the brand from 440 px on) inside the screen, none
    over another; each word inside its own link, at least 6 px clear of the divider
    between two links, a divider seen against the bar (contrast at least 3:1), so that
    「ロビー｜アリーナ｜ランキング｜ルール」 never runs together as one word."""
    wrong: list[str] = []
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale) as (page, errors):
            for path in ("/", "/tournaments", "/leaderboard", "/rules", NOWHERE):
                await visit(page, site.url + path)
                for width, height in [*PHONES, DESKTOP]:
                    await resize(page, (width, height))
                    got: dict[str, Any] = await page.evaluate(_HEADER)
                    where = f"{path} {lang} {width}×{height}"
                    targets = got["targets"]
                    # Four links and the language menu, and the brand where it fits.
                    if len(targets) != (5 if width < 440 else 6):
                        wrong.append(f"{where}: {len(targets)} targets in the header")
                    if got["height"] > 60:
                        wrong.append(f"{where}: the header is {got['height']:.0f} px tall")
                    if got["scrollWidth"] > got["width"]:
                        wrong.append(f"{where}: the page is {got['scrollWidth']} px wide")
                    # One row: every target overlaps every other one vertically.
                    if max(t["top"] for t in targets) >= min(t["bottom"] for t in targets):
                        wrong.append(f"{where}: the header's targets are on several rows")
                    for t in targets:
                        if round(t["width"]) < 44 or round(t["height"]) < 44:
                            wrong.append(
                                f"{where}: {t['name']} is {t['width']:.0f}×{t['height']:.0f}"
                            )
                        if t["left"] < 0 or t["right"] > got["width"]:
                            wrong.append(f"{where}: {t['name']} is outside the screen")
                        if t["wordsLeft"] < t["left"] - 0.5 or t["wordsRight"] > t["right"] + 0.5:
                            wrong.append(f"{where}: {t['name']}'s words spill out of it")
                    for a, b in itertools.pairwise(targets):
                        if a["right"] > b["left"] + 0.5:
                            wrong.append(f"{where}: {a['name']} lies over {b['name']}")
                        if not (a["link"] and b["link"]):
                            continue
                        clear = min(a["right"] - a["wordsRight"], b["wordsLeft"] - b["left"])
                        if clear < 6:
                            wrong.append(
                                f"{where}: {a['name']}|{b['name']}: {clear:.1f} px from a word "
                                "to the divider"
                            )
                        if b["divider"] is None or _contrast(b["divider"], got["background"]) < 3:
                            wrong.append(
                                f"{where}: no divider seen before {b['name']} ({b['divider']})"
                            )
                    if path == "/" and width == 360:
                        await shot(page, f"header-360-{lang}.png", full_page=False)
            assert real(errors) == []
    assert wrong == [], "\n".join(wrong)


async def test_every_target_is_at_least_44_px_on_every_page(site: Site, browser: Browser) -> None:
    """Every button, link, field, choice and control of the lobby (an open party listed),
    the leaderboard, a player's page, the rules, the replay viewer and the 404 page is at
    least 44×44 CSS px, and no page is wider than the screen, on three phones and the
    desktop, in both languages."""
    match_id, players = await rated_duel(site)
    party_id = open_party(site)
    pages = {
        "lobby": "/",
        "leaderboard": "/leaderboard",
        "player": f"/players/{players[0]}",
        "rules": "/rules",
        "replay": f"/replay/{match_id}#10",
        "not-found": NOWHERE,
    }
    small: list[str] = []
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale) as (page, errors):
            for name, path in pages.items():
                await visit(page, site.url + path)
                if name == "lobby":
                    await expect(
                        page.locator(f"#parties li[data-party='{party_id}']")
                    ).to_be_visible()
                if name == "leaderboard":
                    await expect(page.locator("#board-table tbody tr")).to_have_count(2)
                for size in [*PHONES, DESKTOP]:
                    await resize(page, size)
                    where = f"{name} {lang} {size[0]}×{size[1]}"
                    small += [f"{where}: {s}" for s in await small_targets(page)]
                    # A target scrolled out of the screen sideways is no target either.
                    wide = await page.evaluate("() => document.documentElement.scrollWidth")
                    if wide > size[0]:
                        small.append(f"{where}: the page is {wide} px wide")
                    if size == (375, 812):
                        await page.evaluate("() => window.scrollTo(0, 0)")
                        await shot(page, f"{name}-375-{lang}.png")
            assert real(errors) == []
    assert small == [], "\n".join(small)


async def test_the_lobby_has_no_serious_axe_violation(site: Site, browser: Browser) -> None:
    """axe finds nothing serious or critical in the lobby, in both languages, with no
    party, with an error message shown (Create with no value leaving the nest), and with
    an open party."""
    found: list[str] = []
    async with (
        person(browser, locale=LOCALES["ja"]) as (ja, ja_errors),
        person(browser, locale=LOCALES["en"]) as (en, en_errors),
    ):
        pages = {"ja": ja, "en": en}
        for lang, page in pages.items():
            await visit(page, site.url + "/")
            await expect(page.locator("#no-parties")).to_be_visible()
            found += await axe_at_both_sizes(page, f"lobby {lang} (no party)")
            await page.click("#rules-fold summary")
            for face in await page.locator("#rules-table [data-face]:checked").all():
                await face.uncheck()
            await page.click("#create-button")
            await expect(page.locator("#message.error")).to_be_visible()
            found += await axe_at_both_sizes(page, f"lobby {lang} (an error)")
        # A party of another guest appears in both lobbies (the message stays shown).
        party_id = open_party(site)
        for lang, page in pages.items():
            await expect(page.locator(f"#parties li[data-party='{party_id}']")).to_be_visible()
            found += await axe_at_both_sizes(page, f"lobby {lang} (an open party)")
        assert ja_errors == en_errors == []
    assert found == [], "\n".join(found)


async def test_the_ratings_and_the_replay_have_no_serious_axe_violation(
    site: Site, browser: Browser
) -> None:
    """axe finds nothing serious or critical, in both languages, on the empty leaderboard,
    the leaderboard of two rated players, a player's page and the replay viewer at its
    first, a middle and its last step."""
    found: list[str] = []
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale) as (page, errors):
            await visit(page, site.url + "/leaderboard")
            await expect(page.locator("#empty")).to_be_visible()
            found += await axe_at_both_sizes(page, f"leaderboard {lang} (empty)")
            assert real(errors) == []
    match_id, players = await rated_duel(site)
    steps = len(site.http.get(f"/api/matches/{match_id}/steps").json()["steps"])
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale) as (page, errors):
            await visit(page, site.url + "/leaderboard")
            await expect(page.locator("#board-table tbody tr")).to_have_count(2)
            found += await axe_at_both_sizes(page, f"leaderboard {lang}")
            await visit(page, f"{site.url}/players/{players[0]}")
            await expect(page.locator("#history tbody tr")).to_have_count(1)
            found += await axe_at_both_sizes(page, f"player {lang}")
            await visit(page, f"{site.url}/replay/{match_id}#0")
            for step in (0, steps // 2, steps - 1):
                await page.evaluate("(n) => { location.hash = '#' + n; }", step)
                await expect(page.locator("#counter")).to_have_text(f"{step + 1} / {steps}")
                found += await axe_at_both_sizes(page, f"replay {lang} step {step}")
            assert real(errors) == []
    assert found == [], "\n".join(found)


async def test_the_rules_and_the_404_page_have_no_serious_axe_violation(
    site: Site, browser: Browser
) -> None:
    """axe finds nothing serious or critical on the rules page (its tables scroll on a
    phone: reachable from the keyboard) and the 404 page, in both languages."""
    found: list[str] = []
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale) as (page, errors):
            await visit(page, site.url + "/rules")
            found += await axe_at_both_sizes(page, f"rules {lang}")
            await visit(page, site.url + NOWHERE)
            found += await axe_at_both_sizes(page, f"404 {lang}")
            assert real(errors) == []
    assert found == [], "\n".join(found)


async def test_a_message_about_the_name_clears_once_a_name_is_typed(
    site: Site, browser: Browser
) -> None:
    """ "Enter a name" (Save with the name emptied) marks the field and goes as soon as a
    name is typed, not before (spaces are no name); a message about another field stays
    until that field is valid."""
    async with person(browser) as (page, errors):
        await visit(page, site.url + "/")
        note, name = page.locator("#name-notes .note.on"), page.locator("#name")
        save = page.locator("#name-form button[type=submit]")
        await save.click()  # a guest, under a name made up for it
        await expect(name).not_to_have_value("")
        for _ in range(2):
            await name.fill("")
            await save.click()
            await expect(note).to_have_text("Enter a name (1–32 characters)")
            await expect(name).to_have_attribute("aria-invalid", "true")
            await expect(name).to_have_attribute("aria-describedby", "name-notes")
            await name.press_sequentially("  ")
            await expect(note).to_have_text("Enter a name (1–32 characters)")
            await name.press_sequentially("mika")
            await expect(note).not_to_have_text("Enter a name (1–32 characters)")
            await expect(name).not_to_have_attribute("aria-invalid", "true")
        # No value leaves the nest: the message is about those boxes, not about the name.
        # (The local rules are folded behind their summary: opened first.)
        message = page.locator("#message")
        await page.click("#rules-fold summary")
        for face in await page.locator("#rules-table [data-face]:checked").all():
            await face.uncheck()
        await page.click("#create-button")
        await expect(message).to_contain_text("1–6")
        await name.press_sequentially("ko")
        await expect(message).to_be_visible()
        await page.locator("#rules-table [data-face='6']").check()
        await expect(message).to_be_hidden()
        assert real(errors) == []
