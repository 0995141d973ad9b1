"""The ranking consumer: finished ranked matches -> rating changes, and every ended match
-> the reputation fold (`reputation_matches`), exactly once.

It follows the global cursor (docs/design.md#the-global-order: `(tx, global_position)`, only rows
with `tx < pg_snapshot_xmin(pg_current_snapshot())`), through the event store, the only reader
of `events` (`EventStore.read_page`: the match ends after the cursor, and where to
continue past the other events), woken by the NOTIFY hints and polling as a fallback.
For each batch, ONE transaction (the store reads on its connection):

1. locks its checkpoint row (`consumer_checkpoints`, `SELECT … FOR UPDATE`) and reads the
   cursor from it, never from memory;
2. reads the match ends after that cursor; for the ranked matches among them (the
   `matches` row through `services.shared.match_rows`, the party's `MatchOpened`) it
   reads what rating needs in two queries (`EventStore.read_streams`), locks the
   players' `ratings` rows in one, rates the matches in order in memory (every model),
   and writes with one upsert (`ratings`, with the name each player played their
   latest rated match under: `MatchCreated`'s seat names, never the match service's
   `players` table) and one COPY (`rating_changes`): a fixed number of statements per
   batch, not per match;
   In the same transaction it adds one `reputation_matches` row per human player of
   every ended match among them, casual or ranked (`match_leavers`: who left it, the
   domain's `left_seats`), with one COPY (docs/ranking.md, Reputation);
3. moves the checkpoint to where the read reached (`Page.last`: past every event it
   covered, of any type), and commits.

Effects and checkpoint commit together, so a crash at any point leaves either both or
neither: a match is counted once, never twice, never missed. The row lock makes this hold
even if two consumers ran at once; normally only one does: `run()` holds a session
advisory lock (`CONSUMER_LOCK`) while consuming, and other instances stand by, retrying
the lock, and take over when its holder dies or freezes: leadership is a lease that
PostgreSQL enforces with session timeouts (`run`, docs/ranking.md "Leadership").

What counts (docs/design.md#the-ranking-service, docs/rules.md#the-end-of-a-match):

- Ranked or not: the `MatchOpened` event of the match's party stream (`ranked`), found
  through the `matches` row's `party_id`; the `matches.ranked` column (written in the same
  transaction as `MatchCreated`) when the party stream has no such event. No row: casual.
- CPU seats are not rated. A seat whose last stand-in reason before the end was `left` or
  `disconnected`, with no `SeatReclaimed` after it, is placed last (after every seat whose
  player stayed; several such players share that last place: `domain.outcome`, the
  reading the arenas score with too), and their mu never rises from that match
  (`domain.ratings.rate_match`).
- Fewer than two distinct rated players: nothing is rated (the checkpoint still moves).

`recompute()` rebuilds everything from the log into new tables and swaps them in, as a
pipeline of pages (see there). It and the live consumer rate with the same `_Book.rate`,
so the same log gives bit-identical ratings either way.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, ClassVar, Final, NamedTuple

import msgspec
import psycopg
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import events as ev
from domain.decider import MatchState, apply
from domain.outcome import seat_outcomes
from domain.ratings import MODELS, Skill, rate_match
from domain.reputation import left_seats
from domain.streams import PARTY_PREFIX, is_match_stream, match_id_of
from services.ranking import tables
from services.ranking.checkpoints import read_checkpoint, write_checkpoint
from services.ranking.leadership import LEASE, LeasedFollower
from services.shared import match_rows
from services.shared.database import untimed
from services.shared.eventstore import START, Cursor, EventData, EventStore
from services.shared.match_rows import MatchRow

__all__ = [
    "BATCH_LOCK",
    "CHECKPOINT",
    "CONSUMER_LOCK",
    "LEASE",
    "RECOMPUTE_LOCK",
    "RankingConsumer",
    "RatedPlayer",
    "RecomputeBusy",
    "RecomputeNotPermitted",
    "Tables",
    "finish_page",
    "is_ranked",
    "leader_name",
    "match_leavers",
    "match_outcome",
    "ratings_hash",
    "recompute",
]

_log = structlog.get_logger("services.ranking")

CHECKPOINT: Final = "ranking"
# Advisory lock keys (any two distinct bigints; "ludo" + 1 / + 2).
CONSUMER_LOCK: Final = 0x6C75646F0001
RECOMPUTE_LOCK: Final = 0x6C75646F0002
# Held (shared, for the transaction) by every batch of the live consumer: how a new leader
# finds the batches of a leader whose lease ran out (`_fence_off`).
BATCH_LOCK: Final = 0x6C75646F0003


class RatedPlayer(msgspec.Struct, frozen=True):
    player_id: str
    place: int
    left: bool


class Tables(msgspec.Struct, frozen=True):
    """The tables to write: the live ones, or the ones a recompute builds."""

    ratings: str = tables.ratings.name
    changes: str = tables.rating_changes.name
    reputation: str = tables.reputation_matches.name

    def pairs(self, other: Tables) -> list[tuple[str, str]]:
        """Each of these tables beside the same one of `other`."""
        return [
            (self.ratings, other.ratings),
            (self.changes, other.changes),
            (self.reputation, other.reputation),
        ]


LIVE: Final = Tables()
NEXT: Final = Tables(f"{LIVE.ratings}_next", f"{LIVE.changes}_next", f"{LIVE.reputation}_next")


class RecomputeBusy(RuntimeError):
    """Another recompute holds the recompute lock."""


class RecomputeNotPermitted(RuntimeError):
    """The database role may not create, rename or drop the rating tables."""


_NOT_PERMITTED: Final = (
    "the service's database role may not create or rename the rating tables ({reason}); "
    "run `ludo ranking recompute` as the migration owner (the role that ran `ludo db upgrade`)"
)


# --------------------------------------------------------------------------- the outcome


def _finished_state(events: Sequence[ev.Event]) -> MatchState:
    """The match's fold up to its `MatchFinished` (only the events `_OUTCOME_TYPES` names
    change what is read of it)."""
    state = MatchState()
    for event in events:
        apply(state, event)
        if state.status == "finished":
            break
    return state


def match_outcome(events: Sequence[ev.Event]) -> list[RatedPlayer] | None:
    """The rated players of a finished match and their places; None: nothing to rate.

    Who stands in for whom is the domain's fold (`MatchState.stood_in`), applied up to
    `MatchFinished`; each seat's place and who left is the domain's reading of the end
    (`domain.outcome.seat_outcomes`: leavers placed last), the one the arenas score with:
    only the events `_OUTCOME_TYPES` names change what is read here."""
    return _rated(_finished_state(events))


def match_leavers(events: Sequence[ev.Event]) -> dict[str, bool] | None:
    """Each human player of a finished match (CPU seats left out) and whether they left
    it (`left_seats`; a player in two seats left if they left either); None: the match
    did not finish. The reputation fold's row per player (casual or ranked alike)."""
    state = _finished_state(events)
    if state.placements is None:
        return None
    left = left_seats(state)
    out: dict[str, bool] = {}
    for seat, spec in enumerate(state.seats):
        if spec.player_id is not None and spec.cpu is None:
            out[spec.player_id] = out.get(spec.player_id, False) or left[seat]
    return out


def _rated(state: MatchState) -> list[RatedPlayer] | None:
    if state.placements is None:
        return None
    # The domain's one reading of a match's end (the arenas score it the same way).
    ends = seat_outcomes(state.placements, state.stood_in)
    players = [
        RatedPlayer(spec.player_id, ends[seat].place, ends[seat].left)
        for seat, spec in enumerate(state.seats)
        if spec.player_id is not None and spec.cpu is None
    ]
    ids = [p.player_id for p in players]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        return None
    return players


# --------------------------------------------------------------------- reading a page

# The match stream's events `match_outcome` looks at; nothing else is read or decoded.
_OUTCOME_TYPES: Final = ("MatchCreated", "SeatStoodIn", "SeatReclaimed", "MatchFinished")
# What the consumer follows in the global order: match ends.
_FINISHES: Final = ("MatchFinished",)
# The party's event that says whether its match is ranked (`_ranked`).
_OPENED: Final = "MatchOpened"


class _Finish(NamedTuple):
    """A `MatchFinished` of a match stream, where it is in the global order."""

    stream_id: str
    position: int
    recorded_at: datetime


class _Page(NamedTuple):
    """What one read of the log gave: the match ends in it (in global order), the cursor
    the consumer continues from (past the other events it covered too), how many ends
    it read, and whether committed events after it are held back by the global-order
    rule (a transaction older than theirs still runs)."""

    finishes: list[_Finish]
    last: Cursor | None
    events: int
    held_back: bool = False


_HELD_BACK_FIRST: Final = 0.01  # s: the first look again at held-back events


async def _driver(conn: AsyncConnection) -> Any:
    """The psycopg connection under `conn` (same session, same transaction)."""
    raw = await conn.get_raw_connection()
    return raw.driver_connection


async def finish_page(
    store: EventStore,
    after: Cursor,
    limit: int,
    *,
    until: Cursor | None = None,
    conn: AsyncConnection | None = None,
) -> _Page:
    """The match ends after `after` (up to `until`) in the store's commit-safe global
    order (`EventStore.read_page`, docs/design.md#the-global-order), on `conn` when given."""
    page = await store.read_page(after, limit, types=_FINISHES, until=until, conn=conn)
    finishes = [
        _Finish(e.stream_id, e.global_position, e.recorded_at)
        for e in page.events
        if is_match_stream(e.stream_id)
    ]
    return _Page(finishes, page.last, len(page.events), page.held_back)


def is_ranked(stream_id: str, row: MatchRow, opened: Sequence[EventData]) -> bool:
    """The party's `MatchOpened.ranked` for this match, else the `matches` column."""
    match_id = match_id_of(stream_id)
    for event in opened:
        data = msgspec.json.decode(event.data)
        if data.get("match_id") in (match_id, stream_id):
            return bool(data.get("ranked"))
    return row.ranked


class _Outcome(NamedTuple):
    """What rating one match takes: its rated players, the names they played under, and
    its number of seats (CPUs included: the `players` a place is out of)."""

    players: list[RatedPlayer]
    names: dict[str, str]  # player id -> its seat's `SeatSpec.name`
    seats: int


def _seat_count(events: Sequence[ev.Event]) -> int:
    """The match's seats (its `MatchCreated`), CPUs included."""
    for event in events:
        if isinstance(event, ev.MatchCreated):
            return len(event.seats)
    return 0


def _seat_names(events: Sequence[ev.Event]) -> dict[str, str]:
    """Each seated player's name in the match's `MatchCreated` (the name the ranking
    shows: the ranking service keeps its own, docs/ranking.md "Names")."""
    for event in events:
        if isinstance(event, ev.MatchCreated):
            return {s.player_id: s.name for s in event.seats if s.player_id is not None}
    return {}


class _Read(NamedTuple):
    """What a page of match ends gives: the outcome of each ranked match with something
    to rate, and the reputation rows of every ended match (`_REPUTATION_COLUMNS` order)."""

    outcomes: dict[str, _Outcome]
    reputation: list[tuple[Any, ...]]


async def _outcomes(store: EventStore, conn: AsyncConnection, finishes: Sequence[_Finish]) -> _Read:
    """The outcome of every ranked match among `finishes` that has something to rate
    (two queries on `conn`, whatever the number of matches; the others are absent), and
    a reputation row per human player of every one of them, casual or ranked.

    The `matches` rows first (no row: casual); then, in one read, the events that decide
    ranked or not (the parties' `MatchOpened`) and what rating and reputation need of
    each match."""
    streams = list(dict.fromkeys(f.stream_id for f in finishes))
    if not streams:
        return _Read({}, [])
    rows = await match_rows.read_rows(conn, streams)
    parties = {stream: PARTY_PREFIX + row.party_id for stream, row in rows.items()}
    events = await store.read_streams(
        [*streams, *dict.fromkeys(parties.values())], types=(*_OUTCOME_TYPES, _OPENED), conn=conn
    )
    out: dict[str, _Outcome] = {}
    ranked: dict[str, bool] = {}
    leavers: dict[str, dict[str, bool]] = {}
    for stream in streams:
        row = rows.get(stream)
        ranked[stream] = row is not None and is_ranked(stream, row, events.get(parties[stream], ()))
        stream_events = [e.event for e in events.get(stream, ())]
        who = match_leavers(stream_events)
        if who is not None:
            leavers[stream] = who
        if not ranked[stream]:
            continue
        players = match_outcome(stream_events)
        if players is not None:
            names = _seat_names(stream_events)
            out[stream] = _Outcome(players, names, _seat_count(stream_events))
    reputation = [
        (player, f.stream_id, f.position, f.recorded_at, ranked[f.stream_id], left)
        for f in finishes
        for player, left in sorted(leavers.get(f.stream_id, {}).items())
    ]
    return _Read(out, reputation)


# ------------------------------------------------------------------------ rating matches


class _Columns(NamedTuple):
    """A table's columns as COPY writes them, and their types (binary COPY)."""

    names: str
    types: tuple[str, ...]


def _column_names(table: sa.Table) -> str:
    """The table's columns in catalog order (services/ranking/tables.py): the order of
    the rows `_Book` makes."""
    return ", ".join(c.name for c in table.columns)


_CHANGE_COLUMNS: Final = _Columns(
    _column_names(tables.rating_changes),
    # `params` goes as ready-made jsonb wire bytes (see `_PARAMS`), hence "bytea" here:
    # in binary COPY the server reads each field with its column's own input (jsonb);
    # the type named here only picks how psycopg writes the Python value (bytes as is).
    ("text", "text", "text", "int8", "int4", "int4", "bool")
    + ("float8",) * 6
    + ("bytea", "text", "timestamptz"),
)
_REPUTATION_COLUMNS: Final = _Columns(
    _column_names(tables.reputation_matches),
    ("text", "text", "int8", "timestamptz", "bool", "bool"),
)
_RATING_COLUMNS: Final = _Columns(
    _column_names(tables.ratings),
    ("text", "text", "float8", "float8", "float8", "float8", "bool", "int4", "timestamptz", "text"),
)
# Each model's parameters in jsonb's binary wire format: version byte 1, then the JSON
# text (what `jsonb_recv` reads). Encoded once, not once per row.
_PARAMS: Final = {name: b"\x01" + msgspec.json.encode(m.params) for name, m in MODELS.items()}


class _Book:
    """Skills per model and player, updated match after match in memory (global order),
    and the rows those updates make: `changes` (one per model, match and player, in the
    `rating_changes` column order) and, through `rating_rows`, the players' new `ratings`.

    The live consumer fills it from the locked `ratings` rows of a batch's players; a
    recompute starts it empty and keeps it for the whole log. Both rate every match with
    this one method, so they give the same floats."""

    def __init__(self) -> None:
        self.skills: dict[str, dict[str, Skill]] = {name: {} for name in MODELS}
        self.last_match: dict[str, datetime] = {}  # player -> last rated match's end
        self.names: dict[str, str] = {}  # player -> name in their last rated match
        self.changes: list[tuple[Any, ...]] = []
        self._initial = {name: m.initial() for name, m in MODELS.items()}

    def rate(self, finish: _Finish, outcome: _Outcome) -> None:
        players = outcome.players
        ids = [p.player_id for p in players]
        places = [p.place for p in players]
        left = [p.left for p in players]
        n = outcome.seats
        stream, position, at = finish
        add = self.changes.append
        for name, model in MODELS.items():
            skills = self.skills[name]
            initial = self._initial[name]
            before = [skills.get(pid) or initial for pid in ids]
            after = rate_match(name, before, places, left)
            params, library, display = _PARAMS[name], model.library, model.display
            for p, b, a in zip(players, before, after, strict=True):
                skills[p.player_id] = a
                add(
                    (
                        name,
                        stream,
                        p.player_id,
                        position,
                        p.place,
                        n,
                        p.left,
                        b.mu,
                        b.sigma,
                        display(b),
                        a.mu,
                        a.sigma,
                        display(a),
                        params,
                        library,
                        at,
                    )
                )
        for pid in ids:
            self.last_match[pid] = at
            self.names[pid] = outcome.names[pid]

    def rating_rows(self) -> list[tuple[Any, ...]]:
        """The `ratings` rows of every player rated since the book was made, in the
        table's key order (model, player)."""
        rows = []
        for name, model in MODELS.items():
            skills = self.skills[name]
            for pid in sorted(self.last_match):
                s = skills[pid]
                rows.append(
                    (
                        name,
                        pid,
                        s.mu,
                        s.sigma,
                        s.volatility,
                        model.display(s),
                        model.provisional(s),
                        s.matches,
                        self.last_match[pid],
                        self.names[pid],
                    )
                )
        return rows


async def _copy(
    driver: Any, table: str, columns: _Columns, rows: Sequence[tuple[Any, ...]], *, every: int = 0
) -> None:
    """COPY `rows` into `table` (in the connection's current transaction, if any).

    Binary: floats travel as their 8 bytes (exact by construction) and the server parses
    no text for them. With `every`, hands the event loop back every that many rows, so
    a COPY running as its own task keeps the server fed while other work goes on."""
    if not rows:
        return
    sql = f"COPY {table} ({columns.names}) FROM STDIN (FORMAT BINARY)"
    async with driver.cursor() as cur, cur.copy(sql) as copy:
        copy.set_types(list(columns.types))
        for i, row in enumerate(rows, 1):
            await copy.write_row(row)
            if every and i % every == 0:
                await asyncio.sleep(0)


# The live consumer's upsert of a batch's final ratings: one statement, one array per
# column (array literals built by `_literal`).
_UPSERT: Final = (
    "INSERT INTO {table} (" + _RATING_COLUMNS.names + ") SELECT * FROM unnest("
    "%s::text[], %s::text[], %s::float8[], %s::float8[], %s::float8[], %s::float8[],"
    " %s::bool[], %s::int[], %s::timestamptz[], %s::text[])"
    " ON CONFLICT (model, player_id) DO UPDATE SET mu = EXCLUDED.mu, sigma = EXCLUDED.sigma,"
    " volatility = EXCLUDED.volatility, rating = EXCLUDED.rating,"
    " provisional = EXCLUDED.provisional, matches = EXCLUDED.matches,"
    " last_match_at = EXCLUDED.last_match_at, name = EXCLUDED.name"
)


def _literal(values: Iterable[Any]) -> str:
    """A PostgreSQL array literal of `values` (str, float, int, bool or datetime), to pass
    as one text parameter cast to the array type.

    psycopg adapts a Python list element by element in Python (about 3 µs each); this is
    a join. Strings are quoted and escaped; datetimes go as ISO 8601 with their offset;
    floats as `repr`, the shortest text that reads back to the same double, so nothing
    is lost."""
    out = []
    for v in values:
        if isinstance(v, str):
            out.append('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"')
        elif isinstance(v, datetime):
            out.append('"' + v.isoformat() + '"')
        elif isinstance(v, float):
            out.append(repr(v))
        elif isinstance(v, bool | int):
            out.append(str(v))
        else:
            raise TypeError(f"no array literal for {type(v).__name__}")
    return "{" + ",".join(out) + "}"


async def _apply_batch(
    store: EventStore, conn: AsyncConnection, finishes: Sequence[_Finish], tables: Tables
) -> int:
    """Rate the ranked matches among `finishes`, in order, against the current rows of
    `tables` (locked until the transaction ends), and add every ended match to the
    reputation fold; returns the number of matches rated.

    A fixed number of statements whatever the batch's size: two reads for the outcomes,
    one COPY of the reputation rows, one to lock and read the players' ratings, one
    upsert, one COPY. Plain COPY (no ON CONFLICT) into `changes` and `reputation`: a
    second rating or a second reputation row of a match violates its primary key."""
    read = await _outcomes(store, conn, finishes)
    driver = await _driver(conn)
    await _copy(driver, tables.reputation, _REPUTATION_COLUMNS, read.reputation)
    outcomes = read.outcomes
    if not outcomes:
        return 0
    ids = sorted({p.player_id for outcome in outcomes.values() for p in outcome.players})
    book = _Book()
    async with driver.cursor() as cur:
        await cur.execute(
            f"SELECT model, player_id, mu, sigma, volatility, matches FROM {tables.ratings}"
            " WHERE player_id = ANY(%s::text[]) ORDER BY model, player_id FOR UPDATE",
            (_literal(ids),),
        )
        for model, pid, mu, sigma, volatility, matches in await cur.fetchall():
            if model in book.skills:
                book.skills[model][pid] = Skill(
                    mu=mu, sigma=sigma, volatility=volatility, matches=matches
                )
    rated = 0
    for finish in finishes:
        outcome = outcomes.get(finish.stream_id)
        if outcome is not None:
            book.rate(finish, outcome)
            rated += 1
    columns = list(zip(*book.rating_rows(), strict=True))
    async with driver.cursor() as cur:
        await cur.execute(_UPSERT.format(table=tables.ratings), [_literal(c) for c in columns])
    await _copy(driver, tables.changes, _CHANGE_COLUMNS, book.changes)
    return rated


async def head_cursor(engine: AsyncEngine) -> Cursor:
    """The cursor of the newest event in the global order (START: none): the store's
    `head` (the bench's and operators' tools ask the consumer module)."""
    return await EventStore(engine).head()


async def leader_name(engine: AsyncEngine) -> str | None:
    """The `application_name` of the session holding `CONSUMER_LOCK` in this database
    (the consuming instance's, when each instance names its sessions, as `ludo up` and
    ludo_cli/cluster.py do); None while no one consumes. pg_locks is server-wide: the
    database is part of the filter."""
    async with engine.connect() as conn:
        name: str | None = await conn.scalar(
            sa.text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a"
                " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                " AND l.database = (SELECT oid FROM pg_database"
                " WHERE datname = current_database())"
                " AND l.classid::bigint = :hi AND l.objid::bigint = :lo AND l.objsubid = 1"
            ),
            {"hi": CONSUMER_LOCK >> 32, "lo": CONSUMER_LOCK & 0xFFFFFFFF},
        )
    return name


# ------------------------------------------------------------------------------ consumer


class RankingConsumer(LeasedFollower):
    """Follows the log and keeps the live rating tables (see the module docstring)."""

    label = "ranking"
    EVENTS: ClassVar[dict[str, str]] = {
        "active": "ranking_consumer_active",
        "standing_by": "ranking_consumer_standing_by",
        "error": "ranking_consumer_error",
        "batch_ended": "ranking_batch_ended",
        "batch_not_ended": "ranking_batch_not_ended",
    }

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore | None = None,
        *,
        name: str = CHECKPOINT,
        batch: int = 500,
        poll: float = 1.0,
        standby_poll: float = 2.0,
        lease: float = LEASE,
    ) -> None:
        super().__init__(
            engine,
            store,
            name=name,
            lock_key=CONSUMER_LOCK,
            batch_lock=BATCH_LOCK,
            batch=batch,
            poll=poll,
            standby_poll=standby_poll,
            lease=lease,
        )

    async def step(self) -> int:
        """One batch in one transaction; returns the number of match ends read (0: caught
        up, as far as the global order lets a follower read).

        The checkpoint row is locked first; the match ends after it are read, every ranked
        match among them is rated (a fixed number of statements per batch, see
        `_apply_batch`), and the checkpoint moves to where the read reached; then commit."""
        async with self.engine.begin() as conn:
            driver = await _driver(conn)
            async with driver.cursor() as cur:
                await cur.execute(self._fence)
            cursor = await read_checkpoint(conn, self.name, lock=True)
            page = await finish_page(self.store, cursor, self.batch, conn=conn)
            self.held_back = page.held_back and page.events < self.batch
            if page.last is None:
                return 0
            rated = await _apply_batch(self.store, conn, page.finishes, LIVE)
            await write_checkpoint(conn, self.name, page.last)
            events = page.events
        if rated:
            _log.info("matches_rated", matches=rated, events=events)
        return events


# ----------------------------------------------------------------------------- hashing


async def ratings_hash(engine: AsyncEngine, table: str = "ratings") -> tuple[str, int]:
    """sha256 over every rating row (exact float bits, the name included), and the number
    of rows."""
    digest = hashlib.sha256()
    async with engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        async with (await _driver(auto)).cursor() as cur:
            await cur.execute(
                "SELECT model, player_id, mu, sigma, volatility, rating, provisional, "
                f"matches, last_match_at, name FROM {table} ORDER BY model, player_id"
            )
            rows = await cur.fetchall()
    for model, player, mu, sigma, volatility, rating, provisional, matches, at, name in rows:
        line = "|".join(
            (
                model,
                player,
                float(mu).hex(),
                float(sigma).hex(),
                float(volatility).hex(),
                float(rating).hex(),
                str(int(provisional)),
                str(matches),
                at.isoformat(),
                msgspec.json.encode(name).decode(),  # quoted: a name may hold "|"
            )
        )
        digest.update(line.encode() + b"\n")
    return digest.hexdigest(), len(rows)


# ---------------------------------------------------------------------------- recompute


async def recompute(engine: AsyncEngine, *, batch: int = 2000) -> str:
    """Rebuild all ratings from the log into new tables and swap them in (blue/green).

    The live tables keep serving (and the live consumer keeps writing them) until the new
    ones are complete; then, in one transaction holding the consumer's checkpoint row, the
    new tables replace the live ones and the checkpoint moves to where the rebuild stopped,
    so the live consumer continues from there on the new tables. Returns the ratings hash.

    A pipeline of pages, not one match at a time: the log's head is fixed first and every
    transaction up to it waited for; then, page after page of `batch` match ends (one query
    for the page, two for the outcomes of all its matches), the matches are rated in
    global order against skills kept in memory for the whole rebuild, and the page's
    `rating_changes_next` rows go in with one COPY (its own short transaction, so the
    rebuild never holds back the live consumer's `xmin` for long). `ratings_next` is
    written once, with one COPY, at the end. The rebuild reads the tables directly, not
    through the event store.
    """
    if batch < 1:
        raise ValueError("batch must be at least 1")
    try:
        # Without the services' statement timeout: the rebuild's statements grow with the
        # log, and the service's own engine would end them (LUDO_STATEMENT_TIMEOUT).
        async with untimed(engine) as rebuilding:
            return await _recompute(rebuilding, batch)
    except sa.exc.DBAPIError as exc:
        if isinstance(exc.orig, psycopg.errors.InsufficientPrivilege):
            reason = str(exc.orig).strip().splitlines()[0]
            raise RecomputeNotPermitted(_NOT_PERMITTED.format(reason=reason)) from None
        raise


async def _recompute(engine: AsyncEngine, batch: int) -> str:
    async with engine.connect() as lock_conn:
        auto = await lock_conn.execution_options(isolation_level="AUTOCOMMIT")
        if not await auto.scalar(sa.select(sa.func.pg_try_advisory_lock(RECOMPUTE_LOCK))):
            raise RecomputeBusy("another recompute is running")
        try:
            async with engine.begin() as conn:
                await _create_next(conn)
            # Up to the head as of now, once every transaction that could still add an
            # event before it has ended (the xid8 rule): two recomputes of one log agree.
            store = EventStore(engine)
            head = await store.head()
            await store.settle(head)
            matches = await _rebuild(engine, store, head, batch)
            # Statistics before the swap: a table made by CREATE TABLE + COPY has none,
            # and until autovacuum got to it the planner would guess (the leaderboard,
            # a player's history, the dashboard's queries). For the history, only the
            # columns those queries filter, join, group or sort on: all of them (params
            # is jsonb) would take three times as long.
            async with engine.connect() as conn:
                stats = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await stats.execute(sa.text(f"ANALYZE {NEXT.ratings}"))
                await stats.execute(sa.text(f"ANALYZE {NEXT.reputation}"))
                await stats.execute(
                    sa.text(
                        f"ANALYZE {NEXT.changes} "
                        "(model, match_stream, player_id, position, finished_at)"
                    )
                )
            await _index_next(engine)
            async with engine.begin() as conn:
                await read_checkpoint(conn, CHECKPOINT, lock=True)
                for live, new in LIVE.pairs(NEXT):
                    await _copy_grants(conn, live, new)
                    await conn.execute(sa.text(f"ALTER TABLE {live} RENAME TO {live}_old"))
                    await conn.execute(sa.text(f"ALTER TABLE {new} RENAME TO {live}"))
                    await conn.execute(sa.text(f"DROP TABLE {live}_old"))
                await write_checkpoint(conn, CHECKPOINT, head)
        finally:
            await auto.execute(sa.select(sa.func.pg_advisory_unlock(RECOMPUTE_LOCK)))
    digest, rows = await ratings_hash(engine)
    _log.info(
        "ratings_recomputed",
        hash=digest,
        rows=rows,
        matches=matches,
        tx=head.tx,
        position=head.position,
    )
    return digest


async def _rebuild(engine: AsyncEngine, store: EventStore, head: Cursor, batch: int) -> int:
    """Rates every ranked match up to `head` into the `NEXT` tables; returns their number.

    Three things overlap, on two connections: the next page is read (and its outcomes
    decoded) while this one is rated, and the previous page's COPY runs while this one
    is rated. Rating hands the event loop back every few matches so that the other two
    keep the server busy on its own core."""
    book = _Book()
    rated = 0
    async with engine.connect() as read_conn, engine.connect() as write_conn:
        reader = await read_conn.execution_options(isolation_level="AUTOCOMMIT")
        writer = await _driver(await write_conn.execution_options(isolation_level="AUTOCOMMIT"))

        async def fetch(after: Cursor) -> tuple[_Page, _Read]:
            page = await finish_page(store, after, batch, until=head, conn=reader)
            return page, await _outcomes(store, reader, page.finishes)

        pending: list[asyncio.Task[Any]] = []
        try:
            fetching = asyncio.create_task(fetch(START))
            pending.append(fetching)
            writing: asyncio.Task[None] | None = None
            while True:
                page, read = await fetching
                outcomes = read.outcomes
                if page.last is None:
                    break
                fetching = asyncio.create_task(fetch(page.last))
                pending.append(fetching)
                for i, finish in enumerate(page.finishes, 1):
                    outcome = outcomes.get(finish.stream_id)
                    if outcome is not None:
                        book.rate(finish, outcome)
                        rated += 1
                    if i % _YIELD_EVERY == 0:
                        await asyncio.sleep(0)
                if writing is not None:
                    await writing
                changes, book.changes = book.changes, []
                writing = asyncio.create_task(
                    _copy_page(writer, changes, read.reputation, every=_YIELD_EVERY)
                )
                pending.append(writing)
            if writing is not None:
                await writing
            await _copy(writer, NEXT.ratings, _RATING_COLUMNS, book.rating_rows())
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
    return rated


_YIELD_EVERY: Final = 32


async def _copy_page(
    writer: Any,
    changes: Sequence[tuple[Any, ...]],
    reputation: Sequence[tuple[Any, ...]],
    every: int,
) -> None:
    """One page of a rebuild into the `NEXT` tables: its rating changes, its reputation."""
    await _copy(writer, NEXT.changes, _CHANGE_COLUMNS, changes, every=every)
    await _copy(writer, NEXT.reputation, _REPUTATION_COLUMNS, reputation, every=every)


async def _create_next(conn: AsyncConnection) -> None:
    """Empty `NEXT` tables shaped like the live ones, without their indexes (built after
    the load, `_index_next`: faster than keeping them up to date row by row)."""
    for live, new in LIVE.pairs(NEXT):
        await conn.execute(sa.text(f"DROP TABLE IF EXISTS {new}"))
        await conn.execute(
            sa.text(f"CREATE TABLE {new} (LIKE {live} INCLUDING ALL EXCLUDING INDEXES)")
        )


# One GRANT per privilege that another role holds on a table, for the same on another.
_GRANTS: Final = (
    "SELECT format('GRANT %s ON %I TO %s%s', a.privilege_type, CAST(:new AS text),"
    " CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END,"
    " CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)"
    " FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a"
    " LEFT JOIN pg_roles r ON r.oid = a.grantee"
    " WHERE c.oid = CAST(:live AS regclass) AND a.grantee <> c.relowner"
)


async def _copy_grants(conn: AsyncConnection, live: str, new: str) -> None:
    """Gives `new` every privilege other roles hold on `live`, in the swap's transaction.

    `CREATE TABLE … (LIKE …)` copies no privileges: without this, a recompute run as the
    owner left the app role (LUDO_DB_APP_ROLE) unable to read or write the ratings it
    swapped in, and the ranking service failed every batch until `ludo db upgrade` ran."""
    grants = await conn.scalars(sa.text(_GRANTS), {"live": live, "new": new})
    for grant in grants.all():
        await conn.execute(sa.text(grant))


async def _index_next(engine: AsyncEngine) -> None:
    """Gives the `NEXT` tables every index of the live ones (the primary key as such).

    The indexes are built side by side, each on its own connection and transaction
    (CREATE INDEX takes a SHARE lock, which does not conflict with itself), with room to
    sort in memory; then one transaction turns the unique index of each primary key into
    the table's primary key."""
    builds: list[str] = []
    keys: list[tuple[str, str]] = []
    async with engine.connect() as conn:
        taken: set[str] = set()
        for live, new in LIVE.pairs(NEXT):
            indexes = (
                await conn.execute(
                    sa.text(
                        "SELECT c.relname, i.indisprimary, i.indisunique,"
                        " pg_get_indexdef(i.indexrelid) FROM pg_index i"
                        " JOIN pg_class c ON c.oid = i.indexrelid"
                        " WHERE i.indrelid = CAST(:t AS regclass) ORDER BY c.relname"
                    ),
                    {"t": live},
                )
            ).all()
            for index, primary, unique, definition in indexes:
                # "CREATE [UNIQUE] INDEX name ON [ONLY] schema.table USING method (...)":
                # the same method, keys and options, on the new table, named after the
                # live index ("ratings_leaderboard_idx" -> "ratings_next_leaderboard_idx",
                # with a digit while the live table holds that name from the last rebuild).
                _, _, using = definition.partition(" USING ")
                role = index.removeprefix(f"{new}_").removeprefix(f"{live}_")
                name = await _free_name(conn, f"{new}_{role.rstrip('0123456789')}", taken)
                taken.add(name)
                kind = "UNIQUE INDEX" if unique else "INDEX"
                builds.append(f"CREATE {kind} {name} ON {new} USING {using}")
                if primary:
                    keys.append((new, name))
    slots = asyncio.Semaphore(_INDEX_BUILDS)

    async def build(statement: str) -> None:
        async with slots, engine.begin() as conn:
            await conn.execute(sa.text(f"SET LOCAL maintenance_work_mem = '{_INDEX_MEMORY}'"))
            await conn.execute(sa.text(statement))

    await asyncio.gather(*(build(b) for b in builds))
    async with engine.begin() as conn:
        for table, name in keys:
            await conn.execute(sa.text(f"ALTER TABLE {table} ADD PRIMARY KEY USING INDEX {name}"))


_INDEX_BUILDS: Final = 3  # index builds at once (connections)
_INDEX_MEMORY: Final = "256MB"  # maintenance_work_mem of each build


async def _free_name(conn: AsyncConnection, base: str, taken: set[str]) -> str:
    """`base`, or `base1`, `base2`, ...: the first name that neither a relation nor
    `taken` uses yet."""
    n = 0
    while True:
        name = base if n == 0 else f"{base}{n}"
        if name not in taken and await conn.scalar(
            sa.text("SELECT to_regclass(:n) IS NULL"), {"n": name}
        ):
            return name
        n += 1
