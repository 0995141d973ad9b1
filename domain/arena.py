"""An arena tournament (アリーナ / Arena) as a Decider: who plays, who is paired with whom,
the points each result scores, and the end (docs/arenas.md, which says the same rules).

An arena is one stream (`tournament-<id>`, `domain.streams`). It runs from `starts_at` for
`minutes` minutes; players join or pause any time before the end. A player whose match has
ended is paired again at the next pass with the others waiting (`PairTables`: by arena
score, then rating, in tables of `seats`). Every arena match is ranked. No table is paired
at or after the end; matches running at the end are scored when they end.

**Reading a match** (`match_outcome`, by the arena's `scoring` revision, recorded in its
ArenaCreated: an arena keeps its revision forever, so its file verifies as it was
played). Revision 2 (every arena created since it exists) reads each seat's place and
whether its player left with `domain.outcome.seat_outcomes`, the very reading the ratings
use: a player whose seat ends stood in for `left` or `disconnected` left, and the
leavers share the last place, after every player who stayed (`decide` refuses a result
that places a leaver otherwise). Revision 1 (arenas created before): the match's
placements as they are, and only a stand-in for `left` made a leaver.

**Points** (`POINTS`, `place_points`): 4/2/1/0 for four seats, 2/0 for two; a shared place
shares the points of the places it spans. A player who comes into a match on a streak
(`STREAK_FROM` firsts in a row: on fire) scores double, as lichess's arenas double after
two wins; the result is marked `doubled` only when there was something to double: a
place worth 0 scores 0 and is not marked. A first place (shared or not) adds one to the
streak; any other result, or leaving, ends it.

**Leaving** a match scores 0, whatever the place, and pauses the player until they
continue; the points of a leaver's place go to nobody (the others keep theirs). Since
revision 2 a leaver is never placed 1st unless every seat left (all share 1st, all
score 0); under revision 1 a leaver the CPU brought home 1st kept that place and scored
0, and the 1st place's points went to nobody.

**The clock.** The domain has no clock: every command that depends on time carries `now`
(the service's clock when it decides, seconds since the epoch) and is refused at or
after `ends_at`, whether or not the end is recorded yet: joining, continuing and pausing
(`arena_over`), pairing (`not_running`), and cancelling (`arena_over`: once the clock has
run out the arena's result stands; its running matches are still scored, and the podium
shows once they are). The pauses and the cancel of version-1 events were recorded
without their time (`now` None): they are judged by the recorded events alone, as then.
A cancel's reason empty, blank or over `REASON_MAX` characters is `bad_reason` (422,
field `reason`): `decide` is the one place that judges it, so the service answers that
one code for all three.

**Standings** are a fold (`standings`): a player's score is the sum of their scored
points; by score, then fewer matches, then who joined first; equal scores share a rank.
`leader`: the first line once it has scored points (None before). `podium` (of a
finished arena): every line ranked 1 to 3 that played a match, so shared ranks may make
it longer than three lines.

(The service around it, docs/arenas.md, says the rest: the socket's frames, never two
within 0.5 s, and the HTTP answers.)

The pairing pass carries the ids of the tables it may open and who is `absent` (waiting,
but not connected now). `TablesPaired` records who was skipped so that anyone can
re-derive each pass from the stream alone (`pair_tables`); `ResultScored` is derived from
the match's own events (`match_outcome`), so a forged result does not verify. Events
evolve by schema version, with pure upcasters (`UPCASTERS`, `decode_arena_event`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, Literal

import msgspec

from domain.dice import ClientSeedError, check_client_seed
from domain.outcome import seat_outcomes
from domain.settings import ARENA_MINUTES, ARENA_RULES, ARENA_SEATS, ARENA_TURN_LIMITS, one_of

__all__ = [
    "ARENA_MINUTES",
    "ARENA_RULES",
    "ARENA_SEATS",
    "ARENA_TURN_LIMITS",
    "EVENT_TYPES",
    "NAME_MAX",
    "POINTS",
    "REASON_MAX",
    "SCORING",
    "SCORINGS",
    "STREAK_FROM",
    "UPCASTERS",
    "ArenaCancelled",
    "ArenaCommand",
    "ArenaCreated",
    "ArenaEnded",
    "ArenaEvent",
    "ArenaJoined",
    "ArenaRejection",
    "ArenaState",
    "ArenaTable",
    "CancelArena",
    "ContinueArena",
    "CreateArena",
    "EndArena",
    "Entrant",
    "JoinArena",
    "PairTables",
    "PauseArena",
    "PlayerContinued",
    "PlayerPaused",
    "ResultScored",
    "ScoreMatch",
    "SeatResult",
    "Standing",
    "TablesPaired",
    "apply",
    "decide",
    "decode_arena_event",
    "fold",
    "leader",
    "match_outcome",
    "pair_tables",
    "place_points",
    "podium",
    "standings",
]

# Points by place (1st, 2nd, ...) for a table of that many seats.
POINTS: Final[dict[int, tuple[int, ...]]] = {2: (2, 0), 4: (4, 2, 1, 0)}
# Firsts in a row after which a player's results count double (until one is not first).
STREAK_FROM: Final = 2
# How an arena reads a match's end (`match_outcome`), by revision; new arenas take the
# latest (`SCORING`), recorded in their ArenaCreated, and an arena keeps its own forever.
SCORINGS: Final = (1, 2)
SCORING: Final = 2
NAME_MAX: Final = 60
REASON_MAX: Final = 200

PauseReason = Literal["asked", "left_match", "gone"]
ArenaStatus = Literal["upcoming", "running", "ended", "finished", "cancelled"]

# ---------------------------------------------------------------------------------- events


class _ArenaEvent(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    schema_version: ClassVar[int] = 1


class ArenaCreated(_ArenaEvent, frozen=True, kw_only=True):
    """The arena exists: it runs from `starts_at` (seconds since the epoch) for `minutes`,
    for tables of `seats` playing the preset `rules` with `turn_limit` seconds a turn.
    `private`: reached only by its link (a guest's, `creator_id`); `schedule`: the name of
    the operator's schedule that created it (None for a guest's).

    Version 2: `scoring`, the revision of how the arena reads a match's end
    (`match_outcome`, `SCORINGS`); every arena created before it existed scores by
    revision 1 and is read so (`_created_v1`)."""

    schema_version: ClassVar[int] = 2

    arena_id: str
    name: str
    seats: int
    rules: str
    turn_limit: int
    starts_at: float
    minutes: int
    private: bool = False
    creator_id: str | None = None
    schedule: str | None = None
    # A schedule's title by language (`{"en": ..., "ja": ...}`); `name` is its English one.
    title: dict[str, str] | None = None
    scoring: int


class ArenaJoined(_ArenaEvent, frozen=True):
    """A player entered the arena at `at`, with their display `rating` then (pairing's
    second key) and the client seed their matches are played with."""

    player_id: str
    name: str
    rating: float
    at: float
    client_seed: str = ""


class PlayerPaused(_ArenaEvent, frozen=True, kw_only=True):
    """A player is not paired until they continue: they asked (`asked`), they left their
    match (`left_match`, with its result), or they were away past the grace (`gone`).

    Version 2: `at`, the service's clock when it was decided (the Decider refuses a pause
    at or after the end). A version-1 event has none (`at` None: `_paused_v1`)."""

    schema_version: ClassVar[int] = 2

    player_id: str
    reason: PauseReason = "asked"
    at: float | None


class PlayerContinued(_ArenaEvent, frozen=True):
    """A paused player is paired again from `at`, at their display `rating` then."""

    player_id: str
    rating: float
    at: float


class ArenaTable(msgspec.Struct, frozen=True):
    """One table of a pass: party `party_id` playing match `match_id`, for `players` in
    seat order."""

    party_id: str
    match_id: str
    players: tuple[str, ...]


class TablesPaired(_ArenaEvent, frozen=True):
    """A pairing pass at `at` seated `tables`; `skipped` were waiting but not connected."""

    at: float
    tables: tuple[ArenaTable, ...]
    skipped: tuple[str, ...] = ()


class SeatResult(msgspec.Struct, frozen=True):
    """One player's result in an arena match: their `place`, whether they `left` it, the
    `points` it scored (doubled on a streak: `doubled`) and their streak of firsts after it."""

    player_id: str
    place: int
    left: bool
    points: float
    doubled: bool
    streak: int


class ResultScored(_ArenaEvent, frozen=True):
    """The match `match_id` ended: each seat's result, in seat order."""

    match_id: str
    results: tuple[SeatResult, ...]


class ArenaEnded(_ArenaEvent, frozen=True):
    """The clock ran out at `at`: no more pairing; matches still running are scored when
    they end."""

    at: float


class ArenaCancelled(_ArenaEvent, frozen=True, kw_only=True):
    """An operator (or the private arena's creator) cancelled the arena, saying why.

    Version 2: `at`, the service's clock when it was decided (the Decider refuses a
    cancel once the clock ran out). A version-1 event has none (`at` None:
    `_cancelled_v1`)."""

    schema_version: ClassVar[int] = 2

    reason: str
    by: str
    at: float | None


ArenaEvent = (
    ArenaCreated
    | ArenaJoined
    | PlayerPaused
    | PlayerContinued
    | TablesPaired
    | ResultScored
    | ArenaEnded
    | ArenaCancelled
)

EVENT_TYPES: Final[dict[str, type[_ArenaEvent]]] = {
    cls.__name__: cls
    for cls in (
        ArenaCreated,
        ArenaJoined,
        PlayerPaused,
        PlayerContinued,
        TablesPaired,
        ResultScored,
        ArenaEnded,
        ArenaCancelled,
    )
}

_Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def _created_v1(data: dict[str, Any]) -> dict[str, Any]:
    """ArenaCreated v1 -> v2: an arena created before scoring revisions existed scores
    every match by revision 1 (the stored bytes stay as they are)."""
    if "scoring" in data:  # no code ever wrote it: a forged v1 would score another way
        raise ValueError("ArenaCreated v1 has no scoring")
    return {**data, "scoring": 1}


def _at_unknown(kind: str) -> _Upcaster:
    """v1 -> v2 of an event that gained `at`: a v1 event was recorded without its time
    (None: the Decider judges it as it did then, by the events alone)."""

    def upcast(data: dict[str, Any]) -> dict[str, Any]:
        if "at" in data:
            raise ValueError(f"{kind} v1 has no time")
        return {**data, "at": None}

    return upcast


# (type, stored version) -> pure function from that version's data to the next version's.
UPCASTERS: Final[dict[tuple[str, int], _Upcaster]] = {
    ("ArenaCreated", 1): _created_v1,
    ("PlayerPaused", 1): _at_unknown("PlayerPaused"),
    ("ArenaCancelled", 1): _at_unknown("ArenaCancelled"),
}

_decoder: msgspec.json.Decoder[ArenaEvent] = msgspec.json.Decoder(ArenaEvent)


def decode_arena_event(
    data: bytes, *, type_name: str | None = None, schema_version: int | None = None
) -> ArenaEvent:
    """Decode a stored arena event, first upcasting it from the `schema_version` it was
    stored at (`UPCASTERS`). Without a type and version: bytes this code wrote, at the
    current versions. `msgspec.DecodeError` or `ValueError` for anything else."""
    if type_name is None or schema_version is None:
        return _decoder.decode(data)
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise ValueError(f"unknown arena event type {type_name!r}")
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
    event: ArenaEvent = msgspec.convert(raw, ArenaEvent)
    return event


# -------------------------------------------------------------------------------- commands


class CreateArena(msgspec.Struct, frozen=True, kw_only=True):
    """Create the arena `arena_id` (see `ArenaCreated`)."""

    arena_id: str
    name: str
    seats: int
    rules: str
    turn_limit: int
    starts_at: float
    minutes: int
    private: bool = False
    creator_id: str | None = None
    schedule: str | None = None
    title: dict[str, str] | None = None
    scoring: int = SCORING


class JoinArena(msgspec.Struct, frozen=True, kw_only=True):
    """Enter the arena at `now`."""

    player_id: str
    name: str
    rating: float
    now: float
    client_seed: str = ""


class PauseArena(msgspec.Struct, frozen=True, kw_only=True):
    """Stop being paired at `now` (`reason` `gone`: the service found the player away).
    `now` None only re-decides a version-1 `PlayerPaused`, recorded without its time."""

    player_id: str
    reason: PauseReason = "asked"
    now: float | None


class ContinueArena(msgspec.Struct, frozen=True, kw_only=True):
    """Be paired again from `now`."""

    player_id: str
    rating: float
    now: float


class PairTables(msgspec.Struct, frozen=True, kw_only=True):
    """The pairing pass at `now`; `table_ids` are fresh (party id, match id) pairs for the
    tables it opens, used in order; waiting players in `absent` are skipped."""

    now: float
    table_ids: tuple[tuple[str, str], ...]
    absent: frozenset[str] = frozenset()


class ScoreMatch(msgspec.Struct, frozen=True, kw_only=True):
    """Score the ended match `match_id`: `places[i]` and `left[i]` for its seat i, as
    `match_outcome` reads them from the match's events."""

    match_id: str
    places: tuple[int, ...]
    left: tuple[bool, ...]


class EndArena(msgspec.Struct, frozen=True, kw_only=True):
    """The clock ran out (`now` at or after the end)."""

    now: float


class CancelArena(msgspec.Struct, frozen=True, kw_only=True):
    """Cancel the arena at `now`, saying why; `by` is who (an operator, or the creator's
    id). `now` None only re-decides a version-1 `ArenaCancelled`, recorded without its
    time."""

    reason: str
    by: str
    now: float | None


ArenaCommand = (
    CreateArena
    | JoinArena
    | PauseArena
    | ContinueArena
    | PairTables
    | ScoreMatch
    | EndArena
    | CancelArena
)


class ArenaRejection(msgspec.Struct, frozen=True):
    """Why an arena command was refused (nothing is appended). `status` is the HTTP
    status the service answers with."""

    code: str
    reason: str
    field: str | None = None
    status: int = 409


# ----------------------------------------------------------------------------------- state


class Entrant:
    """One player of the arena, as the fold knows them."""

    __slots__ = (
        "client_seed",
        "joined_at",
        "last_match",
        "match_id",
        "matches",
        "name",
        "paused",
        "player_id",
        "rating",
        "score",
        "since",
        "streak",
    )

    def __init__(self, e: ArenaJoined) -> None:
        self.player_id = e.player_id
        self.name = e.name
        self.rating = e.rating
        self.client_seed = e.client_seed
        self.joined_at = e.at
        self.since = e.at  # when they last became free to be paired
        self.score = 0.0
        self.streak = 0
        self.matches = 0  # matches scored
        self.match_id: str | None = None  # the arena match they play now
        self.last_match: str | None = None  # the last one scored
        self.paused = False

    @property
    def state(self) -> Literal["waiting", "playing", "paused"]:
        """What the player does now (a paused player may still finish their match)."""
        if self.match_id is not None:
            return "playing"
        return "paused" if self.paused else "waiting"

    @property
    def on_fire(self) -> bool:
        """Their next result counts double."""
        return self.streak >= STREAK_FROM


class ArenaState:
    """The arena after its events: settings, entrants (in order of joining), running and
    scored matches, and the stream's version."""

    __slots__ = (
        "cancelled",
        "created",
        "ended_at",
        "entrants",
        "results",
        "running",
        "tables",
        "version",
    )

    def __init__(self) -> None:
        self.version = 0
        self.created: ArenaCreated | None = None
        self.entrants: dict[str, Entrant] = {}
        self.running: dict[str, ArenaTable] = {}  # by match id, in order of pairing
        self.tables: dict[str, ArenaTable] = {}  # every table paired, by match id
        self.results: dict[str, ResultScored] = {}  # by match id, in order of scoring
        self.ended_at: float | None = None
        self.cancelled: ArenaCancelled | None = None

    @property
    def ends_at(self) -> float:
        """When the clock runs out (seconds since the epoch)."""
        assert self.created is not None
        return self.created.starts_at + 60 * self.created.minutes

    def status(self, now: float) -> ArenaStatus:
        """`upcoming`, `running`, `ended` (the clock ran out, matches still running),
        `finished` (ended, every match scored) or `cancelled`, at `now`."""
        assert self.created is not None
        if self.cancelled is not None:
            return "cancelled"
        if self.ended_at is not None or now >= self.ends_at:
            return "ended" if self.running or self.ended_at is None else "finished"
        return "upcoming" if now < self.created.starts_at else "running"


def _created(state: ArenaState, e: ArenaCreated) -> None:
    state.created = e


def _joined(state: ArenaState, e: ArenaJoined) -> None:
    state.entrants[e.player_id] = Entrant(e)


def _paused(state: ArenaState, e: PlayerPaused) -> None:
    state.entrants[e.player_id].paused = True


def _continued(state: ArenaState, e: PlayerContinued) -> None:
    entrant = state.entrants[e.player_id]
    entrant.paused = False
    entrant.rating = e.rating
    entrant.since = e.at


def _paired(state: ArenaState, e: TablesPaired) -> None:
    for table in e.tables:
        state.running[table.match_id] = table
        state.tables[table.match_id] = table
        for player_id in table.players:
            state.entrants[player_id].match_id = table.match_id


def _scored(state: ArenaState, e: ResultScored) -> None:
    state.running.pop(e.match_id, None)
    state.results[e.match_id] = e
    for result in e.results:
        entrant = state.entrants[result.player_id]
        entrant.score += result.points
        entrant.streak = result.streak
        entrant.matches += 1
        entrant.match_id = None
        entrant.last_match = e.match_id
        if result.left:
            entrant.paused = True


def _ended(state: ArenaState, e: ArenaEnded) -> None:
    state.ended_at = e.at


def _cancelled(state: ArenaState, e: ArenaCancelled) -> None:
    state.cancelled = e


_APPLY: Final[dict[type[Any], Callable[[ArenaState, Any], None]]] = {
    ArenaCreated: _created,
    ArenaJoined: _joined,
    PlayerPaused: _paused,
    PlayerContinued: _continued,
    TablesPaired: _paired,
    ResultScored: _scored,
    ArenaEnded: _ended,
    ArenaCancelled: _cancelled,
}


def apply(state: ArenaState, event: ArenaEvent) -> None:
    """Record one event (no checks: events are facts)."""
    _APPLY[type(event)](state, event)
    state.version += 1


def fold(events: Sequence[ArenaEvent], state: ArenaState | None = None) -> ArenaState:
    """The arena after `events` (from empty, or on `state`, which it changes)."""
    state = ArenaState() if state is None else state
    for event in events:
        apply(state, event)
    return state


# ------------------------------------------------------------------------------- standings


class Standing(msgspec.Struct, frozen=True):
    """A line of the standings: `rank` (shared on equal scores), the score, the streak of
    firsts now (`on_fire`: the next result counts double) and the matches scored."""

    rank: int
    player_id: str
    name: str
    score: float
    streak: int
    on_fire: bool
    matches: int
    rating: float
    state: Literal["waiting", "playing", "paused"]


def standings(state: ArenaState) -> list[Standing]:
    """The standings: by score, then by who reached it with fewer matches, then by who
    joined first; equal scores share a rank (1, 2, 2, 4)."""
    ordered = sorted(
        state.entrants.values(), key=lambda e: (-e.score, e.matches, e.joined_at, e.player_id)
    )
    lines: list[Standing] = []
    for index, e in enumerate(ordered):
        rank = lines[-1].rank if lines and lines[-1].score == e.score else index + 1
        lines.append(
            Standing(
                rank,
                e.player_id,
                e.name,
                e.score,
                e.streak,
                e.on_fire,
                e.matches,
                e.rating,
                e.state,
            )
        )
    return lines


# ---------------------------------------------------------------------------------- rules


def place_points(seats: int, places: Sequence[int]) -> list[float]:
    """Each seat's points for `places` (1 = best) at a table of `seats`: a place shared by
    k seats shares the points of the k places it spans (two tied 2nd of four: (2+1)/2)."""
    table = POINTS[seats]
    points = []
    for place in places:
        shared = sum(1 for p in places if p == place)
        span = table[place - 1 : place - 1 + shared]
        points.append(sum(span) / shared)
    return points


def pair_tables(state: ArenaState, skipped: frozenset[str] | Sequence[str]) -> list[list[str]]:
    """The tables a pass forms: the waiting players (neither playing nor paused) not in
    `skipped`, by arena score, then display rating (higher first; then who joined first),
    cut into tables of the arena's seats; the rest wait for the next pass."""
    assert state.created is not None
    seats = state.created.seats
    skip = set(skipped)
    queue = sorted(
        (e for e in state.entrants.values() if e.state == "waiting" and e.player_id not in skip),
        key=lambda e: (-e.score, -e.rating, e.joined_at, e.player_id),
    )
    full = len(queue) - len(queue) % seats
    return [[e.player_id for e in queue[i : i + seats]] for i in range(0, full, seats)]


def match_outcome(
    match_id: str, placements: Sequence[int], stood_in: Sequence[str | None], *, scoring: int
) -> ScoreMatch:
    """The `ScoreMatch` of a finished match from its fold (`MatchFinished.placements`, each
    seat's stand-in at the end), read by the arena's `scoring` revision (module
    docstring): from 2, `domain.outcome.seat_outcomes`, the ratings' own reading; 1 (old
    arenas only), the match's placements as they are, and only a stand-in for `left` as a
    leaver. The seats are in the pairing's order: the caller checks the match's players
    against the table's."""
    if scoring == 1:
        return ScoreMatch(
            match_id=match_id,
            places=tuple(placements),
            left=tuple(reason == "left" for reason in stood_in),
        )
    ends = seat_outcomes(placements, stood_in)
    return ScoreMatch(
        match_id=match_id,
        places=tuple(end.place for end in ends),
        left=tuple(end.left for end in ends),
    )


def leader(lines: Sequence[Standing]) -> Standing | None:
    """Who leads (`standings`' lines): the first line once it has scored points; None
    before (nobody leads on 0 points, nor when every result so far scored nothing)."""
    return lines[0] if lines and lines[0].score > 0 else None


def podium(lines: Sequence[Standing]) -> list[Standing]:
    """The podium of a finished arena (`standings`' lines): every line ranked 1 to 3 that
    played a match. Shared ranks keep all their lines, so it may hold more than three
    (1, 2, 2, 2: four lines; 1, 1, 1, 4: three); a player who was never paired is not on
    it, even when their 0 shares a rank with those who played."""
    return [line for line in lines if line.rank <= 3 and line.matches > 0]


# ---------------------------------------------------------------------------------- decide


def _no(code: str, reason: str, field: str | None = None, status: int = 409) -> ArenaRejection:
    return ArenaRejection(code, reason, field, status)


def _closed(state: ArenaState, now: float) -> ArenaRejection | None:
    """Why nobody may join or continue at `now`, if so."""
    status = state.status(now)
    if status == "cancelled":
        assert state.cancelled is not None
        return _no("arena_cancelled", f"this arena was cancelled: {state.cancelled.reason}")
    if status in ("ended", "finished"):
        return _no("arena_over", "this arena has ended")
    return None


def _decide_create(c: CreateArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    if state.created is not None:
        return _no("arena_exists", "this arena exists already")
    if c.seats not in ARENA_SEATS:
        return _no(
            "bad_seats", f"an arena is for tables of {one_of(ARENA_SEATS)} players", "seats", 422
        )
    if c.minutes not in ARENA_MINUTES:
        return _no("bad_minutes", f"an arena lasts {one_of(ARENA_MINUTES)} minutes", "minutes", 422)
    if c.turn_limit not in ARENA_TURN_LIMITS:
        return _no(
            "bad_turn_limit",
            f"an arena's turn limit is {one_of(ARENA_TURN_LIMITS)} s",
            "turn_limit",
            422,
        )
    if c.rules not in ARENA_RULES:
        return _no("bad_rules", f"rules are {one_of(ARENA_RULES)}", "rules", 422)
    if c.scoring not in SCORINGS:
        return _no("bad_scoring", f"a scoring revision of {SCORINGS}", "scoring", 422)
    name = c.name.strip()
    if not name or len(name) > NAME_MAX:
        return _no("bad_name", f"a name of 1 to {NAME_MAX} characters", "name", 422)
    return [
        ArenaCreated(
            arena_id=c.arena_id,
            name=name,
            seats=c.seats,
            rules=c.rules,
            turn_limit=c.turn_limit,
            starts_at=c.starts_at,
            minutes=c.minutes,
            private=c.private,
            creator_id=c.creator_id,
            schedule=c.schedule,
            title=c.title,
            scoring=c.scoring,
        )
    ]


def _decide_join(c: JoinArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    closed = _closed(state, c.now)
    if closed is not None:
        return closed
    if c.player_id in state.entrants:
        if state.entrants[c.player_id].paused:
            return _no("already_joined", "you are in this arena, paused: press continue")
        return _no("already_joined", "you are in this arena already")
    if not math.isfinite(c.rating):
        return _no("bad_rating", "the rating must be a number", "rating", 422)
    try:
        check_client_seed(c.client_seed)
    except ClientSeedError as error:
        return _no("bad_client_seed", str(error), "client_seed", 422)
    return [
        ArenaJoined(
            player_id=c.player_id,
            name=c.name,
            rating=c.rating,
            at=c.now,
            client_seed=c.client_seed,
        )
    ]


def _decide_pause(c: PauseArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    entrant = state.entrants.get(c.player_id)
    if entrant is None:
        return _no("not_joined", "you are not in this arena")
    if entrant.paused:
        return _no("already_paused", "you are paused already")
    if (
        state.cancelled is not None
        or state.ended_at is not None
        or (c.now is not None and c.now >= state.ends_at)
    ):
        return _no("arena_over", "this arena has ended")
    return [PlayerPaused(player_id=c.player_id, reason=c.reason, at=c.now)]


def _decide_continue(c: ContinueArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    entrant = state.entrants.get(c.player_id)
    if entrant is None:
        return _no("not_joined", "you are not in this arena: join it")
    closed = _closed(state, c.now)
    if closed is not None:
        return closed
    if not entrant.paused:
        return _no("not_paused", "you are not paused")
    if not math.isfinite(c.rating):
        return _no("bad_rating", "the rating must be a number", "rating", 422)
    return [PlayerContinued(player_id=c.player_id, rating=c.rating, at=c.now)]


def _decide_pair(c: PairTables, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    if state.status(c.now) != "running":
        return _no("not_running", "tables are paired only while the arena runs")
    waiting = [e.player_id for e in state.entrants.values() if e.state == "waiting"]
    skipped = tuple(p for p in waiting if p in c.absent)
    groups = pair_tables(state, skipped)
    if not groups:
        return []
    if len(groups) > len(c.table_ids):
        return _no("table_ids", f"{len(groups)} tables form: give as many ids")
    tables = tuple(
        ArenaTable(party_id, match_id, tuple(group))
        for group, (party_id, match_id) in zip(groups, c.table_ids, strict=False)
    )
    return [TablesPaired(at=c.now, tables=tables, skipped=skipped)]


def _decide_score(c: ScoreMatch, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    assert state.created is not None
    table = state.running.get(c.match_id)
    if table is None:
        return _no("not_running", f"match {c.match_id} is not a running match of this arena")
    seats = len(table.players)
    if len(c.places) != seats or len(c.left) != seats:
        return _no("bad_result", f"a result for each of the {seats} seats")
    if any(not 1 <= place <= seats for place in c.places):
        return _no("bad_result", f"places are 1 to {seats}")
    # A match's placements rank the seats (domain.placements): a seat's place is 1 + the
    # seats ahead of it, so tied seats share a place and skip the next (1, 2, 2, 4). Any
    # other places would share out more or less than the table's points (1, 1, 2, 3: 9 of 7).
    if any(place != 1 + sum(1 for p in c.places if p < place) for place in c.places):
        return _no("bad_result", "places rank the seats: tied seats share one (1, 2, 2, 4)")
    if state.created.scoring >= 2:
        # `domain.outcome`: the leavers share the last place, after every seat that stayed.
        last = 1 + sum(1 for gone in c.left if not gone)
        if any(gone and place != last for place, gone in zip(c.places, c.left, strict=True)):
            return _no("bad_result", "a leaver is placed after every player who stayed")
    points = place_points(state.created.seats, c.places)
    results = []
    for player_id, place, left, base in zip(table.players, c.places, c.left, points, strict=True):
        entrant = state.entrants[player_id]
        doubled = entrant.on_fire and not left and base > 0
        results.append(
            SeatResult(
                player_id=player_id,
                place=place,
                left=left,
                points=0.0 if left else (2 * base if doubled else base),
                doubled=doubled,
                streak=entrant.streak + 1 if place == 1 and not left else 0,
            )
        )
    return [ResultScored(match_id=c.match_id, results=tuple(results))]


def _decide_end(c: EndArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    if state.cancelled is not None:
        return _no("arena_cancelled", "this arena was cancelled")
    if state.ended_at is not None:
        return _no("arena_over", "this arena has ended")
    if c.now < state.ends_at:
        return _no("too_early", "the arena's clock has not run out")
    return [ArenaEnded(at=c.now)]


def _decide_cancel(c: CancelArena, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    if state.cancelled is not None:
        return _no("arena_cancelled", "this arena was cancelled already")
    if c.now is None:
        # A version-1 ArenaCancelled, recorded without its time: judged as then.
        if state.ended_at is not None and not state.running:
            return _no("arena_over", "this arena has finished")
    elif state.ended_at is not None or c.now >= state.ends_at:
        return _no("arena_over", "this arena's clock has run out: its result stands")
    reason = c.reason.strip()
    if not reason or len(reason) > REASON_MAX:
        return _no("bad_reason", f"say why, in 1 to {REASON_MAX} characters", "reason", 422)
    return [ArenaCancelled(reason=reason, by=c.by, at=c.now)]


_DECIDE: Final[dict[type[Any], Callable[[Any, ArenaState], list[ArenaEvent] | ArenaRejection]]] = {
    JoinArena: _decide_join,
    PauseArena: _decide_pause,
    ContinueArena: _decide_continue,
    PairTables: _decide_pair,
    ScoreMatch: _decide_score,
    EndArena: _decide_end,
    CancelArena: _decide_cancel,
}


def decide(command: ArenaCommand, state: ArenaState) -> list[ArenaEvent] | ArenaRejection:
    """The events `command` yields on `state`, or why it is refused. `PairTables` yields
    none when no table can form yet."""
    if isinstance(command, CreateArena):
        return _decide_create(command, state)
    if state.created is None:
        return _no("no_arena", "no such arena", status=404)
    return _DECIDE[type(command)](command, state)
