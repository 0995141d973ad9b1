"""The party (lobby table) as a Decider: seats, settings, start and rematch
(docs/design.md#streams-and-deciders).

A party is its own stream (`party-<uuid>`). Like the match decider, `decide(command, state)`
returns events or a `PartyRejection`, and `apply` only records facts. The party never sees
dice or seeds: starting a match is `MatchOpened` here plus the match's own stream, which the
service writes in the same transaction.

Seats hold a guest (`player_id`, `name`, `client_seed`) or a CPU (`cpu` level). The host
takes seat 0 at creation and is the only one who seats CPUs, changes settings and starts.
If the host leaves an open party, the next seated guest becomes host; the party closes when
no guest is left. Rematch is open to any guest seated at the table once the current match
has finished; with `rotate_first` the first seat moves one seat on
(docs/rules.md#the-next-match-rotate_first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import msgspec

from domain.dice import ClientSeedError, check_client_seed
from domain.events import CpuLevel, SeatSpec
from domain.rules import RulesetError, options_to_dict, parse_settings
from domain.settings import CPU_SPEEDS, MAX_SEATS, MIN_SEATS, TURN_LIMITS, CpuSpeed, one_of

__all__ = [
    "CPU_SPEEDS",
    "MAX_SEATS",
    "MIN_SEATS",
    "PARTY_EVENT_TYPES",
    "TURN_LIMITS",
    "AddCpu",
    "ChangeSettings",
    "CpuSeated",
    "CpuSpeed",
    "CreateParty",
    "HostChanged",
    "JoinParty",
    "LeaveParty",
    "MatchOpened",
    "PartyClosed",
    "PartyCommand",
    "PartyCreated",
    "PartyEvent",
    "PartyRejection",
    "PartyState",
    "Rematch",
    "RemoveCpu",
    "Seat",
    "SeatFreed",
    "SeatTaken",
    "SettingsChanged",
    "StartParty",
    "apply",
    "decide",
    "decode_party_event",
    "fold",
    "seat_specs",
]

NAME_MAX = 32

PartyStatus = Literal["new", "open", "playing", "closed"]

# ---------------------------------------------------------------------------------- events


class _PartyEvent(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    schema_version: ClassVar[int] = 1


class PartyCreated(_PartyEvent, frozen=True):
    """A table exists: its host, seat count and settings (`ruleset`: every option spelled
    out; no revision, which each match pins as it is created)."""

    host_id: str
    seats: int
    ruleset: dict[str, Any]
    turn_limit: int | None
    ranked: bool
    # The arena tournament whose pairing opened this table (docs/arenas.md); None for every
    # other party, and for every event written before arenas existed.
    arena_id: str | None = None
    # The CPUs' speed; events written before it existed decode as "normal".
    cpu_speed: CpuSpeed = "normal"


class SeatTaken(_PartyEvent, frozen=True):
    """A guest sat down; `client_seed` is their contribution to the dice (may be empty)."""

    seat: int
    player_id: str
    name: str
    client_seed: str = ""


class SeatFreed(_PartyEvent, frozen=True):
    """A seat became empty (its guest left, or the host removed a CPU)."""

    seat: int


class CpuSeated(_PartyEvent, frozen=True):
    """The host put a CPU of `level` in the seat."""

    seat: int
    level: CpuLevel


class HostChanged(_PartyEvent, frozen=True):
    """The host left; `host_id` is the new host."""

    host_id: str


class PartyClosed(_PartyEvent, frozen=True):
    """No guest is left at the table."""


class SettingsChanged(_PartyEvent, frozen=True):
    """The host changed the settings (every field is the new value). `stamps`: whether the
    table's players may send quick-chat stamps (`domain.stamps`); events stored before it
    existed decode with stamps on. `cpu_speed`: likewise "normal" for older events."""

    ruleset: dict[str, Any]
    turn_limit: int | None
    ranked: bool
    stamps: bool = True
    cpu_speed: CpuSpeed = "normal"


class MatchOpened(_PartyEvent, frozen=True):
    """Game number `game` of this party started as match `match_id`, `first_seat` first,
    with the table's settings of that moment (`cpu_speed` "normal" in older events)."""

    match_id: str
    first_seat: int
    game: int
    ranked: bool
    turn_limit: int | None
    cpu_speed: CpuSpeed = "normal"


PartyEvent = (
    PartyCreated
    | SeatTaken
    | SeatFreed
    | CpuSeated
    | HostChanged
    | PartyClosed
    | SettingsChanged
    | MatchOpened
)

PARTY_EVENT_TYPES: dict[str, type[_PartyEvent]] = {
    cls.__name__: cls
    for cls in (
        PartyCreated,
        SeatTaken,
        SeatFreed,
        CpuSeated,
        HostChanged,
        PartyClosed,
        SettingsChanged,
        MatchOpened,
    )
}

_decoder: msgspec.json.Decoder[PartyEvent] = msgspec.json.Decoder(PartyEvent)


def decode_party_event(data: bytes) -> PartyEvent:
    """Decode a stored party event (all are at schema version 1)."""
    return _decoder.decode(data)


# -------------------------------------------------------------------------------- commands


class CreateParty(msgspec.Struct, frozen=True, kw_only=True):
    """Open a table; the host sits in seat 0. `ruleset` is `{"preset", **overrides}`."""

    host_id: str
    host_name: str
    seats: int
    ruleset: dict[str, Any] | None = None
    turn_limit: int | None = None
    ranked: bool = False
    client_seed: str = ""
    arena_id: str | None = None
    cpu_speed: CpuSpeed = "normal"


class JoinParty(msgspec.Struct, frozen=True, kw_only=True):
    """Sit down: in `seat`, or the first free one when None."""

    player_id: str
    name: str
    seat: int | None = None
    client_seed: str = ""


class LeaveParty(msgspec.Struct, frozen=True, kw_only=True):
    """Leave the table (before the match starts)."""

    player_id: str


class AddCpu(msgspec.Struct, frozen=True, kw_only=True):
    """The host seats a CPU: in `seat`, or the first free one when None."""

    player_id: str
    level: CpuLevel
    seat: int | None = None


class RemoveCpu(msgspec.Struct, frozen=True, kw_only=True):
    """The host removes the CPU from `seat`."""

    player_id: str
    seat: int


class ChangeSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The host changes the settings; None keeps a field as it is (`turn_limit`: use 0 for none).
    `stamps` and `cpu_speed` may change while the table plays (the host switches stamps off
    or the CPUs to fast mid-match); the others only before the start."""

    player_id: str
    ruleset: dict[str, Any] | None = None
    turn_limit: int | None = None
    ranked: bool | None = None
    stamps: bool | None = None
    cpu_speed: CpuSpeed | None = None


class StartParty(msgspec.Struct, frozen=True, kw_only=True):
    """The host starts match `match_id` (every seat must be filled)."""

    player_id: str
    match_id: str


class Rematch(msgspec.Struct, frozen=True, kw_only=True):
    """A seated guest starts the next match; `current_finished` is told by the service."""

    player_id: str
    match_id: str
    current_finished: bool


PartyCommand = (
    CreateParty
    | JoinParty
    | LeaveParty
    | AddCpu
    | RemoveCpu
    | ChangeSettings
    | StartParty
    | Rematch
)

PartyRejectionCode = Literal[
    "bad_command",
    "bad_ruleset",
    "bad_seed",
    "bad_seat",
    "already_created",
    "not_found",
    "not_open",
    "not_host",
    "not_seated",
    "already_seated",
    "seat_taken",
    "party_full",
    "seats_empty",
    "not_a_cpu",
    "match_running",
    "not_started",
    "arena_table",
]


class PartyRejection(msgspec.Struct, frozen=True):
    """Why a party command was refused; `field` names the bad input when there is one."""

    code: PartyRejectionCode
    reason: str
    field: str | None = None


# ----------------------------------------------------------------------------------- state


class Seat(msgspec.Struct, frozen=True, kw_only=True):
    """Who sits in a seat of the party."""

    player_id: str | None = None
    name: str
    client_seed: str = ""
    cpu: CpuLevel | None = None


class PartyState:
    """A party folded from its events."""

    __slots__ = (
        "arena_id",
        "cpu_speed",
        "first_seat",
        "game",
        "host_id",
        "match_id",
        "ranked",
        "ruleset",
        "seats",
        "stamps",
        "status",
        "turn_limit",
        "version",
    )

    def __init__(self) -> None:
        self.status: PartyStatus = "new"
        self.version = 0
        self.host_id = ""
        self.seats: list[Seat | None] = []
        self.ruleset: dict[str, Any] = {}
        self.turn_limit: int | None = None
        self.ranked = False
        self.stamps = True  # quick-chat stamps on (the host may switch them off)
        self.cpu_speed: CpuSpeed = "normal"
        self.arena_id: str | None = None  # an arena's table: no rematch
        self.match_id: str | None = None
        self.first_seat = 0
        self.game = 0

    def seat_of(self, player_id: str) -> int | None:
        """The seat `player_id` sits in, or None."""
        for i, seat in enumerate(self.seats):
            if seat is not None and seat.player_id == player_id:
                return i
        return None

    def guests(self) -> list[str]:
        """The player ids seated, in seat order."""
        return [s.player_id for s in self.seats if s is not None and s.player_id is not None]


def seat_specs(state: PartyState) -> tuple[SeatSpec, ...]:
    """The seats as the match records them (every seat must be filled)."""
    specs = []
    for seat in state.seats:
        assert seat is not None
        specs.append(SeatSpec(name=seat.name, player_id=seat.player_id, cpu=seat.cpu))
    return tuple(specs)


def _cpu_name(level: CpuLevel, seat: int) -> str:
    return f"CPU {seat + 1} ({level})"


# ----------------------------------------------------------------------------------- apply


def _apply_created(state: PartyState, e: PartyCreated) -> None:
    state.status = "open"
    state.host_id = e.host_id
    state.seats = [None] * e.seats
    state.ruleset = e.ruleset
    state.turn_limit = e.turn_limit
    state.ranked = e.ranked
    state.arena_id = e.arena_id
    state.cpu_speed = e.cpu_speed


def _apply_taken(state: PartyState, e: SeatTaken) -> None:
    state.seats[e.seat] = Seat(player_id=e.player_id, name=e.name, client_seed=e.client_seed)


def _apply_freed(state: PartyState, e: SeatFreed) -> None:
    state.seats[e.seat] = None


def _apply_cpu(state: PartyState, e: CpuSeated) -> None:
    state.seats[e.seat] = Seat(name=_cpu_name(e.level, e.seat), cpu=e.level)


def _apply_host(state: PartyState, e: HostChanged) -> None:
    state.host_id = e.host_id


def _apply_closed(state: PartyState, e: PartyClosed) -> None:
    state.status = "closed"


def _apply_settings(state: PartyState, e: SettingsChanged) -> None:
    state.ruleset = e.ruleset
    state.turn_limit = e.turn_limit
    state.ranked = e.ranked
    state.stamps = e.stamps
    state.cpu_speed = e.cpu_speed


def _apply_opened(state: PartyState, e: MatchOpened) -> None:
    state.status = "playing"
    state.match_id = e.match_id
    state.first_seat = e.first_seat
    state.game = e.game


_APPLY: dict[type, Callable[[PartyState, Any], None]] = {
    PartyCreated: _apply_created,
    SeatTaken: _apply_taken,
    SeatFreed: _apply_freed,
    CpuSeated: _apply_cpu,
    HostChanged: _apply_host,
    PartyClosed: _apply_closed,
    SettingsChanged: _apply_settings,
    MatchOpened: _apply_opened,
}


def apply(state: PartyState, event: PartyEvent) -> PartyState:
    """Apply one event to `state` in place and return it."""
    _APPLY[type(event)](state, event)
    state.version += 1
    return state


def fold(events: list[PartyEvent], state: PartyState | None = None) -> PartyState:
    """Fold events into a party state."""
    current = PartyState() if state is None else state
    for event in events:
        apply(current, event)
    return current


# ---------------------------------------------------------------------------------- decide


def _check_name(name: str) -> PartyRejection | None:
    if not 1 <= len(name) <= NAME_MAX or not name.isprintable():
        return PartyRejection("bad_command", f"name must be 1-{NAME_MAX} printable characters")
    return None


def _check_seed(seed: str) -> PartyRejection | None:
    try:
        check_client_seed(seed)
    except ClientSeedError as error:
        return PartyRejection("bad_seed", str(error), "client_seed")
    return None


def _check_limit(limit: int | None) -> PartyRejection | None:
    if limit not in TURN_LIMITS:
        return PartyRejection(
            "bad_command",
            f"turn_limit must be {one_of(TURN_LIMITS)} seconds, got {limit}",
            "turn_limit",
        )
    return None


def _check_speed(speed: str | None) -> PartyRejection | None:
    # The request's schema allows only these; a command built in code is checked here.
    if speed is not None and speed not in CPU_SPEEDS:
        return PartyRejection(
            "bad_command", f"cpu_speed must be {one_of(CPU_SPEEDS)}, got {speed!r}", "cpu_speed"
        )
    return None


def _ruleset(spec: dict[str, Any] | None) -> dict[str, Any] | PartyRejection:
    # The options alone: the revision is the match's to pin when it is created, so a table
    # opened today plays its rematches under whatever revision is current then.
    try:
        return options_to_dict(parse_settings(spec))
    except RulesetError as error:
        return PartyRejection("bad_ruleset", str(error), f"ruleset.{error.field}")


def _free_seat(state: PartyState, seat: int | None) -> int | PartyRejection:
    if seat is None:
        for i, taken in enumerate(state.seats):
            if taken is None:
                return i
        return PartyRejection("party_full", "every seat is taken")
    if not 0 <= seat < len(state.seats):
        return PartyRejection("bad_seat", f"seat must be 0-{len(state.seats) - 1}", "seat")
    if state.seats[seat] is not None:
        return PartyRejection("seat_taken", f"seat {seat} is taken", "seat")
    return seat


def _open(state: PartyState) -> PartyRejection | None:
    if state.status == "new":
        return PartyRejection("not_found", "no such party")
    if state.status != "open":
        return PartyRejection("not_open", f"the party is {state.status}, not open")
    return None


def _host(state: PartyState, player_id: str) -> PartyRejection | None:
    # Who may act is asked before what state the party is in, so a stranger gets the same
    # answer (403) whether the table is open or already playing.
    if state.status == "new":
        return PartyRejection("not_found", "no such party")
    if player_id != state.host_id:
        return PartyRejection("not_host", "only the host may do this")
    return _open(state)


def _decide_create(c: CreateParty, state: PartyState) -> list[PartyEvent] | PartyRejection:
    if state.status != "new":
        return PartyRejection("already_created", "the party already exists")
    if not MIN_SEATS <= c.seats <= MAX_SEATS:
        return PartyRejection("bad_command", f"seats must be {MIN_SEATS}-{MAX_SEATS}", "seats")
    bad = (
        _check_name(c.host_name)
        or _check_seed(c.client_seed)
        or _check_limit(c.turn_limit)
        or _check_speed(c.cpu_speed)
    )
    if bad is not None:
        return bad
    ruleset = _ruleset(c.ruleset)
    if isinstance(ruleset, PartyRejection):
        return ruleset
    return [
        PartyCreated(
            host_id=c.host_id,
            seats=c.seats,
            ruleset=ruleset,
            turn_limit=c.turn_limit,
            ranked=c.ranked,
            arena_id=c.arena_id,
            cpu_speed=c.cpu_speed,
        ),
        SeatTaken(seat=0, player_id=c.host_id, name=c.host_name, client_seed=c.client_seed),
    ]


def _decide_join(c: JoinParty, state: PartyState) -> list[PartyEvent] | PartyRejection:
    bad = _open(state) or _check_name(c.name) or _check_seed(c.client_seed)
    if bad is not None:
        return bad
    if state.seat_of(c.player_id) is not None:
        return PartyRejection("already_seated", "you already sit at this table")
    seat = _free_seat(state, c.seat)
    if isinstance(seat, PartyRejection):
        return seat
    return [SeatTaken(seat=seat, player_id=c.player_id, name=c.name, client_seed=c.client_seed)]


def _decide_leave(c: LeaveParty, state: PartyState) -> list[PartyEvent] | PartyRejection:
    if state.status == "new":
        return PartyRejection("not_found", "no such party")
    seat = state.seat_of(c.player_id)
    if seat is None:  # before the state check, as in `_host`
        return PartyRejection("not_seated", "you do not sit at this table")
    bad = _open(state)
    if bad is not None:
        return bad
    events: list[PartyEvent] = [SeatFreed(seat=seat)]
    others = [p for p in state.guests() if p != c.player_id]
    if not others:
        events.append(PartyClosed())
    elif c.player_id == state.host_id:
        events.append(HostChanged(host_id=others[0]))
    return events


def _decide_add_cpu(c: AddCpu, state: PartyState) -> list[PartyEvent] | PartyRejection:
    bad = _host(state, c.player_id)
    if bad is not None:
        return bad
    seat = _free_seat(state, c.seat)
    if isinstance(seat, PartyRejection):
        return seat
    return [CpuSeated(seat=seat, level=c.level)]


def _decide_remove_cpu(c: RemoveCpu, state: PartyState) -> list[PartyEvent] | PartyRejection:
    bad = _host(state, c.player_id)
    if bad is not None:
        return bad
    if not 0 <= c.seat < len(state.seats):
        return PartyRejection("bad_seat", f"seat must be 0-{len(state.seats) - 1}", "seat")
    seat = state.seats[c.seat]
    if seat is None or seat.cpu is None:
        return PartyRejection("not_a_cpu", f"no CPU sits in seat {c.seat}", "seat")
    return [SeatFreed(seat=c.seat)]


def _decide_settings(c: ChangeSettings, state: PartyState) -> list[PartyEvent] | PartyRejection:
    live_only = c.ruleset is None and c.turn_limit is None and c.ranked is None
    live = c.stamps is not None or c.cpu_speed is not None
    if live_only and live and state.status == "playing":
        # Stamps and the CPUs' speed are the settings a playing table may change (its
        # host, as ever): the speed holds from the CPU's next action on.
        if c.player_id != state.host_id:
            return PartyRejection("not_host", "only the host may do this")
        bad = _check_speed(c.cpu_speed)
        if bad is not None:
            return bad
        return [
            SettingsChanged(
                ruleset=state.ruleset,
                turn_limit=state.turn_limit,
                ranked=state.ranked,
                stamps=state.stamps if c.stamps is None else c.stamps,
                cpu_speed=state.cpu_speed if c.cpu_speed is None else c.cpu_speed,
            )
        ]
    bad = _host(state, c.player_id)
    if bad is not None:
        return bad
    ruleset = state.ruleset
    if c.ruleset is not None:
        parsed = _ruleset(c.ruleset)
        if isinstance(parsed, PartyRejection):
            return parsed
        ruleset = parsed
    limit = state.turn_limit if c.turn_limit is None else (c.turn_limit or None)
    bad = _check_limit(limit)
    if bad is not None:
        return bad
    bad = _check_speed(c.cpu_speed)
    if bad is not None:
        return bad
    ranked = state.ranked if c.ranked is None else c.ranked
    stamps = state.stamps if c.stamps is None else c.stamps
    speed = state.cpu_speed if c.cpu_speed is None else c.cpu_speed
    return [
        SettingsChanged(
            ruleset=ruleset, turn_limit=limit, ranked=ranked, stamps=stamps, cpu_speed=speed
        )
    ]


def _opened(state: PartyState, match_id: str, first_seat: int) -> MatchOpened:
    return MatchOpened(
        match_id=match_id,
        first_seat=first_seat,
        game=state.game + 1,
        ranked=state.ranked,
        turn_limit=state.turn_limit,
        cpu_speed=state.cpu_speed,
    )


def _decide_start(c: StartParty, state: PartyState) -> list[PartyEvent] | PartyRejection:
    bad = _host(state, c.player_id)
    if bad is not None:
        return bad
    empty = [i for i, s in enumerate(state.seats) if s is None]
    if empty:
        return PartyRejection("seats_empty", f"seat {empty[0]} is empty; fill it or add a CPU")
    return [_opened(state, c.match_id, 0)]


def _decide_rematch(c: Rematch, state: PartyState) -> list[PartyEvent] | PartyRejection:
    if state.status == "new":
        return PartyRejection("not_found", "no such party")
    if state.status != "playing":
        return PartyRejection("not_started", "the party has not played a match yet")
    if state.seat_of(c.player_id) is None:
        return PartyRejection("not_seated", "you do not sit at this table")
    if not c.current_finished:
        return PartyRejection("match_running", "the current match is not over yet")
    if state.arena_id is not None:
        return PartyRejection(
            "arena_table", "an arena's table plays once: the arena pairs your next match"
        )
    rotate = bool(state.ruleset.get("rotate_first", True))
    first = (state.first_seat + 1) % len(state.seats) if rotate else state.first_seat
    return [_opened(state, c.match_id, first)]


_DECIDE: dict[type, Callable[[Any, PartyState], list[PartyEvent] | PartyRejection]] = {
    CreateParty: _decide_create,
    JoinParty: _decide_join,
    LeaveParty: _decide_leave,
    AddCpu: _decide_add_cpu,
    RemoveCpu: _decide_remove_cpu,
    ChangeSettings: _decide_settings,
    StartParty: _decide_start,
    Rematch: _decide_rematch,
}


def decide(command: PartyCommand, state: PartyState) -> list[PartyEvent] | PartyRejection:
    """The events `command` causes in `state`, or why it is refused."""
    handler = _DECIDE.get(type(command))
    if handler is None:
        return PartyRejection("bad_command", f"unknown command {type(command).__name__}")
    return handler(command, state)
