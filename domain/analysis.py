"""Match analysis: how much each roll helped and each choice cost, GNU Backgammon's way.

One evaluator values positions as a seat's chance to place first (`Chances`: `hard`'s
learned network where it applies, a fitted logistic of `hard`'s hand-made evaluation
elsewhere), and `hard`'s look-ahead (`domain.cpu.hard.score_moves`) values every legal
move of a die in those chances. From them, for each roll of seat s (docs/analysis.md):

- *before*: the mean over the six faces of the value of each face's best play (a face
  with no legal move: the position as it stands);
- *luck* = the value of the rolled face's best play − *before*: over the six faces it
  averages to zero by construction;
- for each choice among two or more different moves, *error* = the best move's value −
  the played move's value: never negative, zero for a best move.

Seat s's value then moves from *before* to the played move's value by luck − error, and
from there to its next *before* by what happened in between: the other seats' turns
(`others`), or, when s rolls again in the same turn, the difference between the one-roll
look-ahead that valued the move and the full valuation of the next roll (`lookahead`).
So, per seat, end − start = luck − error + others + lookahead, exactly (up to rounding).

The analysis ends where the first place is decided (the first `PlayerFinished`, or the
`MatchFinished`): past it every seat's chance to place first is 0 or 1. It is pure: the
same events give the same `Analysis`, and `encode` the same bytes, on every machine that
computes IEEE doubles alike (values are rounded to 6 decimals).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from domain.analysis_format import (
    FORMAT,
    FORMAT_VERSION,
    Analysis,
    Decision,
    Option,
    Point,
    Roll,
    SeatAnalysis,
    Swing,
    encode,
)
from domain.board import Board
from domain.cpu.evaluation import evaluate
from domain.cpu.features import opponents
from domain.cpu.hard import Leaf, score_moves
from domain.cpu.learned import NETWORK, win_chance
from domain.cpu.learned import applies as learned_applies
from domain.decider import MatchState, apply, current_legal_moves, third_six
from domain.events import (
    DieRolled,
    Event,
    MatchCreated,
    MatchFinished,
    PieceMoved,
    PlayerFinished,
    TurnEnded,
)
from domain.moves import Move

__all__ = [
    "EVALUATOR",
    "FORMAT",
    "FORMAT_VERSION",
    "Analyser",
    "Analysis",
    "Chances",
    "Decision",
    "Option",
    "Point",
    "Roll",
    "SeatAnalysis",
    "Swing",
    "analyse",
    "encode",
    "face_values",
]

# The fallback's slope, per 100 squares of `evaluate` (the hand-made evaluation), by the
# number of seats still playing: fitted by logistic regression (the offset fixed at the
# even share) on a training split of self-play positions, `standard` and `bga` weighing
# the same (tools/analysis_calibration.py; docs/analysis.md, "How far to trust it").
# Changing it changes EVALUATOR.
FALLBACK_SLOPE: Final[dict[int, float]] = {2: 0.964, 3: 0.321, 4: 0.151}
FALLBACK_VERSION: Final = "logistic-2"
# What produced a result, recorded with it: an analysis is reproducible only with the same
# network (its training iteration and weights' hash) and the same fallback.
EVALUATOR: Final = f"hard-{NETWORK}/{FALLBACK_VERSION}"
_DIGITS: Final = 6


class Chances(Leaf):
    """A seat's chance to place first where its turn has ended (the others to move next):
    the learned network under the rules it was trained on, else a logistic of the
    hand-made evaluation, centred on an even share (1 / seats still playing)."""

    def value(self, board: Board, pieces: list[list[int]], me: int, foes: Sequence[int]) -> float:
        hand = evaluate(board, pieces, me, foes)
        if learned_applies(board):
            return win_chance(pieces, me, hand)
        playing = len(foes) + 1
        if playing < 2:
            return 1.0
        slope = FALLBACK_SLOPE.get(playing, FALLBACK_SLOPE[4])
        y = math.log(1.0 / (playing - 1)) + slope * hand / 100.0
        return 1.0 / (1.0 + math.exp(-y))


CHANCES: Final = Chances()


# --------------------------------------------------------------------------- the valuation


def _r(x: float) -> float:
    return round(x, _DIGITS) + 0.0  # + 0.0: no "-0.0"


def _values(state: MatchState, moves: Sequence[Move]) -> list[float]:
    """The mover's chance after each move (a move that finishes the seat first: 1)."""
    return [1.0 if v == math.inf else v for v in score_moves(state, moves, leaf=CHANCES)]


def _stays(state: MatchState) -> float:
    board = state.board
    assert board is not None
    me = state.turn
    return CHANCES.value(board, state.pieces, me, opponents(board.players, me, state.finished))


def face_values(state: MatchState) -> list[float]:
    """For a seat about to roll: the value of the best play of each face 1..6."""
    return _face_plays(state)[0]


def _face_plays(state: MatchState) -> tuple[list[float], list[tuple[list[Move], list[float]]]]:
    """`face_values`, and each face's legal moves with their values (none for a face
    with no legal move or a third six): the rolled face's are the decision's options,
    valued once."""
    board = state.board
    assert board is not None
    faces: list[float] = []
    plays: list[tuple[list[Move], list[float]]] = []
    here: float | None = None
    for face in range(1, 7):
        moves: list[Move] = []
        values: list[float] = []
        if not third_six(board, state.sixes, face):
            after = apply(state.copy(), DieRolled(seat=state.turn, n=state.rolls_made, value=face))
            moves = list(current_legal_moves(after))
            if moves:
                values = _values(after, moves)
        plays.append((moves, values))
        if moves:
            faces.append(max(values))
        else:
            if here is None:
                here = _stays(state)
            faces.append(here)
    return faces, plays


def _chances(state: MatchState) -> list[float]:
    """Each seat's chance as the graph shows it (see `Point`)."""
    board = state.board
    assert board is not None
    raw = [
        0.0
        if s in state.finished
        else CHANCES.value(board, state.pieces, s, opponents(board.players, s, state.finished))
        for s in range(board.players)
    ]
    total = sum(raw)
    return [_r(c / total) if total > 0 else 0.0 for c in raw]


def _distinct(moves: Sequence[Move]) -> bool:
    return len({(m.frm, m.to) for m in moves}) >= 2


class _Seat:
    """A seat's running sums while the events are folded."""

    def __init__(self) -> None:
        self.rolls = 0
        self.luck = 0.0
        self.error = 0.0
        self.choices = 0
        self.own_error = 0.0
        self.best = 0
        self.others = 0.0
        self.lookahead = 0.0
        self.start: float | None = None
        self.last: float | None = None  # its value after its latest move or pass
        self.same_turn = False  # it rolls again before any other seat's turn


class _Turn:
    """The turn being played, for the swings: where it began, its dice and captures."""

    def __init__(self, version: int, seat: int) -> None:
        self.version = version
        self.seat = seat
        self.dice: list[int] = []
        self.captured: list[int] = []


def analyse(events: Sequence[Event]) -> Analysis:
    """The analysis of a match's events (any prefix of a valid stream)."""
    analyser = Analyser()
    analyser.feed(events)
    return analyser.result()


class Analyser:
    """`analyse`, one stretch of events at a time: `feed` folds the next events of a match
    (in order, from its first), `result()` is `analyse` of all the events fed so far, the
    same bytes once encoded. The analysis consumer feeds a match's events as it is played,
    so that only its last turns remain to analyse when it ends (docs/analysis.md)."""

    def __init__(self) -> None:
        self.state = MatchState()
        self.seats: list[_Seat] = []
        self.rolls: list[Roll] = []
        self.decisions: list[Decision] = []
        self.points: list[Point] = []
        self.swings: list[list[tuple[float, Swing]]] = []
        self.pending: tuple[int, list[Move], list[float]] | None = None  # the last roll's options
        self.turn: _Turn | None = None
        self.until = -1
        self.fed = 0  # events fed so far (those after the first place is decided included)
        self.done = False  # the first place is decided: the events after it change nothing

    def feed(self, events: Sequence[Event]) -> None:
        """Folds the match's next events (the first of them is event number `fed`)."""
        for event in events:
            version = self.fed
            self.fed += 1
            if not self.done:
                self._step(version, event)

    def _step(self, version: int, event: Event) -> None:
        state = self.state
        self.until = version
        if isinstance(event, DieRolled):
            me = event.seat
            faces, plays = _face_plays(state)
            before = sum(faces) / 6.0
            luck = faces[event.value - 1] - before
            seat = self.seats[me]
            if seat.start is None:
                seat.start = before
            elif seat.last is not None:
                gap = before - seat.last
                if seat.same_turn:
                    seat.lookahead += gap
                else:
                    seat.others += gap
            seat.same_turn = True
            seat.rolls += 1
            seat.luck += luck
            self.rolls.append(
                Roll(
                    version=version,
                    seat=me,
                    die=event.value,
                    before=_r(before),
                    luck=_r(luck),
                    faces=[_r(f) for f in faces],
                )
            )
            if self.turn is not None:
                self.turn.dice.append(event.value)
            apply(state, event)
            moves, values = plays[event.value - 1]
            self.pending = (me, moves, values) if moves else None
            # the rolled face's best play, until the move played (if any) replaces it: a
            # prefix cut before the move still sums
            seat.last = faces[event.value - 1]
            return
        if isinstance(event, PieceMoved) and event.die is not None and self.pending is not None:
            me, moves, values = self.pending
            self.pending = None
            seat = self.seats[me]
            played = next(i for i, m in enumerate(moves) if m.piece == event.piece)
            best = max(range(len(values)), key=lambda i: (values[i], -i))
            error = max(0.0, values[best] - values[played])
            if values[best] - values[played] < 1e-12:
                error = 0.0
            seat.last = values[played]
            seat.error += error
            if _distinct(moves):
                by = state.controller(me)
                if by == ("cpu" if state.seats[me].cpu is not None else "player"):
                    seat.choices += 1
                    seat.own_error += error
                    # As stored: a choice shown with error 0 (to 6 decimals) is a best one.
                    seat.best += _r(error) == 0.0
                self.decisions.append(
                    Decision(
                        version=version,
                        seat=me,
                        by=by,
                        die=event.die,
                        options=[
                            Option(m.piece, m.frm, m.to, _r(v))
                            for m, v in zip(moves, values, strict=True)
                        ],
                        played=played,
                        best=best,
                        error=_r(error),
                    )
                )
            if self.turn is not None:
                self.turn.captured.extend(s for s, _ in event.captures)
            apply(state, event)
            return
        if isinstance(event, PieceMoved) and self.turn is not None:
            self.turn.captured.extend(s for s, _ in event.captures)
        apply(state, event)
        if isinstance(event, MatchCreated):
            assert state.board is not None
            self.seats = [_Seat() for _ in range(state.board.players)]
            self.swings = [[] for _ in range(state.board.players)]
        elif isinstance(event, TurnEnded):
            for other in self.seats:
                other.same_turn = False
            _point(state, self.points, version, self.turn, self.swings)
            self.turn = _Turn(version + 1, event.next_seat)
        elif isinstance(event, PlayerFinished | MatchFinished):
            self._decided(_outcome(state, event))
            return
        if self.turn is None and state.status == "playing":
            self.turn = _Turn(version + 1, state.turn)
            if not self.points:
                self.points.append(Point(version, _chances(state)))

    def _decided(self, outcome: list[float]) -> None:
        """The first place is decided: the last point, the last turn's swing, and each
        seat's way from its last value to the result."""
        self.done = True
        self.points.append(Point(self.until, [_r(o) for o in outcome]))
        _swing(self.points, self.turn, self.swings, self.until)
        for s, seat in enumerate(self.seats):
            if seat.last is not None:
                seat.others += outcome[s] - seat.last
                seat.last = outcome[s]

    def result(self) -> Analysis:
        """The analysis of the events fed so far (copies: feeding on changes it not)."""
        return Analysis(
            evaluator=EVALUATOR,
            players=len(self.seats),
            until=self.until,
            seats=[_summary(s, seat, self.swings[s]) for s, seat in enumerate(self.seats)],
            points=list(self.points),
            rolls=list(self.rolls),
            decisions=list(self.decisions),
        )


def _outcome(state: MatchState, event: PlayerFinished | MatchFinished) -> list[float]:
    """Each seat's share of the first place, now that it is decided."""
    players = len(state.pieces)
    if isinstance(event, PlayerFinished):
        return [1.0 if s == event.seat else 0.0 for s in range(players)]
    firsts = [s for s, place in enumerate(event.placements) if place == 1]
    return [1.0 / len(firsts) if s in firsts else 0.0 for s in range(players)]


def _point(
    state: MatchState,
    points: list[Point],
    version: int,
    turn: _Turn | None,
    swings: list[list[tuple[float, Swing]]],
) -> None:
    points.append(Point(version, _chances(state)))
    _swing(points, turn, swings, version)


def _swing(
    points: list[Point], turn: _Turn | None, swings: list[list[tuple[float, Swing]]], until: int
) -> None:
    """Keeps, per seat, the three turns that moved its chance most."""
    if turn is None or len(points) < 2:
        return
    before, after = points[-2].chances, points[-1].chances
    for s, kept in enumerate(swings):
        change = after[s] - before[s]
        if change == 0.0:
            continue
        kept.append(
            (
                abs(change),
                Swing(
                    version=turn.version,
                    until=until,
                    by=turn.seat,
                    dice=list(turn.dice),
                    captured=sorted(set(turn.captured)),
                    change=_r(change),
                ),
            )
        )
        kept.sort(key=lambda k: (-k[0], k[1].version))
        del kept[3:]


def _summary(s: int, seat: _Seat, kept: list[tuple[float, Swing]]) -> SeatAnalysis:
    start = seat.start if seat.start is not None else 0.0
    end = seat.last if seat.last is not None else start
    return SeatAnalysis(
        seat=s,
        rolls=seat.rolls,
        luck=_r(seat.luck),
        error=_r(seat.error),
        choices=seat.choices,
        own_error=_r(seat.own_error),
        best_choices=seat.best,
        error_rate=_r(seat.own_error / seat.choices) if seat.choices else 0.0,
        best_share=_r(seat.best / seat.choices) if seat.choices else 0.0,
        others=_r(seat.others),
        lookahead=_r(seat.lookahead),
        start=_r(start),
        end=_r(end),
        swings=[k[1] for k in kept],
    )
