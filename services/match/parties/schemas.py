"""The parties' request bodies and responses (msgspec Structs, in OpenAPI), the tables a
guest sits at, and the frames of the party and lobby sockets that carry parties."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from domain.settings import MAX_SEATS, MIN_SEATS, TurnLimit
from services.match.schemas import Body, ClientSeed, CpuLevelName, CpuSpeedName, SeatIndex


class NewParty(Body):
    """A new table. `rules`: `{"preset": "standard"|"bga", ...overrides}`
    (docs/rules.md#options-local-rules-and-presets), options only: a match pins the current rules
    revision itself."""

    seats: Annotated[int, msgspec.Meta(ge=MIN_SEATS, le=MAX_SEATS)] = MAX_SEATS
    rules: dict[str, Any] | None = None
    turn_limit: TurnLimit | None = None
    ranked: bool = False
    client_seed: ClientSeed = ""
    cpu_speed: CpuSpeedName = "normal"


class JoinParty(Body):
    """Sit at a table: in `seat`, or the first free seat."""

    seat: SeatIndex | None = None
    client_seed: ClientSeed = ""


class AddCpu(Body):
    """Seat a CPU (host only)."""

    level: CpuLevelName = "normal"
    seat: SeatIndex | None = None


class ChangeSettings(Body):
    """New settings (host only); omitted fields stay. `turn_limit`: 0 means none.
    `stamps`: quick-chat stamps on or off, the one setting that may change during a match.
    `cpu_speed`: how long the CPUs pause before each action, `normal` or `fast` (a quarter
    of it), from the next match on."""

    rules: dict[str, Any] | None = None
    turn_limit: Literal[0, TurnLimit] | None = None
    ranked: bool | None = None
    stamps: bool | None = None
    cpu_speed: CpuSpeedName | None = None


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


class StartOut(msgspec.Struct, kw_only=True):
    """The party after start/rematch and the new match's id."""

    party: PartyOut
    match_id: str


class PartyFrame(msgspec.Struct, kw_only=True):
    type: Literal["party"] = "party"
    party: PartyOut


class PartiesFrame(msgspec.Struct, kw_only=True):
    type: Literal["parties"] = "parties"
    parties: list[PartyOut]
