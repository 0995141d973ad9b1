"""Shared helpers for the domain tests: rulesets, reference geometry, positions, commands.

Everything a test needs to set up a match lives here, once:

- `rules(...)`: a ruleset from a preset plus overrides, through the public `parse_ruleset`.
- `ref_*`: the board geometry recomputed straight from docs/rules.md#the-board, independently of
  `domain.board`, so tests compare the engine against the specification, not against itself.
- `at_position(...)`: a `MatchState` in play at a given position, built only from events
  (MatchCreated, MatchStarted, then PieceMoved/TurnEnded facts that place the pieces and the
  turn), because `evolve` applies facts without re-judging them. Only the two turn counters
  of docs/rules.md#notation-for-tools-and-tests (`sixes`, `rolls_left`) are set directly.
- `play`/`roll`/`move`/`rejected`: drive `decide` and apply what it returns.
- `snapshot`: the meaning of a state as plain data, for equality checks.
- `rulesets()`, `match_setups()`: hypothesis strategies over every option of `Ruleset` and
  over whole CPU matches.

Hypothesis profiles: `ludo` (default: 100 examples, no deadline) keeps the suite fast;
`HYPOTHESIS_PROFILE=thorough` runs 3,000 examples per property for a bug hunt.

Tests import these with `from tests.conftest import ...`.
"""

from __future__ import annotations

import hashlib
import os
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import msgspec
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from domain.board import Board, board_for
from domain.commands import Command, MovePiece, Rejection, Roll
from domain.decider import STATE_FIELDS, MatchState, apply, decide, fold
from domain.engine_form import engine_form
from domain.events import Event, MatchCreated, MatchStarted, PieceMoved, SeatSpec, TurnEnded
from domain.moves import Move, legal_moves
from domain.rules import REVISIONS, Ruleset, parse_ruleset, ruleset_to_dict
from domain.selfplay import MatchRecord, play_match
from tests import browser, suite_plan
from tests.browser import requires_chromium

E = TypeVar("E", bound=Event)  # one kind of event, for `event_as`

# ------------------------------------------------------------------------------ rulesets


def pytest_configure(config: Any) -> None:
    """In a pytest-xdist worker, its own data folder (its own embedded PostgreSQL):
    tests/suite_plan.py."""
    suite_plan.configure_worker()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """The `browser`, `infra` and `bench` markers and the xdist groups: tests/suite_plan.py.
    First among the hooks: pytest-xdist's own (in each worker) reads the `xdist_group`
    marks to put the group in the test's id, which is what `--dist loadgroup` sends whole
    to one worker; after it, the marks were there but no group was (a module's shared
    fixture built on both workers, the fixed-port modules run side by side)."""
    suite_plan.sort(items, requires_chromium.mark)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A page test keeps its event loop, and so its Chromium, for the page tests after it
    (tests/browser.py)."""
    browser.hold_loop(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """After the last of a run of page tests, their Chromium closes (tests/browser.py)."""
    try:
        return (yield)
    finally:
        browser.release_loop(nextitem)


def pytest_sessionstart(session: Any) -> None:
    """With LUDO_EXPECT_ENGINE set (tests/test_compiled.py sets "compiled"), refuse to run
    unless the engine imported is in that form: a run that silently fell back to the source
    would prove nothing about the compiled build."""
    expected = os.environ.get("LUDO_EXPECT_ENGINE")
    if expected and engine_form() != expected:
        raise RuntimeError(f"LUDO_EXPECT_ENGINE={expected}, but the engine is {engine_form()}")


settings.register_profile("ludo", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ludo"))

SERVER_SEED = bytes(range(32))
SEED_HASH = hashlib.sha256(SERVER_SEED).hexdigest()
PLAYER_COUNTS = (2, 3, 4)
BOARDS = ("cross", "by_players")
NEST = -1


def rules(preset: str = "standard", **overrides: Any) -> Ruleset:
    """A ruleset from `preset` plus option overrides, via the public parser."""
    return parse_ruleset({"preset": preset, **overrides})


def _option_strategy(field: msgspec.structs.FieldInfo) -> st.SearchStrategy[Any]:
    if field.type is bool:
        return st.booleans()
    if typing.get_origin(field.type) is typing.Literal:
        return st.sampled_from(typing.get_args(field.type))
    if field.name == "enter_on":
        return st.frozensets(st.integers(1, 6), min_size=1)
    if field.name == "revision":
        return st.sampled_from(sorted(REVISIONS))
    raise AssertionError(f"no strategy for new option {field.name}: {field.type}")


def rulesets() -> st.SearchStrategy[Ruleset]:
    """Any valid ruleset: every option of `Ruleset` drawn over its whole range, under any
    revision of the rules."""
    return st.fixed_dictionaries(
        {f.name: _option_strategy(f) for f in msgspec.structs.fields(Ruleset)}
    ).map(lambda options: Ruleset(**options))


class MatchSetup(msgspec.Struct, frozen=True):
    """Everything `domain.selfplay.play_match` needs to replay one CPU match exactly."""

    ruleset: Ruleset
    players: int
    server_seed: bytes
    first_seat: int = 0
    client_seeds: tuple[str, ...] | None = None
    levels: tuple[str, ...] | None = None

    def play(self) -> MatchRecord:
        return play_match(
            self.ruleset,
            self.levels or ("easy",) * self.players,  # type: ignore[arg-type]
            server_seed=self.server_seed,
            client_seeds=self.client_seeds,
            first_seat=self.first_seat,
            keep_events=True,
        )


@st.composite
def match_setups(draw: st.DrawFn, ruleset: st.SearchStrategy[Ruleset] | None = None) -> MatchSetup:
    """A random all-`easy` CPU match: any ruleset, 2-4 players, any seeds and first seat."""
    players = draw(st.integers(2, 4))
    seeds = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
    return MatchSetup(
        ruleset=draw(ruleset if ruleset is not None else rulesets()),
        players=players,
        server_seed=draw(st.binary(min_size=32, max_size=32)),
        first_seat=draw(st.integers(0, players - 1)),
        client_seeds=tuple(draw(seeds) for _ in range(players)),
    )


# ------------------------------------ reference geometry (docs/rules.md#the-board only)

REF_COLOURS = ("yellow", "blue", "red", "green")


def ref_colour_indices(board: str, players: int) -> tuple[int, ...]:
    """Colour index per seat: cross seats 2 players opposite, 3 as yellow/blue/red."""
    if board == "cross":
        return {2: (0, 2), 3: (0, 1, 2), 4: (0, 1, 2, 3)}[players]
    return tuple(range(players))


def ref_colours(board: str, players: int) -> tuple[str, ...]:
    return tuple(REF_COLOURS[c] for c in ref_colour_indices(board, players))


def ref_arms(board: str, players: int) -> int:
    return 4 if board == "cross" else players


def ref_length(board: str, players: int) -> int:
    return 13 * ref_arms(board, players)


def ref_goal(board: str, players: int) -> int:
    return ref_length(board, players) + 4


def ref_starts(board: str, players: int) -> tuple[int, ...]:
    if board == "cross":
        return tuple(13 * c for c in ref_colour_indices(board, players))
    return tuple(13 * seat for seat in range(players))


def ref_safe(board: str, safe_squares: str, players: int) -> frozenset[int]:
    arms = range(ref_arms(board, players))
    if safe_squares == "none":
        return frozenset()
    if safe_squares == "start":
        return frozenset(13 * a for a in arms)
    return frozenset(sq for a in arms for sq in (13 * a, 13 * a + 8))


def ref_square(board: str, players: int, seat: int, p: int) -> int | None:
    """Track index of progress p of `seat`, or None off the track (nest, home, goal)."""
    length = ref_length(board, players)
    if 0 <= p <= length - 2:
        return (ref_starts(board, players)[seat] + p) % length
    return None


def ref_moves(
    ruleset: Ruleset, players: int, pieces: Sequence[Sequence[int]], seat: int, die: int
) -> list[tuple[int, int, int, tuple[tuple[int, int], ...]]]:
    """docs/rules.md#moves read literally: every legal `(piece, frm, to, captures)` of `seat` for
    `die`. An oracle for `legal_moves`, sharing no code with it."""
    board, r = ruleset.board, ruleset
    goal = ref_goal(board, players)
    safe = ref_safe(board, r.safe_squares, players)

    def square(s: int, p: int) -> int | None:
        return ref_square(board, players, s, p)

    others = [(s, i, square(s, p)) for s, row in enumerate(pieces) for i, p in enumerate(row)]
    blocks = set()
    if r.blocks == "double":
        for s in range(players):
            if s != seat:
                squares = [square(s, p) for p in pieces[s]]
                blocks |= {sq for sq in squares if sq is not None and squares.count(sq) >= 2}
    out = []
    for i, frm in enumerate(pieces[seat]):
        if frm == goal:
            continue
        if frm == NEST:
            if die not in r.enter_on:
                continue
            to, passed = 0, []
        else:
            to = frm + die
            if to > goal:
                if r.exact_finish:
                    continue
                to = goal
            passed = list(range(frm + 1, to))
        if any(square(seat, q) in blocks for q in [*passed, to]):
            continue
        own_others = [p for j, p in enumerate(pieces[seat]) if j != i]
        if r.blocks == "no_overtaking" and any(
            (
                (sq := square(seat, q)) is not None
                and any(where == sq and (s, j) != (seat, i) for s, j, where in others)
            )
            or (sq is None and q in own_others)
            for q in passed
        ):
            continue
        landing = square(seat, to)
        captures: tuple[tuple[int, int], ...] = ()
        if landing is not None and landing not in safe:
            captures = tuple(sorted((s, j) for s, j, sq in others if s != seat and sq == landing))
        out.append((i, frm, to, captures))
    return out


def ref_tries_again(
    ruleset: Ruleset, goal: int, row: Sequence[int], die: int | None, tries: int
) -> bool:
    """docs/rules.md#no-piece-on-the-course-empty_course `three_tries` read literally: whether a
    passed roll (`die`, after `tries` failed tries this turn) grants another. "Up to three rolls
    until an entering value comes": only with no own piece on the course (each in the nest or the
    goal), and from revision 2 not once the entering value has come, even if it could not be played
    (a passed roll adds nothing). Revision 1 tried again after any passed roll."""
    empty_course = all(p in (NEST, goal) for p in row)
    came = ruleset.revision >= 2 and die in ruleset.enter_on
    return ruleset.empty_course == "three_tries" and empty_course and tries < 2 and not came


# ------------------------------------------------------------------------------ positions

Pieces = Mapping[str, Sequence[int]] | Sequence[Sequence[int]]


def seat_index(ruleset: Ruleset, players: int, who: int | str) -> int:
    """A seat given as a seat number or a colour name."""
    if isinstance(who, str):
        return board_for(ruleset, players).seat_of(who)
    return who


def progress_on(
    square: int, who: int | str = "red", ruleset: Ruleset | None = None, players: int = 2
) -> int:
    """The progress at which `who`'s piece stands on track `square` (the formula of
    docs/rules.md#progress-where-a-piece-is)."""
    r = ruleset or rules()
    seat = seat_index(r, players, who)
    return (square - ref_starts(r.board, players)[seat]) % ref_length(r.board, players)


def to_move(ruleset: Ruleset, players: int, pieces: list[list[int]], die: int) -> MatchState:
    """Seat 0 at `pieces`, having just rolled `die` (so it must move)."""
    state = at_position(ruleset, players, pieces, 0)
    roll(state, die)
    assert state.phase == "move", "the constructed roll must leave a move to choose"
    return state


def row_on(
    *squares: int, who: int | str = "red", ruleset: Ruleset | None = None, players: int = 2
) -> list[int]:
    """Four pieces of `who`: one on each given track square, the rest in the nest."""
    row = [progress_on(sq, who, ruleset, players) for sq in squares]
    return row + [NEST] * (4 - len(row))


def piece_rows(ruleset: Ruleset, players: int, pieces: Pieces | None) -> list[list[int]]:
    """Rows `[seat][piece]` from docs/rules.md#notation-for-tools-and-tests notation ({colour:
    [p]*4}) or rows; missing colours have all four pieces in the nest."""
    if pieces is None:
        return [[NEST] * 4 for _ in range(players)]
    if isinstance(pieces, Mapping):
        board = board_for(ruleset, players)
        rows = [[NEST] * 4 for _ in range(players)]
        for colour, row in pieces.items():
            rows[board.seat_of(colour)] = list(row)
    else:
        rows = [list(row) for row in pieces]
    assert len(rows) == players and all(len(row) == 4 for row in rows), rows
    return rows


def seat_specs(players: int, cpu: str | None = None) -> tuple[SeatSpec, ...]:
    """Guest seats (or CPU seats of level `cpu`)."""
    if cpu is not None:
        return tuple(SeatSpec(name=f"cpu{i}", cpu=cpu) for i in range(players))  # type: ignore[arg-type]
    return tuple(SeatSpec(name=f"p{i}", player_id=f"player-{i}") for i in range(players))


def start_events(
    ruleset: Ruleset | None = None,
    players: int = 2,
    *,
    first_seat: int = 0,
    client_seeds: Sequence[str] | None = None,
    cpu: str | None = None,
) -> list[Event]:
    """MatchCreated + MatchStarted of a fresh match."""
    seeds = tuple(client_seeds) if client_seeds is not None else ("",) * players
    return [
        MatchCreated(
            ruleset=ruleset_to_dict(ruleset or rules()),
            seats=seat_specs(players, cpu),
            seed_hash=SEED_HASH,
            first_seat=first_seat,
        ),
        MatchStarted(client_seeds=seeds, client_seed="|".join(seeds)),
    ]


def new_match(ruleset: Ruleset | None = None, players: int = 2, **kwargs: Any) -> MatchState:
    """A match just started (status playing, seat `first_seat` to roll)."""
    return fold(start_events(ruleset, players, **kwargs))


def setup_events(state: MatchState, pieces: Pieces | None, turn: int | str) -> list[Event]:
    """Facts that move `state` to `pieces` with `turn` to roll (pieces teleport by
    PieceMoved, which `evolve` applies without re-judging)."""
    assert state.ruleset is not None
    rows = piece_rows(state.ruleset, state.players, pieces)
    events: list[Event] = [
        PieceMoved(seat=s, piece=i, frm=state.pieces[s][i], to=p)
        for s, row in enumerate(rows)
        for i, p in enumerate(row)
        if state.pieces[s][i] != p
    ]
    events.append(
        TurnEnded(seat=state.turn, next_seat=seat_index(state.ruleset, state.players, turn))
    )
    return events


def at_position(
    ruleset: Ruleset | None = None,
    players: int = 2,
    pieces: Pieces | None = None,
    turn: int | str = 0,
    *,
    sixes: int = 0,
    rolls_left: int = 1,
    **kwargs: Any,
) -> MatchState:
    """A match in play at a docs/rules.md#notation-for-tools-and-tests position: `pieces`, `turn` to
    roll, counters."""
    state = new_match(ruleset, players, **kwargs)
    fold(setup_events(state, pieces, turn), state)
    state.sixes = sixes
    state.rolls_left = rolls_left
    return state


# ------------------------------------------------------------------------------- commands


def play(state: MatchState, command: Command) -> list[Event]:
    """Decide `command`, require it accepted, apply its events to `state`, return them."""
    events = decide(command, state)
    assert not isinstance(events, Rejection), f"{command!r} rejected: {events!r}"
    for event in events:
        apply(state, event)
    return events


def rejected(state: MatchState, command: Command) -> Rejection:
    """Decide `command`, require a rejection, and check that it changed nothing."""
    before = snapshot(state)
    result = decide(command, state)
    assert isinstance(result, Rejection), f"{command!r} accepted: {result!r}"
    assert snapshot(state) == before
    return result


def roll(state: MatchState, die: int | None, seat: int | None = None) -> list[Event]:
    """The seat to act (or `seat`) rolls `die`."""
    return play(state, Roll(seat=state.turn if seat is None else seat, die=die))


def move(state: MatchState, piece: int, seat: int | None = None) -> list[Event]:
    """The seat to act (or `seat`) moves `piece` by the die it rolled."""
    return play(state, MovePiece(seat=state.turn if seat is None else seat, piece=piece))


def kinds(events: Sequence[Event]) -> list[str]:
    """Event type names, for compact assertions on a command's outcome."""
    return [type(e).__name__ for e in events]


def event_as(kind: type[E], event: Event) -> E:
    """`event`, checked to be a `kind` (so a test may read that kind's fields)."""
    assert isinstance(event, kind), f"{event!r} is not a {kind.__name__}"
    return event


def moves_for(
    ruleset: Ruleset, players: int, pieces: Pieces, who: int | str, die: int
) -> dict[int, Move]:
    """The legal moves of `who` for `die` at a position, keyed by piece."""
    board = board_for(ruleset, players)
    rows = piece_rows(ruleset, players, pieces)
    return {m.piece: m for m in legal_moves(board, rows, seat_index(ruleset, players, who), die)}


def targets(
    ruleset: Ruleset, players: int, pieces: Pieces, who: int | str, die: int
) -> dict[int, int]:
    """`{piece: to}` of the legal moves (a compact view of `moves_for`)."""
    return {i: m.to for i, m in moves_for(ruleset, players, pieces, who, die).items()}


def board_of(state: MatchState) -> Board:
    assert state.board is not None
    return state.board


# ------------------------------------------------------------------------------- snapshots

_MEMO_SLOTS = frozenset({"moves_memo", "board"})


def snapshot(state: MatchState) -> dict[str, Any]:
    """Every meaningful slot of a state as plain data (the move memo is a cache, left out)."""
    out = {}
    for name in STATE_FIELDS:
        if name in _MEMO_SLOTS:
            continue
        value = getattr(state, name)
        if isinstance(value, list):
            value = [list(v) if isinstance(v, list) else v for v in value]
        out[name] = value
    return out
