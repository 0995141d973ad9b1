"""Request bodies and responses of the match service (msgspec Structs, documented in OpenAPI).

Bodies forbid unknown fields, so a misspelt key is a 422 naming it, not silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from domain.settings import MAX_SEATS, MIN_SEATS, CpuLevel, CpuSpeed, CpuWait, TurnLimit
from replays.board_view import BoardOut, OptionOut

# Every setting's values are `domain.settings`' own types (one definition, docs/api.md).
CpuLevelName = CpuLevel
CpuSpeedName = CpuSpeed
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
ClientSeed = Annotated[str, msgspec.Meta(max_length=64, pattern=r"^[ -~]*$")]
SeatIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEATS - 1)]
StampId = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class _Body(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class NewPlayer(_Body):
    """A guest's display name."""

    name: Name


class NewGuest(_Body):
    """A new guest: its display name, or none and the language (`ja` or `en`, default
    `en`) of a name made up for it (a colour, an animal and a number: "金色のラッコ42",
    "Golden Otter 42"), which the guest can change later like any name."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    lang: Literal["ja", "en"] = "en"


class NewParty(_Body):
    """A new table. `rules`: `{"preset": "standard"|"bga", ...overrides}`
    (docs/rules.md#options-local-rules-and-presets), options only: a match pins the current rules
    revision itself."""

    seats: Annotated[int, msgspec.Meta(ge=MIN_SEATS, le=MAX_SEATS)] = MAX_SEATS
    rules: dict[str, Any] | None = None
    turn_limit: TurnLimit | None = None
    ranked: bool = False
    client_seed: ClientSeed = ""
    cpu_speed: CpuSpeedName = "normal"


class JoinParty(_Body):
    """Sit at a table: in `seat`, or the first free seat."""

    seat: SeatIndex | None = None
    client_seed: ClientSeed = ""


class AddCpu(_Body):
    """Seat a CPU (host only)."""

    level: CpuLevelName = "normal"
    seat: SeatIndex | None = None


class ChangeSettings(_Body):
    """New settings (host only); omitted fields stay. `turn_limit`: 0 means none.
    `stamps`: quick-chat stamps on or off, the one setting that may change during a match.
    `cpu_speed`: how long the CPUs pause before each action, `normal` or `fast` (a quarter
    of it), from the next match on."""

    rules: dict[str, Any] | None = None
    turn_limit: Literal[0, TurnLimit] | None = None
    ranked: bool | None = None
    stamps: bool | None = None
    cpu_speed: CpuSpeedName | None = None


class SendStamp(_Body):
    """A quick-chat stamp, by id (`domain.stamps`: `good_luck`, `nice`, ...; no free text)."""

    stamp: StampId


class MovePiece(_Body):
    """Move this piece (0-3) by the die just rolled."""

    piece: Annotated[int, msgspec.Meta(ge=0, le=3)]


# ------------------------------------------------------------------------------ responses


class PlayerOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A guest; `token` only in the response that created it."""

    id: str
    name: str
    token: str | None = None


class PartySeatOut(msgspec.Struct, kw_only=True):
    seat: int
    name: str | None
    player_id: str | None
    cpu: str | None


class PartyOut(msgspec.Struct, kw_only=True):
    """A table: seats, settings, and the match it is playing."""

    id: str
    status: str
    host_id: str
    seats: list[PartySeatOut]
    rules: dict[str, Any]
    turn_limit: int | None
    ranked: bool
    match_id: str | None
    game: int
    first_seat: int
    version: int
    # Quick-chat stamps on (the host may switch them off); rows of the lobby's listing
    # written before the setting existed read as on.
    stamps: bool = True
    # The arena tournament that paired this table (docs/arenas.md), or null.
    arena_id: str | None = None
    # The CPUs' speed, `normal` or `fast` (rows of the lobby's listing written before the
    # setting existed read as normal).
    cpu_speed: CpuSpeedName = "normal"


class PartyListOut(msgspec.Struct, kw_only=True):
    parties: list[PartyOut]


class TableOut(msgspec.Struct, kw_only=True):
    """A table the player sits at (`myTables`): `status` "open" (the party waits for
    players), "playing" (its match runs) or "finished" (its match ended lately);
    `action` says what one press on `href` does: "open_party", "return_to_match" or
    "see_result" (the result and もう一度). `updated_at`: the party's last change, or the
    match's end when finished (ISO 8601)."""

    party_id: str
    match_id: str | None
    status: Literal["open", "playing", "finished"]
    host_id: str
    seats: list[PartySeatOut]
    ranked: bool
    turn_limit: int | None
    updated_at: str
    action: Literal["open_party", "return_to_match", "see_result"]
    href: str


class TablesOut(msgspec.Struct, kw_only=True):
    """The tables the player sits at: running matches, open parties, then matches that
    finished within the last 2 hours, each newest first."""

    tables: list[TableOut]


class LiveSeatOut(msgspec.Struct, kw_only=True):
    """A seat of a running match, as its watchers' list shows it: `name` as the match
    recorded it (a CPU's is the server's; the pages name a CPU by its level), and how far
    its pieces have come: `goal` of them in the goal, `progress` 0-1 (the share of the
    way all four have come)."""

    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None
    stood_in: str | None
    goal: int
    progress: float


class LiveMatchOut(msgspec.Struct, kw_only=True):
    """A match being played now (`listLiveMatches`): who plays, ranked or not, whose turn,
    how far along (each seat's `goal` and `progress`), when it began (`started_at`, ISO
    8601), and `href`, the page that watches it."""

    match_id: str
    party_id: str
    ranked: bool
    turn_limit: int | None
    arena_id: str | None
    started_at: str
    turn: int
    seats: list[LiveSeatOut]
    href: str


class LiveMatchesOut(msgspec.Struct, kw_only=True):
    """The matches being played now, newest first (at most 20); private arenas' left out."""

    matches: list[LiveMatchOut]


class MatchSeatOut(msgspec.Struct, kw_only=True):
    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None
    stood_in: str | None
    timeouts: int


class DeadlineOut(msgspec.Struct, kw_only=True):
    kind: str
    due_at: str


class MatchOut(msgspec.Struct, kw_only=True):
    """The public state of a match (never the server seed before `SeedRevealed`)."""

    id: str
    party_id: str | None
    status: str
    rules: dict[str, Any]
    seats: list[MatchSeatOut]
    pieces: dict[str, list[int]]
    # The seat to act and what it must do ("roll" or "move"); once the match is over
    # nobody acts: `turn` is null and `phase` is "over".
    turn: int | None
    phase: Literal["roll", "move", "over"]
    die: int | None
    rolls_left: int
    sixes: int
    rolls_made: int
    first_seat: int
    placements: list[int] | None
    seed_hash: str
    client_seed: str
    server_seed: str | None
    turn_limit: int | None
    ranked: bool
    version: int
    deadline: DeadlineOut | None
    board: BoardOut


class MovesOut(msgspec.Struct, kw_only=True):
    """The legal moves of the seat to act for its die (empty unless it must move; `seat`
    null and `phase` "over" once the match is over)."""

    seat: int | None
    phase: Literal["roll", "move", "over"]
    die: int | None
    moves: list[OptionOut]
    version: int


class EventOut(msgspec.Struct, kw_only=True):
    version: int
    type: str
    data: dict[str, Any]
    recorded_at: str
    hash: str


class EventsOut(msgspec.Struct, kw_only=True):
    events: list[EventOut]
    version: int


class LogOut(msgspec.Struct, kw_only=True):
    """A page of the match's events (`getMatchLog`), in version order. `version`: the
    match's (its count of events); `older`: the `before` of the page before this one
    (null: this page starts at the match's first event)."""

    events: list[EventOut]
    version: int
    older: int | None


class CommandOut(msgspec.Struct, kw_only=True):
    """What a command appended (a replayed Idempotency-Key returns the first outcome)."""

    stream_id: str
    events: list[EventOut]
    version: int
    duplicate: bool


class RollOut(msgspec.Struct, kw_only=True):
    """Roll `n` of the match (counting every die), its event's `version`, who rolled and
    the die."""

    n: int
    version: int
    seat: int
    value: int


class FairnessOut(msgspec.Struct, kw_only=True):
    """The dice commitment and every roll; `server_seed` and `verified` after the end."""

    seed_hash: str
    client_seed: str
    server_seed: str | None
    rolls: list[RollOut]
    verified: bool | None


class RuleOptionsOut(msgspec.Struct, kw_only=True):
    """The presets (every option spelled out) and the values each option may take."""

    default: str
    presets: dict[str, dict[str, Any]]
    values: dict[str, list[Any]]


class StampOut(msgspec.Struct, kw_only=True):
    """One stamp: the stamps stream's `version`, the sender's `seat`, the stamp's id (each
    page words it in its viewer's language), `at` (the service's clock, Unix seconds) and
    `recorded_at` (the stored row's time, as a match event's)."""

    version: int
    seat: int
    stamp: str
    at: float
    recorded_at: str


class StampsOut(msgspec.Struct, kw_only=True):
    """Every stamp of a match in order; `version`: the count (the next one's version)."""

    stamps: list[StampOut]
    version: int


class StartOut(msgspec.Struct, kw_only=True):
    """The party after start/rematch and the new match's id."""

    party: PartyOut
    match_id: str


PoolName = Literal["2-casual", "2-ranked", "4-casual", "4-ranked"]


class EnterPool(_Body):
    """Wait in a quick-play pool. `cpu_after`: casual pools only, the seconds you accept
    to wait before CPUs fill the table (10 or 30; null: people only; unset: 10); ranked
    pools are people only (unset or null)."""

    cpu_after: CpuWait | msgspec.UnsetType | None = msgspec.UNSET
    client_seed: ClientSeed = ""


class PoolEntryOut(msgspec.Struct, kw_only=True):
    """A player's wait in a pool. `entered_at`: seconds since the epoch; `window`: ranked
    only, the rating range accepted now either side of `rating` (it widens with the wait);
    `waiting`: how many wait in this pool."""

    pool: PoolName
    seats: int
    ranked: bool
    entered_at: float
    cpu_after: int | None
    rating: float
    window: float | None
    waiting: int


class PoolCountOut(msgspec.Struct, kw_only=True):
    """How many wait in one pool."""

    pool: PoolName
    seats: int
    ranked: bool
    waiting: int


class PoolsOut(msgspec.Struct, kw_only=True):
    """Quick play now: guests online (a lobby or a table open) and each pool's queue."""

    online: int
    pools: list[PoolCountOut]
