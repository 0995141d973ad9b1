"""web/js/lib/analysis_words.js, the wording of a match's analysis for a player, in a
real browser: `chanceSplit` (a seat's chance from the start to the end of the analysis and
what moved it, in whole points that add up, none beyond ±100) and `chanceWords` (its line,
its parts and the sentences that explain them, in English and Japanese).

A tiny page imports site.js and analysis_words.js under the services' CSP
(`pages.shell_html`, which fills its words block with the sections `common` and `analysis`
of a catalogue: English first, another language fetched as a reader's switch does),
served by Playwright's router: no service, no database. The analyses are the stored
shape (docs/analysis.md) with only what the split reads; many of them go to the page in
one call and the properties are checked here.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Page

from services.shared.pages import shell_html
from tests.browser import page_served, requires_chromium

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

URL = "http://words.test/"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>words</title></head>
<body><div id="out"></div>
<script type="application/json" id="words" data-sections="common analysis"></script>
<script type="module">
import { lang, setLanguage } from "/static/js/lib/site.js";
import { chanceSplit, chanceWords } from "/static/js/lib/analysis_words.js";
window.splitAll = (cases) => cases.map(([a, seat]) => chanceSplit(a, seat));
window.wordsOf = async (a, seat, you, language) => {
  if (lang !== language) await setLanguage(language);
  return chanceWords(chanceSplit(a, seat), you);
};
document.body.dataset.ready = "true";
</script></body></html>
"""


@pytest.fixture
async def words_page() -> AsyncIterator[tuple[Page, list[str]]]:
    """The page under its CSP, and the console errors it logs."""
    async with page_served(URL, *shell_html(PAGE)) as opened:
        yield opened


def analysis(
    start: float, end: float, luck: float, own_error: float, choices: int = 10, seat: int = 0
) -> dict[str, Any]:
    """A 2-seat analysis of what the split reads: seat `seat`'s chance at the first and the
    last point (the other seat's the rest), its luck and the cost of its own choices."""
    seats = [
        {"seat": s, "luck": 0.0, "choices": 0, "own_error": 0.0, "error": 0.0} for s in range(2)
    ]
    seats[seat].update(luck=luck, choices=choices, own_error=own_error, error=own_error)
    first = [1 - start, 1 - start]
    last = [1 - end, 1 - end]
    first[seat], last[seat] = start, end
    return {"players": 2, "seats": seats, "points": [[0, first], [400, last]]}


async def split(page: Page, a: dict[str, Any], seat: int = 0) -> dict[str, Any]:
    [out] = await page.evaluate("cases => splitAll(cases)", [[a, seat]])
    result: dict[str, Any] = out
    return result


async def test_a_plain_match_is_said_as_it_is(words_page: tuple[Page, list[str]]) -> None:
    """25% → 100%: +75 points, of which the dice +40, the choices −12 and the rest +47; no
    figure reduced, nothing to explain."""
    page, errors = words_page
    got = await split(page, analysis(0.25, 1.0, 0.40, 0.12))
    assert (got["start"], got["end"], got["change"]) == (25, 100, 75)
    assert (got["dice"], got["choices"], got["rest"]) == (40, -12, 47)
    assert (got["cancelled"], got["diceAgainst"], got["won"]) == (0, False, True)
    assert errors == []


async def test_sums_beyond_a_hundred_points_are_netted_and_say_so(
    words_page: tuple[Page, list[str]],
) -> None:
    """The winner of a 2-player match whose choices summed to −117 points (an end card
    seen in play): its dice +45, choices −117 and rest +122 are reduced by the same 31 points in
    each direction (each side in proportion), the least that brings every part within
    ±100, and still add up to +50; the words say what was left out."""
    page, errors = words_page
    a = analysis(0.5, 1.0, 0.451, 1.17)
    got = await split(page, a)
    assert got["change"] == 50
    assert (got["dice"], got["choices"], got["rest"]) == (37, -86, 99)
    assert got["cancelled"] == 31
    en = await page.evaluate("([a]) => wordsOf(a, 0, true, 'en')", [a])
    assert en["line"] == "Your chance to finish first: 50%\u00a0→\u00a0100% (+50 points)"
    assert [(p["label"], p["figure"]) for p in en["parts"]] == [
        ("Dice", "+37"),
        ("Your choices", "\u221286"),
        ("Other players' turns and the rest", "+99"),
    ]
    assert en["cancelled"] == (
        "Besides these, your chance rose and fell again by 31 points each way during the"
        " match, which cancel out."
    )
    ja = await page.evaluate("([a]) => wordsOf(a, 0, true, 'ja')", [a])
    assert ja["line"] == "あなたが1位になる確率: 50%\u00a0→\u00a0100%（+50ポイント）"
    assert [(p["label"], p["figure"]) for p in ja["parts"]] == [
        ("サイコロ", "+37"),
        ("あなたの選んだ手", "\u221286"),
        ("ほかのプレイヤーの番など", "+99"),
    ]
    assert "31ポイントずつ" in ja["cancelled"]
    assert errors == []


async def test_dice_against_the_result_are_explained(words_page: tuple[Page, list[str]]) -> None:
    """A player who did not finish first with lucky dice, and one who did with unlucky
    dice, are told so in words (of "you" and of another player); a player who made no
    choice is told that, not "±0"."""
    page, errors = words_page
    lucky_loser = analysis(0.25, 0.0, 0.12, 0.05)
    unlucky_winner = analysis(0.25, 1.0, -0.2, 0.0, choices=0)
    got = await split(page, lucky_loser)
    assert (got["change"], got["dice"], got["diceAgainst"], got["won"]) == (-25, 12, True, False)
    said = await page.evaluate("([a]) => wordsOf(a, 0, true, 'en')", [lucky_loser])
    assert said["why"] == "The dice were on your side, but you did not finish first."
    said = await page.evaluate("([a]) => wordsOf(a, 0, false, 'en')", [lucky_loser])
    assert said["why"] == "The dice were on their side, but they did not finish first."
    assert said["line"] == "Chance to finish first: 25%\u00a0→\u00a00% (\u221225 points)"
    said = await page.evaluate("([a]) => wordsOf(a, 0, true, 'ja')", [unlucky_winner])
    assert said["why"] == "サイコロには恵まれませんでしたが、1位になりました。"
    assert said["parts"][1]["figure"] == "選ぶ場面なし"
    said = await page.evaluate("([a]) => wordsOf(a, 0, true, 'en')", [unlucky_winner])
    assert said["why"] == "You finished first although the dice were against you."
    assert said["parts"][1] == {
        "key": "choices",
        "label": "Your choices",
        "points": 0,
        "figure": "no choice to make",
    }
    plain = await page.evaluate("([a]) => wordsOf(a, 0, true, 'en')", [analysis(0.5, 1, 0.3, 0)])
    assert plain["why"] == "" and plain["cancelled"] == ""
    assert errors == []


def random_cases(n: int) -> list[tuple[float, float, float, float, int]]:
    """`n` (start, end, luck, cost of choices, choices) of every kind, from a fixed seed:
    sums over a whole match reach beyond ±1, as they can."""
    rng = random.Random(39)
    edges = [(0.25, 1.0, 3.0, 0.0, 5), (0.25, 0.0, 0.0, 3.0, 5), (1.0, 1.0, 0.0, 0.0, 0)]
    return edges + [
        (
            rng.random(),
            rng.choice([0.0, 0.5, 1.0]),
            rng.uniform(-3.0, 3.0) * rng.random(),
            rng.uniform(0.0, 3.0) * rng.random(),
            rng.choice([0, 1, 10, 60]),
        )
        for _ in range(n)
    ]


async def test_the_parts_always_add_up_and_stay_within_a_hundred(
    words_page: tuple[Page, list[str]],
) -> None:
    """For any start, result, luck and cost of choices: the shown parts add up to the
    shown change (end − start, each rounded), none is beyond ±100, the choices never
    above 0; before any netting each part is within a point of its figure, and the
    netting, when there is one, is the least that keeps every part within ±100."""
    page, _ = words_page
    cases = random_cases(5000)
    analyses = [analysis(s, e, luck, err, n) for s, e, luck, err, n in cases]
    got = await page.evaluate("cases => splitAll(cases)", [[a, 0] for a in analyses])
    netted = 0
    for (start, _end, luck, err, n), out in zip(cases, got, strict=True):
        parts = [out["dice"], out["choices"], out["rest"]]
        gross = out["gross"]
        assert out["start"] == math.floor(start * 100 + 0.5)
        assert out["change"] == out["end"] - out["start"] == sum(parts) == sum(gross)
        assert all(abs(p) <= 100 for p in parts) and out["choices"] <= 0
        raw = [luck * 100, -err * 100 if n else 0.0]
        raw.append(out["change"] - sum(raw))
        assert all(abs(g - r) < 1 for g, r in zip(gross, raw, strict=True))
        if max(abs(g) for g in gross) <= 100:
            assert parts == gross and out["cancelled"] == 0
            continue
        netted += 1
        # each part kept its side; one point less netted would leave one beyond 100
        assert all(p * g >= 0 and abs(p) <= abs(g) for p, g in zip(parts, gross, strict=True))
        up = sum(g for g in gross if g > 0)
        down = -sum(g for g in gross if g < 0)
        assert up - sum(p for p in parts if p > 0) == out["cancelled"]
        assert down + sum(p for p in parts if p < 0) == out["cancelled"]
        less = out["cancelled"] - 1
        largest = max(
            abs(g) * ((up if g > 0 else down) - less) / (up if g > 0 else down) for g in gross if g
        )
        assert largest > 100
    assert netted > 100  # the cases reach the netting often
