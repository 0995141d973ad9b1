"""A quick-play pool (クイック対戦 / Quick play) as a Decider: who waits, and which tables form.

There is one pool per kind of table (`PoolKind`: seats of `POOL_SEATS`, casual or ranked;
tables of the site's own rules with a turn limit of `POOL_TURN_LIMIT`, domain/settings.py)
and one stream per pool (`PoolKind.stream`).
Entering and leaving are a player's commands. `FormTables` is the pairing pass, which a
service may run on any instance: the append's expected version turns two passes at once into
a conflict, never into two seatings. It carries `now` (the domain has no clock) and the ids
for the parties it may open. `TableFormed` takes its players out of the pool in the same
event, so nobody is seated twice.

Pairing (`form_tables`) goes longest wait first:

- **ranked**: people only. Two players fit when each is inside the other's rating window,
  which starts at ±`WINDOW_START` and widens by `WINDOW_STEP` every `WINDOW_EVERY` seconds
  of waiting, up to ±`WINDOW_MAX` (`rating_window`). A table forms once `seats` players all
  fit one another; the closest ratings are taken first.
- **casual**: the first `seats` waiting form a table at once. Short of that, once a player
  who accepts CPUs has waited the time they chose (`cpu_after`: of `CPU_WAITS`), they sit
  with every other waiting player who accepts CPUs, and CPUs take the empty seats, at the level
  that matches the people's mean rating (`cpu_level_for`). "People only" (`cpu_after` None)
  waits for people.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, Literal

import msgspec

from domain.events import CpuLevel
from domain.settings import CPU_WAITS, POOL_SEATS, POOL_TURN_LIMIT, one_of
from domain.streams import pool_stream

__all__ = [
    "CPU_WAITS",
    "POOL_KINDS",
    "POOL_TURN_LIMIT",
    "WINDOW_EVERY",
    "WINDOW_MAX",
    "WINDOW_START",
    "WINDOW_STEP",
    "EnterPool",
    "FormTables",
    "LeavePool",
    "PoolCommand",
    "PoolEntered",
    "PoolEvent",
    "PoolKind",
    "PoolLeft",
    "PoolPlayer",
    "PoolRejection",
    "PoolState",
    "TableFormed",
    "Waiting",
    "apply",
    "cpu_level_for",
    "decide",
    "decode_pool_event",
    "fold",
    "form_tables",
    "rating_window",
    "waiting_of",
]


# The ranked rating window (display rating points either side of one's own).
WINDOW_START: Final = 50.0
WINDOW_STEP: Final = 50.0
WINDOW_EVERY: Final = 5.0  # seconds
WINDOW_MAX: Final = 400.0

# A CPU seated for people of this mean display rating and above plays at the next level.
_LEVEL_FROM: Final[tuple[tuple[float, CpuLevel], ...]] = ((1650.0, "hard"), (1400.0, "normal"))


class PoolKind(msgspec.Struct, frozen=True):
    """Which tables a pool forms: `seats` (of `POOL_SEATS`) and whether they are ranked."""

    seats: int
    ranked: bool

    @property
    def name(self) -> str:
        """The pool's name in the API: `2-casual`, `4-ranked`, ..."""
        return f"{self.seats}-{'ranked' if self.ranked else 'casual'}"

    @property
    def stream(self) -> str:
        """The pool's stream id: `pool-2-ranked`, `pool-4-casual`, ..."""
        return pool_stream(self.seats, self.ranked)


POOL_KINDS: Final = tuple(
    PoolKind(seats, ranked) for seats in POOL_SEATS for ranked in (False, True)
)

# ---------------------------------------------------------------------------------- events


class _PoolEvent(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    schema_version: ClassVar[int] = 1


class PoolEntered(_PoolEvent, frozen=True):
    """A player waits, from `entered_at` (the service's clock, in seconds), at `rating`
    (the display rating; a new player's is the starting one); `cpu_after`: casual only,
    the seconds they accept to wait before CPUs fill the table (None: people only)."""

    player_id: str
    name: str
    rating: float
    entered_at: float
    cpu_after: int | None = None
    client_seed: str = ""


class PoolLeft(_PoolEvent, frozen=True):
    """A player stopped waiting: they asked (`left`), or their connection was gone past
    its grace (`gone`): nobody is seated at a table they cannot see."""

    player_id: str
    reason: Literal["left", "gone"] = "left"


class PoolPlayer(msgspec.Struct, frozen=True):
    """A player seated by the pool, under the name and client seed they entered with."""

    player_id: str
    name: str
    client_seed: str = ""


class TableFormed(_PoolEvent, frozen=True):
    """A table for `players` (longest wait first, in seat order), opened as party
    `party_id` playing match `match_id`; `cpus` CPUs of `cpu_level` take the other seats
    (casual pools only)."""

    party_id: str
    match_id: str
    players: tuple[PoolPlayer, ...]
    cpus: int = 0
    cpu_level: CpuLevel | None = None


PoolEvent = PoolEntered | PoolLeft | TableFormed

_decoder: msgspec.json.Decoder[PoolEvent] = msgspec.json.Decoder(PoolEvent)


def decode_pool_event(data: bytes) -> PoolEvent:
    """Decode a stored pool event (all are at schema version 1)."""
    return _decoder.decode(data)


# -------------------------------------------------------------------------------- commands


class EnterPool(msgspec.Struct, frozen=True, kw_only=True):
    """Wait in the pool from `now` (seconds, the service's clock)."""

    player_id: str
    name: str
    rating: float
    now: float
    cpu_after: int | None = None
    client_seed: str = ""


class LeavePool(msgspec.Struct, frozen=True, kw_only=True):
    """Stop waiting (`gone`: the player's connection did not come back in time)."""

    player_id: str
    gone: bool = False


class FormTables(msgspec.Struct, frozen=True, kw_only=True):
    """The pairing pass at `now`; `table_ids` are fresh (party id, match id) pairs for the
    tables it opens, used in order (as many as there are players waiting is always
    enough). Players in `absent` (their connection is away, within its grace) stay in the
    pool but are not seated: nobody is seated at a table they cannot see."""

    now: float
    table_ids: tuple[tuple[str, str], ...]
    absent: frozenset[str] = frozenset()


PoolCommand = EnterPool | LeavePool | FormTables


class PoolRejection(msgspec.Struct, frozen=True):
    """Why a pool command was refused (nothing is appended)."""

    code: str
    reason: str
    field: str | None = None


# ----------------------------------------------------------------------------------- state


class Waiting(msgspec.Struct, frozen=True):
    """One player in the pool."""

    player_id: str
    name: str
    rating: float
    entered_at: float
    cpu_after: int | None
    client_seed: str = ""


class PoolState:
    """The players waiting, in the order they entered, and the stream's version."""

    __slots__ = ("kind", "version", "waiting")

    def __init__(self, kind: PoolKind) -> None:
        self.kind = kind
        self.version = 0
        self.waiting: dict[str, Waiting] = {}  # by player id, in order of entry


def waiting_of(event: PoolEntered) -> Waiting:
    """The entry a `PoolEntered` makes."""
    return Waiting(
        event.player_id,
        event.name,
        event.rating,
        event.entered_at,
        event.cpu_after,
        event.client_seed,
    )


def _entered(state: PoolState, event: PoolEntered) -> None:
    state.waiting[event.player_id] = waiting_of(event)


def _left(state: PoolState, event: PoolLeft) -> None:
    state.waiting.pop(event.player_id, None)


def _formed(state: PoolState, event: TableFormed) -> None:
    for player in event.players:
        state.waiting.pop(player.player_id, None)


_APPLY: Final[dict[type[Any], Callable[[PoolState, Any], None]]] = {
    PoolEntered: _entered,
    PoolLeft: _left,
    TableFormed: _formed,
}


def apply(state: PoolState, event: PoolEvent) -> None:
    """Record one event (no checks: events are facts)."""
    _APPLY[type(event)](state, event)
    state.version += 1


def fold(kind: PoolKind, events: Sequence[PoolEvent]) -> PoolState:
    """The pool after `events`, from empty."""
    state = PoolState(kind)
    for event in events:
        apply(state, event)
    return state


# ---------------------------------------------------------------------------------- decide


def rating_window(waited: float) -> float:
    """How far from their own rating (either side) a ranked player who has waited
    `waited` seconds accepts an opponent."""
    steps = math.floor(max(waited, 0.0) / WINDOW_EVERY)
    return min(WINDOW_MAX, WINDOW_START + WINDOW_STEP * steps)


def cpu_level_for(ratings: Sequence[float]) -> CpuLevel:
    """The CPU level for a table of people with these display ratings (their mean)."""
    mean = sum(ratings) / len(ratings)
    for floor, level in _LEVEL_FROM:
        if mean >= floor:
            return level
    return "easy"


def _fits(a: Waiting, b: Waiting, now: float) -> bool:
    gap = abs(a.rating - b.rating)
    return gap <= rating_window(now - a.entered_at) and gap <= rating_window(now - b.entered_at)


def _ranked(seats: int, queue: list[Waiting], now: float) -> list[list[Waiting]]:
    tables, seated = [], set[str]()
    for anchor in queue:
        if anchor.player_id in seated:
            continue
        group = [anchor]
        others = [w for w in queue if w.player_id not in seated and w is not anchor]
        # Closest rating first, then the longer wait (the queue's order).
        others.sort(key=lambda w: abs(w.rating - anchor.rating))
        for other in others:
            if all(_fits(other, member, now) for member in group):
                group.append(other)
                if len(group) == seats:
                    break
        if len(group) == seats:
            tables.append(group)
            seated.update(w.player_id for w in group)
    return tables


def _casual(seats: int, queue: list[Waiting], now: float) -> list[list[Waiting]]:
    full = len(queue) - len(queue) % seats
    tables = [queue[i : i + seats] for i in range(0, full, seats)]
    rest = queue[full:]
    accepting = [w for w in rest if w.cpu_after is not None]
    due = any(w.cpu_after is not None and now - w.entered_at >= w.cpu_after for w in accepting)
    if due:
        tables.append(accepting)
    return tables


def form_tables(kind: PoolKind, waiting: Sequence[Waiting], now: float) -> list[TableFormed]:
    """The tables the pool forms at `now` (ids left empty: `decide` gives them)."""
    queue = sorted(waiting, key=lambda w: (w.entered_at, w.player_id))
    groups = (_ranked if kind.ranked else _casual)(kind.seats, queue, now)
    formed = []
    for group in groups:
        cpus = kind.seats - len(group)
        formed.append(
            TableFormed(
                party_id="",
                match_id="",
                players=tuple(PoolPlayer(w.player_id, w.name, w.client_seed) for w in group),
                cpus=cpus,
                cpu_level=cpu_level_for([w.rating for w in group]) if cpus else None,
            )
        )
    return formed


def _decide_enter(command: EnterPool, state: PoolState) -> list[PoolEvent] | PoolRejection:
    if command.player_id in state.waiting:
        return PoolRejection("already_waiting", "you are already waiting in this pool")
    if not math.isfinite(command.rating):
        return PoolRejection("bad_rating", "the rating must be a number", "rating")
    if state.kind.ranked and command.cpu_after is not None:
        return PoolRejection("bad_wait", "ranked tables are people only: no CPU wait", "cpu_after")
    if command.cpu_after not in CPU_WAITS:
        wait = f"wait {one_of(CPU_WAITS[:-1])} seconds for CPUs, or none"
        return PoolRejection("bad_wait", wait, "cpu_after")
    return [
        PoolEntered(
            player_id=command.player_id,
            name=command.name,
            rating=command.rating,
            entered_at=command.now,
            cpu_after=command.cpu_after,
            client_seed=command.client_seed,
        )
    ]


def _decide_leave(command: LeavePool, state: PoolState) -> list[PoolEvent] | PoolRejection:
    if command.player_id not in state.waiting:
        return PoolRejection("not_waiting", "you are not waiting in this pool")
    return [PoolLeft(player_id=command.player_id, reason="gone" if command.gone else "left")]


def _decide_form(command: FormTables, state: PoolState) -> list[PoolEvent] | PoolRejection:
    present = [w for w in state.waiting.values() if w.player_id not in command.absent]
    formed = form_tables(state.kind, present, command.now)
    if len(formed) > len(command.table_ids):
        return PoolRejection("table_ids", f"{len(formed)} tables form: give as many ids")
    return [
        msgspec.structs.replace(table, party_id=party_id, match_id=match_id)
        for table, (party_id, match_id) in zip(formed, command.table_ids, strict=False)
    ]


def decide(command: PoolCommand, state: PoolState) -> list[PoolEvent] | PoolRejection:
    """The events a command yields on `state`, or why it is refused. `FormTables` yields
    none when no table can form yet."""
    if isinstance(command, EnterPool):
        return _decide_enter(command, state)
    if isinstance(command, LeavePool):
        return _decide_leave(command, state)
    return _decide_form(command, state)
