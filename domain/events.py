"""Match events: the immutable facts a match stream is made of
(docs/design.md#events-and-their-versions).

Each event is a msgspec Struct in one tagged union (tag field `type`, tag = class name) and
carries a class-level `schema_version`. Stored rows are never rewritten: when an event's
shape changes, its version goes up and a pure upcaster in `UPCASTERS` turns the old stored
form into the new one on read (`decode_event`).

Events record decisions, not inputs to decisions: `PieceMoved.bonus` says how many rolls the
move earned and `RollPassed.retry` whether a `three_tries` roll follows, so `evolve` applies
facts and never re-judges rules. Seats are indices into `MatchCreated.seats`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import msgspec

from domain.settings import CpuLevel

__all__ = [
    "EVENT_TYPES",
    "UPCASTERS",
    "CpuLevel",
    "DieRolled",
    "Event",
    "MatchConceded",
    "MatchCreated",
    "MatchFinished",
    "MatchStarted",
    "MatchTable",
    "PieceMoved",
    "PlayerFinished",
    "RollPassed",
    "SeatReclaimed",
    "SeatSpec",
    "SeatStoodIn",
    "SeedRevealed",
    "StandInReason",
    "TurnEnded",
    "TurnTimedOut",
    "decode_event",
    "encode_event",
]

StandInReason = Literal["timeouts", "disconnected", "left"]


class SeatSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Who sits in a seat: a guest player (`player_id`) or a CPU (`cpu` level)."""

    name: str
    player_id: str | None = None
    cpu: CpuLevel | None = None


# gc=False (inherited by every event): an event holds only ints, strings, tuples, seat
# specs and (MatchCreated) a JSON dict, so it can never be part of a reference cycle.
# Untracked by the cycle collector it is cheaper to create and to free, and play creates
# a few per roll.
class _Event(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type", gc=False):
    schema_version: ClassVar[int] = 1


class MatchTable(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The table a match is played at, as it starts: its party, its turn limit in seconds
    (None: none), ranked or not, and the CPUs' speed (`domain.settings` says which values a
    new table may take; a stored event keeps any it was written with, so these are not
    narrowed to them)."""

    party_id: str
    turn_limit: int | None = None
    ranked: bool = False
    cpu_speed: str = "normal"


class MatchCreated(_Event, frozen=True):
    """The match exists: rules pinned in full, seats, the dice commitment, the first seat.

    Version 2: `ruleset` also pins the rules' `revision` (domain.rules.REVISIONS). A
    version-1 event was played under revision 1 and is read so (`_match_created_v1`).

    Version 3: `table`, the table's settings (`MatchTable`), for a match a party opens;
    absent (and left out of the bytes) for one played without a table (self-play, the
    CLI, the golden files), so such a match's bytes are those of version 2. A version-2
    event has no `table` (`_match_created_v2`): its settings are in the match's `matches`
    row only, where the services read them (docs/events.md, "The table's settings").
    """

    schema_version: ClassVar[int] = 3

    ruleset: dict[str, Any]
    seats: tuple[SeatSpec, ...]
    seed_hash: str
    first_seat: int = 0
    table: MatchTable | msgspec.UnsetType = msgspec.UNSET


class MatchStarted(_Event, frozen=True):
    """Play begins; the seats' client seeds are fixed and joined (docs/design.md#fair-dice)."""

    client_seeds: tuple[str, ...]
    client_seed: str


class DieRolled(_Event, frozen=True):
    """Roll number `n` of the match (counting every die) came up `value`."""

    seat: int
    n: int
    value: int


class PieceMoved(_Event, frozen=True):
    """A piece moved (`frm` -1: entered). `die` None: entered by `auto_enter` without a die.

    `bonus` is the number of extra rolls the move earned (six, capture, goal).
    """

    seat: int
    piece: int
    frm: int
    to: int
    captures: tuple[tuple[int, int], ...] = ()
    die: int | None = None
    bonus: int = 0


class RollPassed(_Event, frozen=True):
    """The roll was not played: no legal move, or the third six in a row.

    `retry`: the `three_tries` option grants another roll to a player with an empty course.
    """

    seat: int
    reason: Literal["no_legal_move", "three_sixes"]
    retry: bool = False


class TurnEnded(_Event, frozen=True):
    """The seat's turn is over; `next_seat` is to roll."""

    seat: int
    next_seat: int


class PlayerFinished(_Event, frozen=True):
    """All four pieces of the seat reached the goal; it takes `place`."""

    seat: int
    place: int


class MatchConceded(_Event, frozen=True):
    """The seat's player gave the match up: it ends at once (`MatchFinished` follows in the
    same command), the seat placed last. Only a casual match whose other seats still
    playing are CPUs' (docs/rules-decisions.md)."""

    seat: int


class MatchFinished(_Event, frozen=True):
    """The match is over. `placements[seat]` is that seat's place; equal places are draws."""

    placements: tuple[int, ...]


class TurnTimedOut(_Event, frozen=True):
    """The seat's turn deadline expired; the CPU plays the rest of this turn."""

    seat: int
    consecutive: int


class SeatStoodIn(_Event, frozen=True):
    """A CPU plays for the seat until the player comes back (`SeatReclaimed`)."""

    seat: int
    reason: StandInReason


class SeatReclaimed(_Event, frozen=True):
    """The seat's player is back (same token) and plays again."""

    seat: int


class SeedRevealed(_Event, frozen=True):
    """After the end, the server seed behind `seed_hash`, in hex, so anyone can check dice."""

    server_seed: str


Event = (
    MatchCreated
    | MatchStarted
    | DieRolled
    | PieceMoved
    | RollPassed
    | TurnEnded
    | PlayerFinished
    | MatchConceded
    | MatchFinished
    | TurnTimedOut
    | SeatStoodIn
    | SeatReclaimed
    | SeedRevealed
)

EVENT_TYPES: dict[str, type[_Event]] = {
    cls.__name__: cls
    for cls in (
        MatchCreated,
        MatchStarted,
        DieRolled,
        PieceMoved,
        RollPassed,
        TurnEnded,
        PlayerFinished,
        MatchConceded,
        MatchFinished,
        TurnTimedOut,
        SeatStoodIn,
        SeatReclaimed,
        SeedRevealed,
    )
}

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _match_created_v1(data: dict[str, Any]) -> dict[str, Any]:
    """MatchCreated v1 -> v2: every match recorded before rules revisions existed was played
    under revision 1, so its ruleset gets `revision: 1` (the stored bytes stay as they are)."""
    ruleset = data.get("ruleset")
    if not isinstance(ruleset, dict):
        return data  # not a MatchCreated of either version: decoding it names the fault
    if "revision" in ruleset:
        # No code ever wrote this: a v1 claiming a revision would verify under revision 1
        # while its header showed another.
        raise ValueError("MatchCreated v1 has no revision in its ruleset")
    return {**data, "ruleset": {**ruleset, "revision": 1}}


def _match_created_v2(data: dict[str, Any]) -> dict[str, Any]:
    """MatchCreated v2 -> v3: no `table`. A match stored before the event carried its
    table's settings has them in its `matches` row alone; the readers take them from there
    (the stored bytes stay as they are, and no default is made up here)."""
    if "table" in data:
        # No code ever wrote this: settings in a v2 would contradict its `matches` row.
        raise ValueError("MatchCreated v2 has no table")
    return data


# (type, stored version) -> pure function from that version's data to the next version's;
# see docs/events.md for how to add one.
UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("MatchCreated", 1): _match_created_v1,
    ("MatchCreated", 2): _match_created_v2,
}

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


def encode_event(event: Event) -> bytes:
    """Canonical JSON bytes of an event (these exact bytes are stored and hashed)."""
    return _encoder.encode(event)


def decode_event(
    data: bytes, *, type_name: str | None = None, schema_version: int | None = None
) -> Event:
    """Decode stored bytes, first upcasting from `schema_version` to the current version."""
    if type_name is None or schema_version is None:
        return _decoder.decode(data)
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise ValueError(f"unknown event type {type_name!r}")
    if schema_version == cls.schema_version:
        return _decoder.decode(data)
    if schema_version > cls.schema_version:
        raise ValueError(
            f"{type_name} v{schema_version} is newer than this code (v{cls.schema_version})"
        )
    raw = msgspec.json.decode(data)
    if not isinstance(raw, dict):
        raise ValueError(f"{type_name} v{schema_version} data is not a JSON object")
    for version in range(schema_version, cls.schema_version):
        upcast = UPCASTERS.get((type_name, version))
        if upcast is None:
            raise ValueError(f"no upcaster for {type_name} v{version}")
        raw = upcast(raw)
    event: Event = msgspec.convert(raw, Event)
    return event
