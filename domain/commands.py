"""Commands: what someone asks a match to do. `decide` turns them into events or a rejection.

Who acts (docs/design.md#timers-presence-and-cpu-stand-ins): a seat's turn is played by its player,
or by a CPU when the seat is a CPU's, a stand-in's, or a turn that timed out
(`MatchState.controller`). `Roll` and `MovePiece` say which of the two sends them (`by`), and
`decide` refuses either on a seat the other controls. The other commands have one actor each:
`TimeOut` and `StandIn` are the scheduler's (a deadline, the grace period), `LeaveSeat` and
`Reclaim` the player's.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.cannot_move import CannotMove
from domain.events import MatchTable, SeatSpec, StandInReason
from domain.rules import Ruleset

__all__ = [
    "Actor",
    "Command",
    "Concede",
    "CreateMatch",
    "LeaveSeat",
    "MovePiece",
    "Reclaim",
    "Rejection",
    "RejectionCode",
    "RevealSeed",
    "Roll",
    "StandIn",
    "StartMatch",
    "TimeOut",
]


# Who sends a roll or a move: the seat's player, or the CPU playing the seat.
Actor = Literal["player", "cpu"]


class CreateMatch(msgspec.Struct, frozen=True, kw_only=True):
    """Create the match: seats (2-4), the ruleset, the dice commitment, the first seat."""

    ruleset: Ruleset
    seats: tuple[SeatSpec, ...]
    seed_hash: str
    first_seat: int = 0
    # The table's settings when a party opens the match; None: no table (self-play).
    table: MatchTable | None = None


class StartMatch(msgspec.Struct, frozen=True, kw_only=True):
    """Start play; `client_seeds` has one (possibly empty) seed per seat, in seat order."""

    client_seeds: tuple[str, ...]


class Roll(msgspec.Struct, frozen=True, kw_only=True):
    """Roll for `seat`. `die` comes from `domain.dice.die_for_roll(seed, client_seed,
    state.rolls_made)`; it is None only when `needs_die(state)` is False (auto_enter).

    `by`: who rolls, refused on a seat it does not control (see the module docstring);
    None when nobody is judged: a replay or a simulation deciding recorded or its own play.
    """

    seat: int
    die: int | None = None
    by: Actor | None = None


class MovePiece(msgspec.Struct, frozen=True, kw_only=True):
    """Move `piece` (0-3) of `seat` by the die just rolled; `by` as for `Roll`."""

    seat: int
    piece: int
    by: Actor | None = None


class TimeOut(msgspec.Struct, frozen=True, kw_only=True):
    """The turn deadline of `seat` expired."""

    seat: int


class StandIn(msgspec.Struct, frozen=True, kw_only=True):
    """A CPU starts playing for `seat` (its player is gone or keeps timing out)."""

    seat: int
    reason: StandInReason


class LeaveSeat(msgspec.Struct, frozen=True, kw_only=True):
    """The seat's player left the match; a CPU stands in until they come back."""

    seat: int


class Reclaim(msgspec.Struct, frozen=True, kw_only=True):
    """The seat's player is back and takes the seat over from the stand-in.

    `returning`: the player's connection came back, not a request. That ends only a
    stand-in for a disconnection; one the player chose (`left`) or earned (`timeouts`)
    stays until they ask.
    """

    seat: int
    returning: bool = False


class Concede(msgspec.Struct, frozen=True, kw_only=True):
    """The seat's player gives the match up: it ends at once, the seat placed last.

    Only in a casual match where every other seat still playing is a CPU's
    (docs/rules-decisions.md). `ranked`: whether the match counts for ratings, which its
    events do not say: the service tells it from the match's table settings. None when
    nobody is judged (a replay re-deciding recorded play, as `by` of `Roll`).
    """

    seat: int
    ranked: bool | None = None


class RevealSeed(msgspec.Struct, frozen=True, kw_only=True):
    """Publish the server seed (hex) once the match is over."""

    server_seed: str


Command = (
    CreateMatch
    | StartMatch
    | Roll
    | MovePiece
    | TimeOut
    | StandIn
    | LeaveSeat
    | Reclaim
    | Concede
    | RevealSeed
)

RejectionCode = Literal[
    "bad_command",
    "bad_ruleset",
    "bad_seed",
    "not_created",
    "already_created",
    "already_started",
    "not_started",
    "match_finished",
    "not_finished",
    "unknown_seat",
    "not_your_turn",
    "stood_in",
    "cpu_playing",
    "player_plays",
    "roll_first",
    "move_first",
    "bad_die",
    "illegal_move",
    "already_stood_in",
    "not_stood_in",
    "stand_in_kept",
    "already_revealed",
    "ranked_match",
    "not_against_cpus",
    "seat_finished",
]


class Rejection(msgspec.Struct, frozen=True):
    """Why a command was refused; nothing is appended. `code` is stable, `reason` readable;
    `why`, for `illegal_move`, the rule that stops the piece as facts (for a client to
    word in its own language; `reason` words them in English)."""

    code: RejectionCode
    reason: str
    why: CannotMove | None = None
