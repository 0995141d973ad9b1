"""The match as a Decider: `initial_state`, `decide`, `evolve`, `is_terminal`, `fold`.

`decide(command, state)` is the one place that validates: it returns the events the command
causes, or a `Rejection` and no events. `evolve(state, event)` applies one recorded fact and
never re-judges a rule, so folding a stored stream cannot disagree with how it was decided.

`evolve` returns a new state; `apply` is its in-place twin for loops that own their state
(`fold`, simulations), because copying the state per event would dominate their cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, cast

import msgspec

from domain.board import NEST, PIECES, Board, board_for
from domain.commands import (
    Actor,
    Command,
    Concede,
    CreateMatch,
    LeaveSeat,
    MovePiece,
    Reclaim,
    Rejection,
    RevealSeed,
    Roll,
    StandIn,
    StartMatch,
    TimeOut,
)
from domain.dice import ClientSeedError, join_client_seeds, seed_matches
from domain.events import (
    CpuLevel,
    DieRolled,
    Event,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    MatchTable,
    PieceMoved,
    PlayerFinished,
    RollPassed,
    SeatReclaimed,
    SeatSpec,
    SeatStoodIn,
    SeedRevealed,
    StandInReason,
    TurnEnded,
    TurnTimedOut,
)
from domain.moves import (
    Move,
    entering_move,
    has_course_piece,
    legal_move_list,
    push,
    why_not,
)
from domain.placements import placements
from domain.rules import Ruleset, RulesetError, parse_ruleset, ruleset_to_dict

__all__ = [
    "STAND_IN_AFTER_TIMEOUTS",
    "STAND_IN_LEVEL",
    "STATE_FIELDS",
    "Controller",
    "MatchState",
    "apply",
    "bonus_rolls",
    "current_legal_moves",
    "decide",
    "evolve",
    "fold",
    "initial_state",
    "is_terminal",
    "needs_die",
    "third_six",
]

STAND_IN_AFTER_TIMEOUTS: Final = 3
# The level of the CPU that stands in for a player or plays a timed-out turn: it keeps
# the player's game going, neither throwing it nor playing it better than they might.
STAND_IN_LEVEL: Final[CpuLevel] = "normal"
_THREE_TRIES: Final = 3

# Who acts for a seat (`MatchState.controller`): its own CPU, a CPU standing in for the
# player, the CPU playing one turn that timed out, or the player.
Controller = Literal["cpu", "stand-in", "timeout", "player"]


# The fields of MatchState. Read these, not `MatchState.__slots__`: a class compiled by
# mypyc (docs/benchmarks.md) has no `__slots__` attribute.
STATE_FIELDS = (
    "board",
    "client_seed",
    "die",
    "finished",
    "first_seat",
    "moves_memo",
    "phase",
    "pieces",
    "placements",
    "rolls_left",
    "rolls_made",
    "ruleset",
    "seats",
    "seed_hash",
    "server_seed",
    "sixes",
    "status",
    "stood_in",
    "table",
    "timed_out_this_turn",
    "timeouts",
    "tries",
    "turn",
    "version",
)


class MatchState:
    """Everything the rules need to judge the next command. Build it only by folding events.

    `status`: new → created → playing → finished. During play `phase` is "roll" (the seat
    to act must roll) or "move" (it must move a piece by `die`).
    """

    __slots__ = STATE_FIELDS

    def __init__(self) -> None:
        self.status = "new"
        self.version = 0  # events applied so far = the stream version to expect next
        self.ruleset: Ruleset | None = None
        self.board: Board | None = None
        self.seats: tuple[SeatSpec, ...] = ()
        self.seed_hash = ""
        self.client_seed = ""
        self.server_seed: str | None = None
        self.first_seat = 0
        # The table's settings from MatchCreated (v3); None: none recorded there (no
        # table, or a match stored before the event carried them: its `matches` row).
        self.table: MatchTable | None = None
        self.pieces: list[list[int]] = []
        self.turn = 0
        self.phase = "roll"
        self.die: int | None = None
        self.rolls_left = 1
        self.sixes = 0
        self.tries = 0  # passed empty-course rolls this turn (three_tries)
        self.rolls_made = 0  # n of the next die (docs/design.md#fair-dice)
        self.finished: list[int] = []
        self.placements: tuple[int, ...] | None = None
        self.timeouts: list[int] = []  # consecutive timed-out turns per seat
        self.timed_out_this_turn = False
        self.stood_in: list[str | None] = []
        # (version, die, moves): the legal moves `decide` found for a roll, reused by
        # `current_legal_moves` and the move that follows. A memo, not state: it never
        # changes what the state means, and a stale one is ignored by its version.
        self.moves_memo: tuple[int, int, tuple[Move, ...]] | None = None

    def copy(self) -> MatchState:
        new = MatchState.__new__(MatchState)
        for name in STATE_FIELDS:
            setattr(new, name, getattr(self, name))
        new.pieces = [row[:] for row in self.pieces]
        new.finished = self.finished[:]
        new.timeouts = self.timeouts[:]
        new.stood_in = self.stood_in[:]
        return new

    @property
    def players(self) -> int:
        return len(self.seats)

    def playing(self, seat: int) -> bool:
        """True when the seat has not finished yet."""
        return seat not in self.finished

    def controller(self, seat: int) -> Controller:
        """Who acts for `seat` now (a timed-out turn is the CPU's only while it lasts)."""
        if self.seats[seat].cpu is not None:
            return "cpu"
        if self.stood_in[seat] is not None:
            return "stand-in"
        if seat == self.turn and self.timed_out_this_turn:
            return "timeout"
        return "player"

    def cpu_controls(self, seat: int) -> bool:
        """True when a CPU acts for `seat` now: a CPU seat, a stand-in, or a timed-out turn."""
        return self.controller(seat) != "player"

    def cpu_level(self, seat: int) -> CpuLevel:
        """The level of the CPU acting for `seat`: a CPU seat's own, else the stand-in's."""
        return self.seats[seat].cpu or STAND_IN_LEVEL


def initial_state() -> MatchState:
    """The state before any event: a match that does not exist yet."""
    return MatchState()


def is_terminal(state: MatchState) -> bool:
    """True once the match is finished (the seed reveal may still follow)."""
    return state.status == "finished"


# ---------------------------------------------------------------------------------- evolve


def _on_die_rolled(state: MatchState, event: DieRolled) -> None:
    value = event.value
    state.die = value
    state.rolls_left -= 1
    state.sixes = state.sixes + 1 if value == 6 else 0
    state.rolls_made = event.n + 1
    state.phase = "move"


def _on_piece_moved(state: MatchState, event: PieceMoved) -> None:
    row = state.pieces[event.seat]
    row[event.piece] = event.to
    for s, i in event.captures:
        state.pieces[s][i] = NEST
    state.rolls_left += event.bonus
    state.die = None
    state.phase = "roll"


def _on_turn_ended(state: MatchState, event: TurnEnded) -> None:
    if not state.timed_out_this_turn:
        state.timeouts[event.seat] = 0
    state.turn = event.next_seat
    state.rolls_left = 1
    state.sixes = 0
    state.tries = 0
    state.die = None
    state.phase = "roll"
    state.timed_out_this_turn = False


def _on_roll_passed(state: MatchState, event: RollPassed) -> None:
    if event.reason == "three_sixes":
        state.rolls_left = 0
    if event.retry:
        state.rolls_left += 1
        state.tries += 1
    state.die = None
    state.phase = "roll"


def _on_player_finished(state: MatchState, event: PlayerFinished) -> None:
    state.finished.append(event.seat)


def _on_match_conceded(state: MatchState, event: MatchConceded) -> None:
    # The fact of who gave up; what it changes (the end, the places) is the
    # `MatchFinished` decided with it.
    return None


def _on_match_finished(state: MatchState, event: MatchFinished) -> None:
    state.placements = event.placements
    state.status = "finished"
    state.die = None


def _on_turn_timed_out(state: MatchState, event: TurnTimedOut) -> None:
    state.timeouts[event.seat] = event.consecutive
    state.timed_out_this_turn = True


def _on_seat_stood_in(state: MatchState, event: SeatStoodIn) -> None:
    state.stood_in[event.seat] = event.reason


def _on_seat_reclaimed(state: MatchState, event: SeatReclaimed) -> None:
    state.stood_in[event.seat] = None
    state.timeouts[event.seat] = 0


def _on_match_created(state: MatchState, event: MatchCreated) -> None:
    ruleset = parse_ruleset(event.ruleset)
    players = len(event.seats)
    state.ruleset = ruleset
    state.board = board_for(ruleset, players)
    state.seats = event.seats
    state.seed_hash = event.seed_hash
    state.first_seat = event.first_seat
    state.table = event.table if isinstance(event.table, MatchTable) else None
    state.turn = event.first_seat
    state.pieces = [[NEST] * PIECES for _ in range(players)]
    state.timeouts = [0] * players
    state.stood_in = [None] * players
    state.status = "created"


def _on_match_started(state: MatchState, event: MatchStarted) -> None:
    state.client_seed = event.client_seed
    if state.ruleset is not None and state.ruleset.quick_start:
        for row in state.pieces:
            row[0] = 0
    state.status = "playing"


def _on_seed_revealed(state: MatchState, event: SeedRevealed) -> None:
    state.server_seed = event.server_seed


# The commands and events of every turn under Final names. Compiled (mypyc), a Final name
# is a C static, while a class imported from an uncompiled module (domain.events,
# domain.commands) is looked up in this module's dictionary on every use: `apply` and
# `decide` test these types, and `decide` builds these events, on every roll.
_ROLL: Final = Roll
_MOVE_PIECE: Final = MovePiece
_DIE_ROLLED: Final = DieRolled
_PIECE_MOVED: Final = PieceMoved
_TURN_ENDED: Final = TurnEnded
_ROLL_PASSED: Final = RollPassed


# The handlers of the rarer events, looked up by exact type. `apply` runs for every event
# of every match folded or played; the four events of nearly every turn are tested first.
_APPLY: dict[type, Callable[[MatchState, Any], None]] = {
    PlayerFinished: _on_player_finished,
    MatchConceded: _on_match_conceded,
    MatchFinished: _on_match_finished,
    TurnTimedOut: _on_turn_timed_out,
    SeatStoodIn: _on_seat_stood_in,
    SeatReclaimed: _on_seat_reclaimed,
    MatchCreated: _on_match_created,
    MatchStarted: _on_match_started,
    SeedRevealed: _on_seed_revealed,
}


def apply(state: MatchState, event: Event) -> MatchState:
    """Apply one event to `state` in place and return it. Only for states you own."""
    # Direct calls, not a table, for the common events: compiled (mypyc), a direct call is
    # a native call, while a call through the table boxes its arguments and looks it up.
    if type(event) is _DIE_ROLLED:
        _on_die_rolled(state, event)
    elif type(event) is _PIECE_MOVED:
        _on_piece_moved(state, event)
    elif type(event) is _TURN_ENDED:
        _on_turn_ended(state, event)
    elif type(event) is _ROLL_PASSED:
        _on_roll_passed(state, event)
    else:
        _APPLY[type(event)](state, event)
    state.version += 1
    return state


def evolve(state: MatchState, event: Event) -> MatchState:
    """The state after `event`; `state` itself is left unchanged."""
    return apply(state.copy(), event)


def fold(events: Iterable[Event], state: MatchState | None = None) -> MatchState:
    """Fold events into a state (from scratch, or onward from a state you own)."""
    current = MatchState() if state is None else state
    for event in events:
        apply(current, event)
    return current


# ---------------------------------------------------------------------------------- decide


def bonus_rolls(board: Board, die: int, captures: bool, to: int) -> int:
    """Extra rolls a move earns (docs/rules.md#rolls-left-and-bonus-rolls): a six, a capture,
    reaching the goal, as the ruleset grants. Always an int (never a bool): it is recorded as
    `PieceMoved.bonus`."""
    return (die == 6) + (board.capture_bonus and captures) + (board.goal_bonus and to == board.goal)


def third_six(board: Board, sixes: int, die: int) -> bool:
    """True when `die` is a third six in a row, forfeit with the rest of the turn under
    `three_sixes` (docs/rules.md#three-sixes-three_sixes); `sixes`: the sixes rolled in a row this
    turn before it."""
    return die == 6 and sixes == 2 and board.three_sixes


def needs_die(state: MatchState) -> bool:
    """False when the seat to act enters a piece without a die (`auto_enter`)."""
    return _auto_entry(state) is None


def current_legal_moves(state: MatchState) -> tuple[Move, ...]:
    """The moves open to the seat to act, for the die it has just rolled (() otherwise)."""
    die = state.die
    if state.status != "playing" or state.phase != "move" or die is None:
        return ()
    memo = state.moves_memo
    if memo is not None and memo[0] == state.version and memo[1] == die:
        return memo[2]
    assert state.board is not None
    moves = tuple(legal_move_list(state.board, state.pieces, state.turn, die))
    state.moves_memo = (state.version, die, moves)
    return moves


def _auto_entry(state: MatchState) -> Move | None:
    ruleset = state.ruleset
    if ruleset is None or ruleset.empty_course != "auto_enter":
        return None
    board = state.board
    if (
        board is None
        or state.status != "playing"
        or state.phase != "roll"
        or has_course_piece(board, state.pieces, state.turn)
    ):
        return None
    return entering_move(board, state.pieces, state.turn)


def _next_seat(state: MatchState, seat: int, also_finished: int | None = None) -> int:
    n = state.players
    if also_finished is None and not state.finished:
        return (seat + 1) % n  # nobody has finished (most turns): the seat after
    for step in range(1, n + 1):
        candidate = (seat + step) % n
        if candidate not in state.finished and candidate != also_finished:
            return candidate
    return seat


def decide(command: Command, state: MatchState) -> list[Event] | Rejection:
    """The events `command` causes in `state`, or why it is refused (then nothing changes)."""
    # A roll or a move is nearly every command: called directly, as in `apply`.
    if type(command) is _ROLL:
        return _decide_roll(command, state)
    if type(command) is _MOVE_PIECE:
        return _decide_move(command, state)
    handler = _DECIDE.get(type(command))
    if handler is None:
        return Rejection("bad_command", f"unknown command {type(command).__name__}")
    return handler(command, state)


def _playing_seat(state: MatchState, seat: int) -> Rejection | None:
    if state.status in ("new", "created"):
        return Rejection("not_started", "the match has not started")
    if state.status == "finished":
        return Rejection("match_finished", "the match is over")
    if not 0 <= seat < state.players:
        return Rejection("unknown_seat", f"seat must be 0-{state.players - 1}, got {seat}")
    return None


def _own_turn(state: MatchState, seat: int) -> Rejection | None:
    if seat == state.turn and state.status == "playing":
        return None
    bad = _playing_seat(state, seat)
    if bad is not None:
        return bad
    if seat != state.turn:
        return Rejection("not_your_turn", f"it is seat {state.turn}'s turn, not seat {seat}'s")
    return None


def _control(state: MatchState, seat: int, by: Actor) -> Rejection | None:
    """A roll or a move sent by whoever does not control the seat now: a player's while a
    CPU plays it (stood in for, or a timed-out turn), a CPU's while its player does."""
    if state.status != "playing" or not 0 <= seat < state.players:
        return None  # no seat is controlled: the turn's checks name what is wrong
    controller = state.controller(seat)
    if by == "player":
        if controller == "player":
            return None
        if controller == "stand-in":
            return Rejection("stood_in", "a CPU plays for your seat; reclaim it first")
        if controller == "timeout":
            return Rejection("cpu_playing", "your turn timed out; the CPU plays the rest of it")
        return Rejection("cpu_playing", f"seat {seat} is a CPU seat")
    if controller == "player":
        return Rejection("player_plays", f"seat {seat}'s player plays it, not a CPU")
    return None


def _decide_create(command: CreateMatch, state: MatchState) -> list[Event] | Rejection:
    if state.status != "new":
        return Rejection("already_created", "the match already exists")
    try:
        # Re-validate: a Ruleset can be built directly with values parse_ruleset refuses,
        # and a pinned bad ruleset would make every later fold of this stream fail.
        board_for(parse_ruleset(ruleset_to_dict(command.ruleset)), len(command.seats))
    except RulesetError as error:
        return Rejection("bad_ruleset", str(error))
    if not 0 <= command.first_seat < len(command.seats):
        return Rejection("bad_command", f"first_seat must be a seat, got {command.first_seat}")
    seed_hash = command.seed_hash
    if len(seed_hash) != 64 or any(c not in "0123456789abcdef" for c in seed_hash):
        return Rejection("bad_seed", "seed_hash must be 64 lowercase hex digits")
    return [
        MatchCreated(
            ruleset=ruleset_to_dict(command.ruleset),
            seats=command.seats,
            seed_hash=seed_hash,
            first_seat=command.first_seat,
            table=msgspec.UNSET if command.table is None else command.table,
        )
    ]


def _decide_start(command: StartMatch, state: MatchState) -> list[Event] | Rejection:
    if state.status == "new":
        return Rejection("not_created", "create the match first")
    if state.status != "created":
        return Rejection("already_started", "the match has already started")
    if len(command.client_seeds) != state.players:
        return Rejection(
            "bad_seed",
            f"need one client seed per seat ({state.players}), got {len(command.client_seeds)}",
        )
    try:
        joined = join_client_seeds(command.client_seeds)
    except ClientSeedError as error:
        return Rejection("bad_seed", str(error))
    return [MatchStarted(client_seeds=command.client_seeds, client_seed=joined)]


def _decide_roll(command: Roll, state: MatchState) -> list[Event] | Rejection:
    seat = command.seat
    by = command.by
    if by is not None:
        refused = _control(state, seat, by)
        if refused is not None:
            return refused
    if seat != state.turn or state.status != "playing":
        bad = _own_turn(state, seat)
        if bad is not None:
            return bad
    if state.phase != "roll":
        return Rejection("move_first", f"move a piece by the {state.die} rolled first")
    board = state.board
    assert board is not None
    auto = _auto_entry(state) if board.empty_course == "auto_enter" else None
    if auto is not None:
        # docs/rules.md#no-piece-on-the-course-empty_course auto_enter: the roll action enters a
        # piece without a die and ends the turn, so no bonus applies; a blocked start square falls
        # back to a normal roll.
        return [
            PieceMoved(
                seat=seat, piece=auto.piece, frm=auto.frm, to=auto.to, captures=auto.captures
            ),
            TurnEnded(seat=seat, next_seat=_next_seat(state, seat)),
        ]
    # Read through `Any`, not as the field's `int | None`: compiled (mypyc), a typed read
    # checks the type, so a wrongly typed die would raise a TypeError, not this rejection.
    die: object = cast(Any, command).die
    if type(die) is not int or not 1 <= die <= 6:
        return Rejection("bad_die", f"a roll needs a die value 1-6, got {die!r}")
    rolled = _DIE_ROLLED(seat=seat, n=state.rolls_made, value=die)
    if third_six(board, state.sixes, die):
        return [
            rolled,
            RollPassed(seat=seat, reason="three_sixes"),
            TurnEnded(seat=seat, next_seat=_next_seat(state, seat)),
        ]
    found = legal_move_list(board, state.pieces, seat, die)
    if found:
        # The player must now choose; DieRolled leaves the pieces as they are, so these
        # are exactly the moves of the state one version on.
        state.moves_memo = (state.version + 1, die, tuple(found))
        return [rolled]
    # docs/rules.md#no-piece-on-the-course-empty_course three_tries: a passed roll of a seat with
    # nothing on the course tries again, up to three rolls, until an entering value comes (revision
    # 2 on: even one that cannot be played ends the tries; `rules.entering_value_ends_tries`).
    retry = (
        board.empty_course == "three_tries"
        and state.tries < _THREE_TRIES - 1
        and not (board.entering_ends_tries and die in board.enter_on)
        and not has_course_piece(board, state.pieces, seat)
    )
    events: list[Event] = [rolled, _ROLL_PASSED(seat=seat, reason="no_legal_move", retry=retry)]
    if state.rolls_left - 1 + retry == 0:
        events.append(_TURN_ENDED(seat=seat, next_seat=_next_seat(state, seat)))
    return events


def _decide_move(command: MovePiece, state: MatchState) -> list[Event] | Rejection:
    seat = command.seat
    by = command.by
    if by is not None:
        refused = _control(state, seat, by)
        if refused is not None:
            return refused
    if seat != state.turn or state.status != "playing":
        bad = _own_turn(state, seat)
        if bad is not None:
            return bad
    die = state.die
    if state.phase != "move" or die is None:
        return Rejection("roll_first", "roll the die first")
    board = state.board
    assert board is not None
    memo = state.moves_memo
    if memo is not None and memo[0] == state.version and memo[1] == die:
        legals = memo[2]  # `current_legal_moves`, inlined for the common case
    else:
        legals = current_legal_moves(state)
    move: Move | None = None
    piece = command.piece
    for legal in legals:
        if legal.piece == piece:
            move = legal
            break
    if move is None:
        return _illegal_move(board, state.pieces, seat, piece, die)
    # The move's fields read once each: a Move is a msgspec Struct, whose attributes cost a
    # generic look-up when compiled.
    moved, to, captures = move.piece, move.to, move.captures
    goal = board.goal
    reaches_goal = to == goal
    bonus = bonus_rolls(board, die, bool(captures), to)
    events: list[Event] = [
        _PIECE_MOVED(
            seat=seat,
            piece=moved,
            frm=move.frm,
            to=to,
            captures=captures,
            die=die,
            bonus=bonus,
        )
    ]
    if reaches_goal and all(p == goal for i, p in enumerate(state.pieces[seat]) if i != moved):
        place = len(state.finished) + 1
        events.append(PlayerFinished(seat=seat, place=place))
        still_playing = state.players - len(state.finished) - 1
        if not board.ruleset.play_to_end or still_playing <= 1:
            after = [row[:] for row in state.pieces]
            push(after, seat, move)
            events.append(
                MatchFinished(placements=placements(board, after, [*state.finished, seat]))
            )
            return events
        events.append(TurnEnded(seat=seat, next_seat=_next_seat(state, seat, also_finished=seat)))
        return events
    if state.rolls_left + bonus == 0:
        events.append(_TURN_ENDED(seat=seat, next_seat=_next_seat(state, seat)))
    return events


def _illegal_move(
    board: Board, pieces: list[list[int]], seat: int, piece: int, die: int
) -> Rejection:
    """The refusal of a piece the walk leaves out: the rule that stops it, as facts (`why`,
    for a client to word) and in English (`reason`)."""
    if not 0 <= piece < PIECES:
        # No such piece, so no rule to name. The HTTP and socket bodies refuse it before a
        # command is made; other callers (replays of a tampered file) reach this.
        return Rejection(
            "illegal_move",
            f"piece {piece} cannot move {die}: piece must be 0-{PIECES - 1}, got {piece}",
        )
    why = why_not(board, pieces, seat, piece, die)
    if why is None:  # pragma: no cover - tests/domain/test_properties.py pins that it is not
        return Rejection("illegal_move", f"piece {piece} cannot move {die}")
    return Rejection("illegal_move", f"piece {piece} cannot move {die}: {why}", why=why)


def _decide_timeout(command: TimeOut, state: MatchState) -> list[Event] | Rejection:
    seat = command.seat
    bad = _own_turn(state, seat)
    if bad is not None:
        return bad
    consecutive = state.timeouts[seat] + (0 if state.timed_out_this_turn else 1)
    events: list[Event] = [TurnTimedOut(seat=seat, consecutive=consecutive)]
    if consecutive >= STAND_IN_AFTER_TIMEOUTS and state.stood_in[seat] is None:
        events.append(SeatStoodIn(seat=seat, reason="timeouts"))
    return events


def _decide_stand_in(
    seat: int, reason: StandInReason, state: MatchState
) -> list[Event] | Rejection:
    bad = _playing_seat(state, seat)
    if bad is not None:
        return bad
    if state.seats[seat].cpu is not None:
        return Rejection("already_stood_in", f"seat {seat} is a CPU seat")
    if state.stood_in[seat] is not None:
        return Rejection("already_stood_in", f"a CPU already plays for seat {seat}")
    return [SeatStoodIn(seat=seat, reason=reason)]


def _decide_reclaim(command: Reclaim, state: MatchState) -> list[Event] | Rejection:
    bad = _playing_seat(state, command.seat)
    if bad is not None:
        return bad
    reason = state.stood_in[command.seat]
    if reason is None:
        return Rejection("not_stood_in", f"seat {command.seat} is not stood in for")
    if command.returning and reason != "disconnected":
        # A connection coming back undoes only what its loss caused: a player who left or
        # kept timing out gets the seat back when they ask (an explicit reclaim), not by
        # reloading the page.
        return Rejection(
            "stand_in_kept",
            f"the stand-in for seat {command.seat} ({reason}) ends only when its player "
            "reclaims the seat",
        )
    return [SeatReclaimed(seat=command.seat)]


def _decide_concede(command: Concede, state: MatchState) -> list[Event] | Rejection:
    """A player gives up a casual match against CPUs (docs/rules-decisions.md): it ends at
    once; finishers keep their places, the CPUs still playing are placed by their pieces
    (`domain.placements`), the conceding seat last."""
    seat = command.seat
    bad = _playing_seat(state, seat)
    if bad is not None:
        return bad
    if state.seats[seat].cpu is not None:
        return Rejection("bad_command", f"seat {seat} is a CPU seat")
    if not state.playing(seat):
        return Rejection("seat_finished", f"seat {seat} has finished already")
    if command.ranked:
        return Rejection("ranked_match", "a ranked match cannot be conceded; leave it instead")
    people = [
        i for i in range(state.players) if i != seat and state.playing(i) and not state.seats[i].cpu
    ]
    if people:
        return Rejection(
            "not_against_cpus",
            f"seat {people[0]} is still playing: only a match against CPUs can be conceded",
        )
    board = state.board
    assert board is not None
    return [
        MatchConceded(seat=seat),
        MatchFinished(placements=placements(board, state.pieces, state.finished, seat)),
    ]


def _decide_reveal(command: RevealSeed, state: MatchState) -> list[Event] | Rejection:
    if state.status != "finished":
        return Rejection("not_finished", "the seed is revealed only after the match ends")
    if state.server_seed is not None:
        return Rejection("already_revealed", "the seed is already revealed")
    if not seed_matches(command.server_seed, state.seed_hash):
        return Rejection("bad_seed", "that seed does not match the match's seed_hash")
    return [SeedRevealed(server_seed=command.server_seed)]


def _decide_leave(command: LeaveSeat, state: MatchState) -> list[Event] | Rejection:
    return _decide_stand_in(command.seat, "left", state)


def _decide_stand_in_command(command: StandIn, state: MatchState) -> list[Event] | Rejection:
    return _decide_stand_in(command.seat, command.reason, state)


# The other commands' handlers (`decide` calls those for Roll and MovePiece directly).
_DECIDE: dict[type, Callable[[Any, MatchState], list[Event] | Rejection]] = {
    CreateMatch: _decide_create,
    StartMatch: _decide_start,
    TimeOut: _decide_timeout,
    StandIn: _decide_stand_in_command,
    LeaveSeat: _decide_leave,
    Reclaim: _decide_reclaim,
    Concede: _decide_concede,
    RevealSeed: _decide_reveal,
}
