"""The operator dashboard in a real browser: Debian's Chromium driven by Playwright.

The ranking app runs under uvicorn on a loopback port (the live tests' `Instance`), on a
database with a few rated matches. No Playwright-managed browser download: the system's
Chromium headless shell (benchmarks/chromium.py; CI installs it, see .ci/run).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, Route, expect
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.app import create_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from services.shared.words import catalogue
from tests.browser import (
    console_errors,
    launched,
    new_page,
    person,
    requires_chromium,
    shot,
    small_targets,
)
from tests.services.match.test_live import Instance
from tests.services.ranking.finished_matches import CPU, write_match
from tests.words import leaves

TOKEN = "op-secret"

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]


@pytest.fixture
async def rated(engine: AsyncEngine, pg_store: EventStore) -> None:
    """ann beats ben and a CPU; ann and cat draw; cat beats ben: three rated players."""
    await write_match(engine, pg_store, ["ann", "ben", CPU], [1, 2, 3])
    await write_match(engine, pg_store, ["ann", "cat"], [1, 1])
    await write_match(engine, pg_store, ["cat", "ben"], [1, 2])
    await RankingConsumer(engine, pg_store).catch_up()


@pytest.fixture
def service(rated: None, database_url: str, tmp_path: Path) -> Iterator[Instance]:
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token=TOKEN, db_pool_size=4
    )
    with Instance(settings, create_app(settings, consume=False)) as instance:
        yield instance


@pytest.fixture
async def opened(service: Instance) -> AsyncIterator[tuple[Page, list[str]]]:
    """The dashboard in Chromium, and the errors it logs from its first load on."""
    async with new_page() as page:
        errors = console_errors(page)
        await page.goto(f"{service.http}/dashboard")
        yield page, errors


@pytest.fixture
def page(opened: tuple[Page, list[str]]) -> Page:
    return opened[0]


@pytest.fixture
def errors(opened: tuple[Page, list[str]]) -> list[str]:
    return opened[1]


async def settled(page: Page) -> None:
    """Until no view of the dashboard has a request on its way (`data-pending`)."""
    await page.wait_for_function(
        "() => [...document.querySelectorAll('[data-pending]')]"
        ".every((v) => v.dataset.pending === '0')"
    )


async def sign_in(page: Page, token: str) -> None:
    await page.fill("#token", token)
    await page.click("#login button[type=submit]")


async def test_dashboard_shows_the_ranking_with_the_operator_token(
    page: Page, errors: list[str]
) -> None:
    """Signing in shows every panel; the page runs under its strict CSP without an error."""
    await expect(page.locator("#token")).to_be_visible()
    await expect(page.locator("#dashboard")).to_be_hidden()
    assert await small_targets(page) == []  # the sign-in form
    await sign_in(page, TOKEN)
    await expect(page.locator("#login")).to_be_hidden()
    await expect(page.locator("#logout")).to_be_visible()

    rows = page.locator("#leaderboard tbody tr")
    await expect(rows).to_have_count(3)
    players = await page.locator("#leaderboard tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.player)"
    )
    assert sorted(players) == ["ann", "ben", "cat"]
    assert players[-1] == "ben"  # lost both matches

    # Each panel is drawn from its own request, in whatever order the answers come.
    for panel in ("#distribution", "#per-day"):
        await expect(page.locator(f"{panel} rect.bar").first).to_be_attached()
    await expect(page.locator("#swings tbody tr")).to_have_count(6)  # 3 matches x 2 rated players
    await expect(page.locator("#lag")).to_contain_text("Events behind")
    # The first load ends with the top player's history; only then is ben clicked, so the
    # click cannot race it (the page drops overtaken answers anyway: the test below).
    await settled(page)
    top = await rows.first.get_attribute("data-player")
    await expect(page.locator("#history-title")).to_contain_text(f"{top} ")

    await page.locator('#leaderboard tbody tr[data-player="ben"]').click()
    await expect(page.locator("#history-title")).to_contain_text("ben")
    await expect(page.locator('#leaderboard tbody tr[data-player="ben"]')).to_have_class("selected")
    line = page.locator("#history path.line")
    await expect(line).to_have_count(1)
    assert (await line.get_attribute("d") or "").count("L") == 2  # start + 2 matches
    await expect(page.locator("#message")).to_be_hidden()
    # From the keyboard: a row takes the focus, Enter opens that player's history.
    await page.locator('#leaderboard tbody tr[data-player="ann"]').focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#history-title")).to_contain_text("ann")
    await settled(page)
    # Every leaderboard column in view on a desktop; nothing wider than a phone's screen.
    assert await page.evaluate(
        "(() => { const b = document.querySelector('#leaderboard').parentElement;"
        " return b.scrollWidth <= b.clientWidth; })()"
    )
    await page.set_viewport_size({"width": 375, "height": 800})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    small = await small_targets(page)
    assert small == [], "\n".join(small)  # every control finger-sized, on a phone too
    await page.set_viewport_size({"width": 1280, "height": 1000})
    assert await small_targets(page) == []

    # The token is kept for the tab: a reload goes straight to the data.
    await page.reload()
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
    await expect(page.locator("#history path.line")).to_have_count(1)
    await expect(page.locator("#login")).to_be_hidden()
    if os.environ.get("LUDO_DASHBOARD_SCREENSHOT"):
        await page.screenshot(path=os.environ["LUDO_DASHBOARD_SCREENSHOT"], full_page=True)
    assert errors == []  # no refused inline script or style, no uncaught exception


async def test_a_wrong_token_gets_a_clear_message(page: Page) -> None:
    """A wrong operator token is told in words, the dashboard stays hidden, nothing is kept."""
    await sign_in(page, "not-the-token")
    message = page.locator("#message")
    await expect(message).to_be_visible()
    await expect(message).to_contain_text("Wrong or missing operator token")
    await expect(page.locator("#dashboard")).to_be_hidden()
    await expect(page.locator("#token")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('ludo.operatorToken')") is None

    await sign_in(page, TOKEN)  # and the right one then works
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
    await expect(message).to_be_hidden()


async def test_a_slow_earlier_history_does_not_replace_the_player_clicked_last(
    page: Page, errors: list[str]
) -> None:
    """Click A (its answer held back), then B: B's history is shown, and stays shown
    after A's answer arrives."""
    await sign_in(page, TOKEN)
    rows = page.locator("#leaderboard tbody tr")
    await expect(rows).to_have_count(3)
    top = await rows.first.get_attribute("data-player")
    await expect(page.locator("#history-title")).to_contain_text(f"{top} ")
    a, b = [p for p in ("ann", "ben", "cat") if p != top]

    held, release = asyncio.Event(), asyncio.Event()

    async def hold(route: Route) -> None:
        held.set()
        await release.wait()
        await route.continue_()

    await page.route(f"**/api/ranking/players/{a}?*", hold)
    await page.locator(f'#leaderboard tbody tr[data-player="{a}"]').click()
    await held.wait()  # A's request is out, its answer held
    await page.locator(f'#leaderboard tbody tr[data-player="{b}"]').click()
    title = page.locator("#history-title")
    await expect(title).to_contain_text(f"{b} ")
    async with page.expect_response(lambda r: f"/players/{a}?" in r.url):
        release.set()
    # Until the page has dealt with A's answer: it drew A (the bug) or, with no request
    # left on its way, dropped it.
    await page.wait_for_function(
        "(a) => document.querySelector('#history-title').textContent.includes(a + ' ')"
        " || document.querySelector('#history').dataset.pending === '0'",
        arg=a,
    )
    assert f"{b} " in (await title.text_content() or "")
    await expect(page.locator(f'#leaderboard tbody tr[data-player="{b}"]')).to_have_class(
        "selected"
    )
    assert errors == []


async def test_a_slow_answer_for_the_previous_model_does_not_replace_the_new_one(
    page: Page, errors: list[str]
) -> None:
    """Switch to elo while the openskill leaderboard of a refresh is held back: the elo
    board stays, and every view settles on elo."""
    await sign_in(page, TOKEN)
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
    await settled(page)
    held, release = asyncio.Event(), asyncio.Event()

    async def hold(route: Route) -> None:
        held.set()
        await release.wait()
        await route.continue_()

    await page.route("**/api/ranking/leaderboard?model=openskill*", hold)
    await page.click("#refresh")
    await held.wait()
    await page.select_option("#model", "elo")
    await expect(page.locator("#history-title")).to_contain_text("(elo)")
    # Everything of the elo load is in; only the openskill board is still on its way.
    await page.wait_for_function(
        "() => [...document.querySelectorAll('[data-pending]')].every((v) =>"
        " v.dataset.pending === (v.id === 'leaderboard' ? '1' : '0'))"
    )
    elo = await page.locator("#leaderboard tbody").inner_text()
    async with page.expect_response(lambda r: "model=openskill" in r.url):
        release.set()
    # Until the page has dealt with it: redrew the board (the bug) or dropped it.
    await page.wait_for_function(
        "(elo) => document.querySelector('#leaderboard tbody').innerText !== elo"
        " || document.querySelector('#leaderboard').dataset.pending === '0'",
        arg=elo,
    )
    assert await page.locator("#leaderboard tbody").inner_text() == elo
    await expect(page.locator("#history-title")).to_contain_text("(elo)")
    assert errors == []


# Every text node of the page as shown and each aria-label, but what comes as data from
# the services rather than from the page's words: the instances' names and services, the
# model's options.
PAGE_TEXT = """() => {
  const skip = "script, style, select, #live-instances tbody";
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest(skip)) texts.push(node.textContent);
  }
  for (const node of document.querySelectorAll("[aria-label]")) {
    texts.push(node.getAttribute("aria-label"));
  }
  return [document.title, ...texts].join("\\n");
}"""


async def sideways(page: Page) -> int:
    """How far the page sticks out of the window sideways (≤ 0: not at all)."""
    overflow: int = await page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
    return overflow


def english_only_words() -> set[str]:
    """The words (3 letters or more) of the English texts that the Japanese ones never use."""
    table = {lang: catalogue(lang)["dashboard"] for lang in ("ja", "en")}

    def found(language: dict[str, Any]) -> set[str]:
        text = " ".join(leaves(language).values())
        return set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}", " ", text)))

    return found(table["en"]) - found(table["ja"])


async def test_the_dashboard_in_japanese_and_the_switch_to_english(service: Instance) -> None:
    """A ja-JP phone gets it all in Japanese; the language menu redraws it in English, kept
    on reload (the `ludo_lang` cookie)."""
    async with (
        launched() as browser,
        person(browser, locale="ja-JP", width=375, height=812) as (page, errors),
    ):
        await page.goto(f"{service.http}/dashboard")
        html, switch = page.locator("html"), page.locator("#lang")
        await expect(html).to_have_attribute("lang", "ja")
        await expect(switch).to_have_value("ja")
        # Each language named in itself, marked so (a screen reader says it right).
        await expect(switch.locator("option[value=en]")).to_have_attribute("lang", "en")
        await expect(page.locator("label[for=token]")).to_have_text("運営トークン")
        assert await small_targets(page) == []  # the sign-in form and the menu
        assert await sideways(page) <= 0
        await shot(page, "dashboard-ja-sign-in-phone.png")
        await sign_in(page, TOKEN)
        await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
        await settled(page)
        assert await page.title() == "ルドーのランキング：運営ダッシュボード"
        await expect(page.locator("h1")).to_have_text("ルドーのランキング · 運営ダッシュボード")
        await expect(page.locator("main h2")).to_contain_text(
            ["いまの状況", "通報", "ランキング", "レートの分布", "レートの推移", "1日ごとの"]
        )
        # No match service here: the tile says "?" under its Japanese name.
        await expect(page.locator(".tile .k").first).to_have_text("いま対局中")
        await expect(page.locator("#live-state")).to_contain_text("UTC に更新")
        await expect(page.locator("#leaderboard thead th")).to_have_text(
            ["順位", "プレイヤー", "サイトのレート", "運営用レート", "対局数", "最後の対局"]
        )
        await expect(page.locator("#reports tbody")).to_have_text("通報はありません。")
        await expect(page.locator("#luck-gaps tbody")).to_have_text(
            "直近7日に分析された対局はありません。"
        )
        await expect(page.locator("#lag dt").first).to_have_text("遅れているイベント")
        # The server's own detail ("LUDO_MATCH_URL is not set") is kept as it comes.
        shown = (await page.evaluate(PAGE_TEXT)).replace("LUDO_MATCH_URL is not set", "")
        left = set(re.findall(r"[A-Za-z]{3,}", shown)) & english_only_words()
        assert left == set(), sorted(left)
        for width, height, name in ((375, 812, "phone"), (1280, 900, "desktop")):
            await page.set_viewport_size({"width": width, "height": height})
            overflow = await sideways(page)
            assert overflow <= 0, (name, overflow)
            small = await small_targets(page)
            assert small == [], "\n".join(small)
            await shot(page, f"dashboard-ja-{name}.png")
        await page.set_viewport_size({"width": 375, "height": 812})

        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        # From the keyboard: the menu focused, "E" picks English by its first letter.
        await switch.focus()
        await page.keyboard.press("E")
        await expect(html).to_have_attribute("lang", "en")
        await expect(switch).to_have_value("en")
        await expect(page.locator("h1")).to_have_text("Ludo ranking · operator dashboard")
        await expect(page.locator(".tile .k").first).to_have_text("Matches now")
        await expect(page.locator("#leaderboard thead th")).to_have_text(
            ["#", "Player", "Site rating", "Operator rating", "Matches", "Last match"]
        )
        await expect(page.locator("#reports tbody")).to_have_text("No reports.")
        await expect(page.locator("#history-title")).to_contain_text("Operator rating history: ")
        assert await page.title() == "Ludo ranking: operator dashboard"
        # The header (title, menu, controls) still fits the phone in English.
        assert await sideways(page) <= 0 and await small_targets(page) == []
        # The live view's next refresh (every 5 s) is worded in English too.
        before = await page.locator("#live-state").text_content()
        assert before and before.startswith("Updated ")
        await page.wait_for_function(
            "(before) => { const s = document.querySelector('#live-state').textContent;"
            " return s !== before && s.startsWith('Updated '); }",
            arg=before,
            timeout=15_000,
        )
        kana_or_kanji = r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]"
        shown = await page.evaluate(PAGE_TEXT)
        assert re.findall(kana_or_kanji, shown.replace("日本語", "")) == [], shown
        # Drawn again from what the page held: nothing asked but the English words and the
        # live view's refresh.
        kept = r"/api/ranking/(live|lag)$|/static/i18n/en/dashboard\.json$"
        assert [u for u in asked if not re.search(kept, u)] == [], asked
        cookies = {c["name"]: c["value"] for c in await page.context.cookies()}
        assert cookies.get("ludo_lang") == "en"

        await page.reload()
        await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
        await expect(html).to_have_attribute("lang", "en")
        await expect(page.locator("h1")).to_have_text("Ludo ranking · operator dashboard")
        await expect(page.locator("#live-state")).to_contain_text("Updated ")
        await expect(switch).to_have_value("en")
        assert errors == []


async def test_the_dashboard_in_hindi_and_the_menu_to_japanese_in_place(
    service: Instance,
) -> None:
    """A hi-IN phone gets it in Hindi (no key without a word, nothing wider than 375 px,
    44 px targets); the menu switches it to Japanese in place: every view drawn again, no
    reload."""
    hi, ja = catalogue("hi")["dashboard"], catalogue("ja")["dashboard"]
    async with (
        launched() as browser,
        person(browser, locale="hi-IN", width=375, height=812) as (page, errors),
    ):
        await page.goto(f"{service.http}/dashboard")
        html, switch = page.locator("html"), page.locator("#lang")
        await expect(html).to_have_attribute("lang", "hi")
        await expect(switch).to_have_value("hi")
        await expect(page.locator("label[for=token]")).to_have_text(hi["token"])
        assert await small_targets(page) == [] and await sideways(page) <= 0
        await sign_in(page, TOKEN)
        await expect(page.locator("#leaderboard tbody tr")).to_have_count(3)
        await settled(page)
        assert await page.title() == hi["page_title"]
        await expect(page.locator("h1")).to_have_text(hi["heading"])
        await expect(page.locator("#leaderboard thead th").nth(2)).to_have_text(
            hi["board"]["player_rating"]
        )
        await expect(page.locator(".tile .k").first).to_have_text(hi["live"]["matches_now"])
        await expect(page.locator("#reports tbody")).to_have_text(hi["reports"]["none"])
        assert await small_targets(page) == [] and await sideways(page) <= 0
        await shot(page, "dashboard-hi-phone.png")

        await page.evaluate("window.notReloaded = true")
        await page.select_option("#lang", "ja")
        await expect(html).to_have_attribute("lang", "ja")
        await expect(page.locator("h1")).to_have_text(ja["heading"])
        await expect(page.locator(".tile .k").first).to_have_text(ja["live"]["matches_now"])
        await expect(page.locator("#reports tbody")).to_have_text(ja["reports"]["none"])
        await expect(page.locator("#history-title")).to_contain_text(
            ja["history"]["title"].split("{")[0]
        )
        assert await page.title() == ja["page_title"]
        assert await page.evaluate("window.notReloaded") is True
        assert await small_targets(page) == [] and await sideways(page) <= 0
        assert errors == []


async def test_the_leaderboard_shows_the_sites_rating_beside_the_operators_labelled(
    service: Instance, page: Page, errors: list[str]
) -> None:
    """Each row shows the rating players see on the site, the very figure of the public
    leaderboard, beside the operator rating (the list's order), each column named for its
    measure, with a note saying how each is computed, in every model."""
    await sign_in(page, TOKEN)
    await expect(page.locator("#leaderboard thead th").nth(2)).to_have_text("Site rating")
    await expect(page.locator("#leaderboard thead th").nth(3)).to_have_text("Operator rating")
    await expect(page.locator("#board-note")).to_contain_text("1500 + 30 × (μ − 3σ)")
    async with httpx.AsyncClient(base_url=service.http, timeout=30) as http:
        for model in ("openskill", "elo", "glicko2"):
            await page.select_option("#model", model)
            await expect(page.locator("#history-title")).to_contain_text(f"({model})")
            await settled(page)
            public = (await http.get(f"/api/ratings/leaderboard?model={model}")).json()
            site = {e["player_id"]: str(e["rating"]) for e in public["entries"]}
            shown = await page.locator("#leaderboard tbody tr").evaluate_all(
                "rows => rows.map((r) => [r.dataset.player, r.cells[2].textContent,"
                " r.cells[3].textContent])"
            )
            assert {player: figure for player, figure, _ in shown} == site, model
            if model == "openskill":  # the two measures differ: the ordinal is not shown as it
                assert any(float(ordinal) != float(figure) for _, figure, ordinal in shown)
    assert errors == []
