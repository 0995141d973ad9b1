"""web/js/lib/board.js in a real browser (Debian's Chromium driven by Playwright).

A tiny page imports board.js and links board.css as the services' pages do, under the
same nonce-based CSP (`pages.shell_html`), served by Playwright's router: no service, no
database. The board models are the server's (`domain.board`), in
the shape of getReplaySteps' `board` (docs/api.md).

With LUDO_BOARD_SCREENSHOTS=DIR the shapes are photographed into DIR
(docs/screenshots/board-*.png were taken so).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Page, expect

from domain.board import PIECES, SYMBOLS, board_for
from domain.rules import Ruleset
from services.shared.pages import shell_html
from tests.browser import page_served, requires_chromium

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

URL = "http://board.test/"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>board</title>
<link rel="stylesheet" href="/static/css/board.css"></head>
<body><div id="wrap"><svg id="board"></svg></div>
<script type="module">
import { LudoBoard } from "/static/js/lib/board.js";
// The page's own layout, set from script: the CSP takes no inline style.
const font = "14px system-ui, sans-serif";
Object.assign(document.body.style, { margin: "0", padding: "8px", font });
Object.assign(document.querySelector("#wrap").style, { maxWidth: "760px", margin: "0 auto" });
window.LudoBoard = LudoBoard;
document.body.dataset.ready = "true";
</script></body></html>
"""
SHAPES = [("cross", 2), ("cross", 3), ("cross", 4), ("by_players", 2), ("by_players", 3),
          ("by_players", 4)]  # fmt: skip


def board_model(kind: str, players: int) -> dict[str, Any]:
    """The getReplaySteps `board` of a ruleset's board at a player count."""
    b = board_for(Ruleset(board=kind), players)  # type: ignore[arg-type]
    return {
        "kind": kind, "players": players, "arms": b.length // 13, "length": b.length,
        "colours": list(b.colours), "colour_index": list(b.colour_index),
        "starts": list(b.starts), "safe": sorted(b.safe), "last_track": b.last_track,
        "home": b.home, "goal": b.goal, "pieces": PIECES,
    }  # fmt: skip


@pytest.fixture
async def board_page() -> AsyncIterator[tuple[Page, list[str]]]:
    """The board page under its CSP, and the console errors it logs."""
    async with page_served(URL, *shell_html(PAGE)) as opened:
        yield opened


async def create(page: Page, model: dict[str, Any], **options: Any) -> None:
    await page.evaluate(
        "([m, o]) => { window.picked = []; if (window.b) window.b.destroy();"
        " window.b = LudoBoard.create(document.querySelector('#board'), m, o); }",
        [model, options],
    )


async def set_pieces(page: Page, pieces: list[list[int]]) -> None:
    await page.evaluate("p => window.b.setPieces(p)", pieces)


def sample_position(model: dict[str, Any]) -> list[list[int]]:
    """Every kind of place: nest, start, a stack of two, a shared safe square, the home
    column and the goal."""
    rows = []
    for seat in range(model["players"]):
        rows.append([-1, 0, 1, model["goal"]] if seat else [8, 5, 5, model["home"] + 2])
    # seat 1 shares seat 0's star square (8 ahead of seat 0's start) with seat 0
    star = (model["starts"][0] + 8) % model["length"]
    rows[1][2] = (star - model["starts"][1]) % model["length"]
    rows[-1][0] = model["goal"]
    return rows


READ_BOARD = """() => {
  const all = (sel, f) => Array.from(document.querySelectorAll(sel), f);
  const cell = (e) => ({ row: +e.dataset.row, col: +e.dataset.col });
  return {
    track: all('#board rect[data-track]', (e) => ({ i: +e.dataset.track, ...cell(e),
                                                   cls: e.getAttribute('class') })),
    home: all('#board rect[data-home]', (e) => ({ key: e.dataset.home, ...cell(e),
                                                 cls: e.getAttribute('class') })),
    cells: all('#board rect.cell', cell),
    stars: all('#board .star', (e) => +e.dataset.track),
    nests: all('#board [data-nest]', (e) => ({ seat: +e.dataset.nest,
                                              cls: e.getAttribute('class') })),
    bridges: all('#board .bridge', (e) => [+e.dataset.from, +e.dataset.to]),
    tokens: all('#board g.piece', (e) => ({ seat: +e.dataset.seat, cls: e.getAttribute('class'),
      symbol: e.dataset.symbol, shapes: e.querySelectorAll('.sym').length,
      transform: e.getAttribute('transform') })),
  };
}"""


@pytest.mark.parametrize(("kind", "players"), SHAPES)
async def test_every_shape_draws_a_real_ludo_board(
    board_page: tuple[Page, list[str]], kind: str, players: int
) -> None:
    """Track, home columns, starts, stars, nests and bridges of each shape, cell by cell."""
    page, errors = board_page
    model = board_model(kind, players)
    length, starts, colours = model["length"], model["starts"], model["colours"]
    await create(page, model, bottom=0)
    await set_pieces(page, sample_position(model))
    drawn = await page.evaluate(READ_BOARD)

    # Each of the `length` track squares drawn once; no two cells on one grid square, none
    # in the goal's 3×3.
    assert sorted(t["i"] for t in drawn["track"]) == list(range(length))
    places = [(c["row"], c["col"]) for c in drawn["cells"]]
    assert len(places) == len(set(places))
    assert not [p for p in places if 6 <= p[0] <= 8 and 6 <= p[1] <= 8]
    at = {t["i"]: (t["row"], t["col"]) for t in drawn["track"]}
    # 5 home cells per player; a cross board draws the unused arms' columns too, unowned.
    assert sorted(h["key"] for h in drawn["home"]) == sorted(
        f"{s}:{k}" for s in range(players) for k in range(5)
    )
    for h in drawn["home"]:
        assert f"c-{colours[int(h['key'].split(':')[0])]}" in h["cls"].split()
    # Start squares at `starts` in the owner's colour; every safe square marked, the
    # stars on those that are not a player's start.
    start_cells = {t["i"]: t["cls"].split() for t in drawn["track"] if "start" in t["cls"]}
    assert sorted(start_cells) == sorted(starts)
    for seat, s in enumerate(starts):
        assert f"c-{colours[seat]}" in start_cells[s]
    assert sorted(t["i"] for t in drawn["track"] if "safe" in t["cls"].split()) == model["safe"]
    assert sorted(drawn["stars"]) == sorted(set(model["safe"]) - set(starts))
    assert sorted(n["seat"] for n in drawn["nests"]) == list(range(players))

    # p = 0 is the seat's start; last_track sits next to the first home square.
    for seat in range(players):
        start = await page.evaluate("s => window.b.cellOf(s, 0)", seat)
        assert start["kind"] == "track" and start["index"] == starts[seat]
        assert (start["row"], start["col"]) == at[starts[seat]]
        last, home = await page.evaluate(
            "([s, a, b]) => [window.b.cellOf(s, a), window.b.cellOf(s, b)]",
            [seat, model["last_track"], model["home"]],
        )
        assert last["kind"] == "track" and home["kind"] == "home" and home["index"] == 0
        assert abs(last["row"] - home["row"]) + abs(last["col"] - home["col"]) == 1
        homes = [h for h in drawn["home"] if h["key"].startswith(f"{seat}:")]
        column = sorted((int(h["key"].split(":")[1]), h["row"], h["col"]) for h in homes)
        for (_, r1, c1), (_, r2, c2) in itertools.pairwise(column):
            assert abs(r1 - r2) + abs(c1 - c2) == 1

    # Consecutive squares touch (a side, or a corner where the path turns round the
    # goal), except across the drawn bridges of a by_players board with missing arms.
    expected_bridges = {2: 2, 3: 1}.get(players, 0) if kind == "by_players" else 0
    assert len(drawn["bridges"]) == expected_bridges
    bridges = {tuple(b) for b in drawn["bridges"]}
    for i in range(length):
        j = (i + 1) % length
        (r1, c1), (r2, c2) = at[i], at[j]
        distance = max(abs(r1 - r2), abs(c1 - c2))
        if (i, j) in bridges:
            assert distance > 1
        else:
            assert distance == 1, (i, j, at[i], at[j])

    # Every token carries its owner's symbol, upright (tokens are only translated).
    assert len(drawn["tokens"]) == PIECES * players
    for t in drawn["tokens"]:
        colour = colours[t["seat"]]
        assert f"c-{colour}" in t["cls"].split()
        assert t["symbol"] == SYMBOLS[colour] and t["shapes"] == 1
        assert t["transform"].startswith("translate(") and "rotate" not in t["transform"]
    assert {t["symbol"] for t in drawn["tokens"]} == {SYMBOLS[c] for c in colours}

    shots = os.environ.get("LUDO_BOARD_SCREENSHOTS")
    if shots:
        await page.screenshot(path=f"{shots}/board-{kind}-{players}.png", full_page=True)
        if (kind, players) == ("cross", 4):
            await page.set_viewport_size({"width": 375, "height": 700})
            await page.screenshot(path=f"{shots}/board-cross-4-375.png", full_page=True)
    await page.set_viewport_size({"width": 320, "height": 600})
    assert await page.evaluate("document.documentElement.scrollWidth") <= 320
    assert errors == []


async def test_bottom_turns_the_board_so_that_colour_sits_at_the_bottom(
    board_page: tuple[Page, list[str]],
) -> None:
    """`bottom` puts a colour's arm at the bottom (its start at row 13, column 6)."""
    page, errors = board_page
    for kind, players, bottom, seat in [("cross", 4, 0, 0), ("cross", 4, 2, 2),
                                        ("cross", 3, 1, 1), ("by_players", 3, 2, 2),
                                        ("by_players", 4, 3, 3)]:  # fmt: skip
        await create(page, board_model(kind, players), bottom=bottom)
        start = await page.evaluate("s => window.b.cellOf(s, 0)", seat)
        assert (start["row"], start["col"]) == (13, 6), (kind, players, bottom)
    # The long 2-player board stays horizontal: the bottom colour's arm on the right.
    model = board_model("by_players", 2)
    for bottom in (0, 1):
        await create(page, model, bottom=bottom)
        start = await page.evaluate("s => window.b.cellOf(s, 0)", bottom)
        assert (start["row"], start["col"]) == (8, 13)
        other = await page.evaluate("s => window.b.cellOf(s, 0)", 1 - bottom)
        assert (other["row"], other["col"]) == (6, 1)
    assert errors == []


async def picked(page: Page, expected: list[int]) -> None:
    """Wait until the pieces onPick received are `expected`."""
    await page.wait_for_function(
        "e => JSON.stringify(window.picked) === JSON.stringify(e)", arg=expected
    )


async def test_a_stack_stays_countable_and_every_token_clickable(
    board_page: tuple[Page, list[str]],
) -> None:
    """Two own pieces on one square: both drawn apart, a count of 2, each pickable by
    click, Enter and Space; setMovable(null) clears it all."""
    page, errors = board_page
    model = board_model("cross", 4)
    await create(page, model)
    await set_pieces(page, [[5, 5, -1, -1], [-1] * 4, [-1] * 4, [-1] * 4])
    token = [page.locator(f"#board g.piece[data-seat='0'][data-piece='{i}']") for i in range(4)]
    boxes = [await token[i].bounding_box() for i in (0, 1)]
    assert boxes[0] and boxes[1] and boxes[0] != boxes[1]
    badge = page.locator("#board .count[data-seat='0']")
    await expect(badge).to_have_count(1)
    await expect(badge).to_have_attribute("data-count", "2")
    await expect(badge).to_have_text("2")

    moves = [
        {"piece": 0, "from": 5, "to": 8, "captures": []},
        {"piece": 1, "from": 5, "to": 8, "captures": []},
        {"piece": 2, "from": -1, "to": 0, "captures": []},
    ]
    await page.evaluate(
        "m => window.b.setMovable(0, m, (piece) => window.picked.push(piece))", moves
    )
    await expect(page.locator("#board g.piece.movable")).to_have_count(3)
    await expect(page.locator("#board .target")).to_have_count(3)
    for i in (0, 1, 2):
        await expect(token[i]).to_have_attribute("tabindex", "0")
        await expect(token[i]).to_have_attribute("role", "button")
    await expect(token[3]).not_to_have_attribute("tabindex", "0")
    assert "piece 2" in (await token[1].get_attribute("aria-label") or "")

    await token[1].click()
    await picked(page, [1])
    await token[0].click()
    await picked(page, [1, 0])
    await token[2].focus()
    await page.keyboard.press("Enter")
    await picked(page, [1, 0, 2])
    await token[1].focus()
    await page.keyboard.press(" ")
    await picked(page, [1, 0, 2, 1])
    # a target square picks its move too (piece 2's: its start square)
    await page.locator("#board .target[data-piece='2']").click()
    await picked(page, [1, 0, 2, 1, 2])
    # a token that may not move does nothing
    await token[3].click(force=True)
    assert await page.evaluate("window.picked") == [1, 0, 2, 1, 2]

    await page.evaluate("window.b.setMovable(null)")
    await expect(page.locator("#board g.piece.movable")).to_have_count(0)
    await expect(page.locator("#board .target")).to_have_count(0)
    await expect(page.locator("#board g.piece[tabindex]")).to_have_count(0)
    await page.evaluate("window.b.setLastMove(0, 1)")
    await expect(page.locator("#board g.piece.moved")).to_have_count(1)
    await expect(token[1]).to_have_class("piece c-yellow moved")
    assert errors == []


WATCH = """([seat, piece]) => {
  const g = document.querySelector(`#board g.piece[data-seat="${seat}"][data-piece="${piece}"]`);
  if (window.watcher) window.watcher.disconnect();
  window.seen = [];
  window.watcher = new MutationObserver(() => window.seen.push(g.getAttribute('transform')));
  window.watcher.observe(g, { attributes: true, attributeFilter: ['transform'] });
}"""
WHERE = """([seat, piece]) => {
  const g = document.querySelector(`#board g.piece[data-seat="${seat}"][data-piece="${piece}"]`);
  const m = /translate\\(([-\\d.]+) ([-\\d.]+)\\)/.exec(g.getAttribute('transform'));
  return { x: +m[1], y: +m[2], progress: +g.dataset.progress };
}"""


async def animate(page: Page, move: dict[str, Any]) -> None:
    await page.evaluate("m => window.b.animateMove(m, { stepMs: 30 })", move)


def near(a: dict[str, float], b: dict[str, float]) -> bool:
    return abs(a["x"] - b["x"]) < 0.6 and abs(a["y"] - b["y"]) < 0.6


async def test_animate_move_walks_cell_by_cell_and_sends_captures_home(
    board_page: tuple[Page, list[str]],
) -> None:
    """An entering move, a capture and a move into the goal end on their cells, passing
    every cell between; reduced motion jumps straight there."""
    page, errors = board_page
    model = board_model("cross", 4)
    goal = model["goal"]
    await create(page, model)
    # blue's piece 0 on track square 10 (blue's progress 49), yellow's on 3
    await set_pieces(page, [[3, -1, goal - 2, -1], [49, -1, -1, -1], [-1] * 4, [-1] * 4])
    await page.evaluate(WATCH, [0, 0])
    await animate(page, {"seat": 0, "piece": 0, "from": 3, "to": 10, "captures": [[1, 0]]})
    end = await page.evaluate(WHERE, [0, 0])
    target = await page.evaluate("window.b.cellOf(0, 10)")
    assert end["progress"] == 10 and near(end, target)
    seen = await page.evaluate("window.seen")
    visited = []
    for p in range(4, 11):
        cell = await page.evaluate("p => window.b.cellOf(0, p)", p)
        here = f"translate({cell['x']} {cell['y']})"
        hits = [k for k, t in enumerate(seen) if t.startswith(here)]
        assert hits, p
        visited.append(hits[0])
    assert visited == sorted(visited)
    captured = await page.evaluate(WHERE, [1, 0])
    assert captured["progress"] == -1
    nest = await page.evaluate("window.b.cellOf(1, -1)")
    assert abs(captured["x"] - nest["x"]) < 2 * 40 and abs(captured["y"] - nest["y"]) < 2 * 40

    # entering: nest → start
    await animate(page, {"seat": 0, "piece": 1, "from": -1, "to": 0, "captures": []})
    assert near(await page.evaluate(WHERE, [0, 1]), await page.evaluate("window.b.cellOf(0, 0)"))
    # home column → goal
    await page.evaluate(WATCH, [0, 2])
    await animate(page, {"seat": 0, "piece": 2, "from": goal - 2, "to": goal, "captures": []})
    done = await page.evaluate(WHERE, [0, 2])
    assert done["progress"] == goal
    goal_cell = await page.evaluate(f"window.b.cellOf(0, {goal})")
    assert goal_cell["kind"] == "goal"
    assert abs(done["x"] - goal_cell["x"]) < 20 and abs(done["y"] - goal_cell["y"]) < 20
    last_home = await page.evaluate(f"window.b.cellOf(0, {goal - 1})")
    assert any(t.startswith(f"translate({last_home['x']} {last_home['y']})")
               for t in await page.evaluate("window.seen"))  # fmt: skip
    # setPieces with the position after the move changes nothing
    before = await page.evaluate(READ_BOARD)
    await set_pieces(page, [[10, 0, goal, -1], [-1] * 4, [-1] * 4, [-1] * 4])
    assert (await page.evaluate(READ_BOARD))["tokens"] == before["tokens"]

    # reduced motion: no step between
    await page.emulate_media(reduced_motion="reduce")
    await page.evaluate(WATCH, [0, 0])
    await animate(page, {"seat": 0, "piece": 0, "from": 10, "to": 16, "captures": []})
    assert near(await page.evaluate(WHERE, [0, 0]), await page.evaluate("window.b.cellOf(0, 16)"))
    assert len(await page.evaluate("window.seen")) == 1
    assert errors == []
