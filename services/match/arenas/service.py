"""Arena tournaments (docs/arenas.md): creating, joining, pausing, continuing, cancelling,
and the runner that pairs, scores and ends them, on any instance.

Each arena is a stream folded by `domain.arena`'s Decider. This process keeps each arena's
fold (and its events, to decide on a copy) and catches it up from its version before
deciding (`_current`).

- **One writer at a time per arena**, over all instances: every decision takes the
  transaction-scoped advisory lock `arena:<id>` and reads the stream after it, and its
  append carries the version it decided on. Commands wait for the lock; the runner's pass
  waits for it at most 2 s (`lock_timeout`: a rush of joins takes it in turns, the pass
  takes its turn among them) and otherwise gives up until its next pass: the pass of an
  arena runs in exactly one place at a time (a second instance's pass after it finds the
  work done), and a killed instance's lock goes with its connection. In
  this process one task at a time waits for an arena's lock (`_writing`), so a rush of
  joins holds one pooled connection, not one each (the pools' lesson, docs/pools.md).
- **The pass** (`tick`, about once a second for every arena that has work, at once after a
  hint that one of its matches changed): the matches that ended are scored (from the
  match's own fold, `domain.arena.match_outcome`), the arena is ended at its clock, players
  waiting but away past the grace are paused (`gone`), and the waiting players connected
  now are paired. What needs no lock (the ended matches' folds, who is connected, who
  plays elsewhere) is read before it; under it the pass only decides and writes. The
  events, the parties and the matches they open go in ONE transaction: a table exists with
  its party and match, or not at all.
- **Presence**: a waiting player is connected when their arena (or lobby) socket was seen
  lately (`lobby_presence`), or their last arena match's table is open (`seat_presence`):
  the player who stays on the result of their match is paired again at once.
- **Schedules** (`arena_schedule.py`): each pass also keeps the operator's recurring
  arenas created, the one running and the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import arena as ar
from domain.chain import GENESIS
from domain.decider import MatchState
from domain.errors import AppError, Conflict, Forbidden, Invalid, NotFound
from domain.pool import PoolPlayer
from domain.streams import (
    MATCH_PREFIX,
    TOURNAMENT_PREFIX,
    match_stream,
    tournament_stream,
)
from services.match.arenas.schemas import ArenaListOut, ArenaSummary, ArenaView
from services.match.arenas.views import arena_view, summary_of
from services.match.guests import Player
from services.match.parties.my_tables import holding, tables_of
from services.match.parties.service import Opened, PartyCommands, SeatedTable
from services.match.play.reads import MatchReads
from services.match.players.lobby_presence import PRESENT, LobbyPresence
from services.match.pools.service import Pools, ranked_paused
from services.shared.arena_schedule import Schedule, arena_id_for, occurrences
from services.shared.eventstore import ConcurrencyError, EventStore, SideWrite
from services.shared.logging import describe_exception
from services.shared.standing import completions, ratings, standing

__all__ = ["PASS_EVERY", "PASS_GAP", "Arenas", "Passed"]

_log = structlog.get_logger(__name__)

PASS_EVERY: Final = 1.0  # seconds between two passes of the runner when nothing wakes it
PASS_GAP: Final = 0.25  # seconds: the least time between the starts of two passes
_SCHEDULE_EVERY: Final = 30.0  # seconds between two checks of the recurring arenas
_FOLDS: Final = 256  # arenas whose fold this process keeps
_FINISHED_SHOWN: Final = 20  # finished arenas in the list
_READ_ANYWAY: Final = 20  # passes: every twentieth reads the listing, hint or not

_LOCK_ARENA = sa.text("SELECT pg_advisory_xact_lock(hashtext('arena:' || :id))")
# How long a pass waits for the arena's lock (then it gives up until the next pass).
_LOCK_WAIT = sa.text("SET LOCAL lock_timeout = '2s'")
# The arenas a runner has work in, or will have: not done (done: finished, or cancelled
# with no match running).
_WORK = sa.text("SELECT arena_id, updated_at FROM arenas WHERE NOT done")
_LIST = sa.text(
    """
    (SELECT summary, done, starts_at, now() AS now FROM arenas
      WHERE NOT private AND NOT done ORDER BY starts_at LIMIT 100)
    UNION ALL
    (SELECT summary, done, starts_at, now() AS now FROM arenas
      WHERE NOT private AND done ORDER BY ends_at DESC LIMIT :finished)
    """
)
# The tables open now among the seats given (match stream, seat): a player on the result
# of their arena match is connected (the seat_presence rows of play/presence.py).
_AT_TABLES = sa.text(
    """
    SELECT stream_id, seat FROM seat_presence
    WHERE stream_id = ANY(CAST(:streams AS text[])) AND connections > 0
    """
)
# The arenas' listing, a side write of each append to an arena's stream.
_LISTING = """
    INSERT INTO arenas (arena_id, private, schedule, starts_at, ends_at, status, done, summary,
                        updated_at)
    SELECT %(ar_id)s, %(ar_private)s, %(ar_schedule)s, to_timestamp(%(ar_starts)s),
           to_timestamp(%(ar_ends)s), %(ar_status)s, %(ar_done)s,
           CAST(%(ar_summary)s AS jsonb), now()
    FROM appended
    ON CONFLICT (arena_id) DO UPDATE
        SET status = EXCLUDED.status, done = EXCLUDED.done, summary = EXCLUDED.summary,
            updated_at = now()
    RETURNING 1
"""
_LOCK_LISTING = "SELECT 1 FROM arenas WHERE arena_id = %(ar_id)s FOR UPDATE"

_ERRORS: Final[dict[int, type[AppError]]] = {403: Forbidden, 404: NotFound, 422: Invalid}


def _refused(rejection: ar.ArenaRejection) -> AppError:
    kind = _ERRORS.get(rejection.status, Conflict)
    return kind(rejection.reason, code=rejection.code, field=rejection.field)


class Passed(msgspec.Struct, frozen=True):
    """What one pass of an arena did (for the log and the tests)."""

    scored: int = 0
    paired: tuple[ar.ArenaTable, ...] = ()
    gone: tuple[str, ...] = ()
    ended: bool = False


class _Seen(msgspec.Struct):
    """Who a pass found connected (`present`), seconds since each was last seen on a
    socket (`ages`), who plays a match or sits at a party elsewhere (`busy`), and the
    matches whose end it scores (their players' wait starts with it)."""

    present: set[str]
    ages: dict[str, float]
    busy: set[str]
    ended: frozenset[str]  # the arena matches this pass scores


class _Fold:
    """An arena's fold in this process, with its events (decisions are made on a copy)
    and what the service saw of them: when each player was last freed by a result (the
    event's time), and when each match was paired."""

    __slots__ = ("events", "freed_at", "paired_at", "state")

    def __init__(self) -> None:
        self.state = ar.ArenaState()
        self.events: list[ar.ArenaEvent] = []
        self.freed_at: dict[str, float] = {}
        self.paired_at: dict[str, float] = {}

    def trial(self) -> ar.ArenaState:
        """A copy of the fold to decide on (re-folded: an arena is a few hundred events)."""
        return ar.fold(self.events)


class Arenas:
    """The arenas of this process (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        parties: PartyCommands,
        reads: MatchReads,
        presence: LobbyPresence,
        pools: Pools,
        schedule: Sequence[Schedule],
        grace: float,
    ) -> None:
        self.engine = engine
        self.store = store
        self.parties = parties
        self.reads = reads
        self.presence = presence
        self.pools = pools
        self.schedule = tuple(schedule)
        self.grace = grace
        self._folds: OrderedDict[str, _Fold] = OrderedDict()
        self._reading: dict[str, asyncio.Lock] = {}
        self._writing: dict[str, asyncio.Lock] = {}
        self._wake = asyncio.Event()
        self._watched: dict[str, str] = {}  # running match stream -> arena id
        self._scheduled_at = 0.0
        # What may have changed since this process last read it: arenas whose stream or
        # running matches a hint named, and the list of arenas with work. An idle site's
        # passes then cost no query; the listing is read anyway every `_READ_ANYWAY`
        # passes, in case a hint was lost (an arena whose row moved is read again).
        self._stale: set[str] = set()
        self._list_stale = True
        self._work: dict[str, Any] = {}  # arena id -> its listing row's updated_at
        self._idle_passes = 0
        self.passes = 0  # passes that took an arena's lock (diagnostics)
        # The arenas' clock (seconds since the epoch): every command and pass is decided
        # at its reading. The service's own; a test sets another to stand at an instant.
        self.clock: Callable[[], float] = time.time

    # ---------------------------------------------------------------------------- reads

    def heard(self, stream_id: str) -> None:
        """A hint for `stream_id`: a running arena match's wakes the runner (its end is
        scored and its players paired again at once), as does any arena's."""
        if stream_id.startswith(TOURNAMENT_PREFIX):
            self._stale.add(stream_id.removeprefix(TOURNAMENT_PREFIX))
            self._list_stale = True
            self._wake.set()
        elif stream_id.startswith(MATCH_PREFIX) and stream_id in self._watched:
            self._stale.add(self._watched[stream_id])
            self._wake.set()

    async def _current(self, arena_id: str) -> _Fold:
        """The arena's fold, caught up (one reader at a time per arena, so an event is
        never folded twice); 404 for an arena nobody created."""
        lock = self._reading.setdefault(arena_id, asyncio.Lock())
        async with lock:
            fold = self._folds.get(arena_id) or _Fold()
            stored = await self.store.read_stream(tournament_stream(arena_id), fold.state.version)
            for record in stored:
                event = ar.decode_arena_event(
                    record.data, type_name=record.type, schema_version=record.schema_version
                )
                ar.apply(fold.state, event)
                fold.events.append(event)
                at = record.recorded_at.timestamp()
                if isinstance(event, ar.ResultScored):
                    for result in event.results:
                        fold.freed_at[result.player_id] = at
                    self._watched.pop(match_stream(event.match_id), None)
                elif isinstance(event, ar.TablesPaired):
                    for table in event.tables:
                        fold.paired_at[table.match_id] = event.at
                        self._watched[match_stream(table.match_id)] = arena_id
            if fold.state.created is None:
                raise NotFound(f"no arena {arena_id}")
            self._folds[arena_id] = fold
            self._folds.move_to_end(arena_id)
            while len(self._folds) > _FOLDS:
                old, _ = self._folds.popitem(last=False)
                self._reading.pop(old, None)
            return fold

    async def state(self, arena_id: str) -> ar.ArenaState:
        """The arena now (404 for an unknown one)."""
        return (await self._current(arena_id)).state

    async def view(self, arena_id: str, player_id: str | None = None) -> ArenaView:
        """`GET /api/tournaments/{id}`: the arena in full, for `player_id`."""
        state = await self.state(arena_id)
        ids = list(state.entrants)
        rates = await completions(self.engine, ids)
        return arena_view(state, self.clock(), rates, await ratings(self.engine, ids), player_id)

    def paired_lately(self, arena_id: str, match_id: str, since: float) -> bool:
        """Was `match_id` paired at or after `since` (a socket that connects just after its
        player's pairing still takes them to the table)?"""
        fold = self._folds.get(arena_id)
        return fold is not None and fold.paired_at.get(match_id, 0.0) >= since

    async def listing(self) -> ArenaListOut:
        """`GET /api/tournaments`: the public arenas, upcoming, live and finished."""
        async with self.engine.connect() as conn:
            rows = (await conn.execute(_LIST, {"finished": _FINISHED_SHOWN})).all()
        upcoming, live, finished = [], [], []
        for row in rows:
            summary = msgspec.convert(row.summary, ArenaSummary)
            if row.done:
                finished.append(summary)
            elif row.now < row.starts_at:
                summary.status = "upcoming"
                upcoming.append(summary)
            else:
                if summary.status == "upcoming":
                    summary.status = "running"
                live.append(summary)
        return ArenaListOut(upcoming=upcoming, live=live, finished=finished)

    def playing_in(self, player_id: str, other_than: str | None = None) -> str | None:
        """An arena this process knows `player_id` plays in (joined, not paused, not over),
        other than `other_than`."""
        now = self.clock()
        for arena_id, fold in self._folds.items():
            entrant = fold.state.entrants.get(player_id)
            if (
                arena_id != other_than
                and entrant is not None
                and not entrant.paused
                and fold.state.status(now) in ("upcoming", "running")
            ):
                return arena_id
        return None

    # ------------------------------------------------------------------------- commands

    async def create(
        self,
        *,
        name: str,
        seats: int,
        rules: str,
        turn_limit: int,
        minutes: int,
        starts_at: float,
        private: bool,
        creator_id: str | None = None,
        schedule: str | None = None,
        arena_id: str | None = None,
        title: dict[str, str] | None = None,
    ) -> ar.ArenaState:
        """A new arena (a guest's private one, or a schedule's occurrence: `arena_id` then
        derived from it, and an arena created meanwhile by another instance is that one)."""
        arena_id = arena_id or str(uuid.uuid4())
        command = ar.CreateArena(
            arena_id=arena_id,
            name=name,
            seats=seats,
            rules=rules,
            turn_limit=turn_limit,
            starts_at=starts_at,
            minutes=minutes,
            private=private,
            creator_id=creator_id,
            schedule=schedule,
            title=title,
        )
        state = ar.ArenaState()
        decided = ar.decide(command, state)
        if isinstance(decided, ar.ArenaRejection):
            raise _refused(decided)
        ar.fold(decided, state)
        try:
            await self.store.append(
                tournament_stream(arena_id),
                0,
                decided,
                metadata={"actor": creator_id or "schedule"},
                prev_hash=GENESIS,
                side=[self._listing(state, self.clock())],
            )
        except (ConcurrencyError, ValueError):
            if schedule is None:
                raise
            # Another instance created this occurrence first: it is the same arena.
        self._wake.set()
        created = await self.state(arena_id)
        _log.info("arena_created", arena_id=arena_id, schedule=schedule, private=private)
        return created

    async def join(self, player: Player, arena_id: str, client_seed: str) -> ar.ArenaState:
        """Enter the arena (docs/arenas.md: every refusal changes nothing)."""
        state = await self.state(arena_id)
        if player.id not in state.entrants:  # the common refusals, before any lock
            await self._free_to_play(player.id, arena_id)
        mine = await standing(self.engine, player.id, dt.datetime.now(dt.UTC))
        if mine.ranked_block is not None and player.id not in state.entrants:
            raise ranked_paused(mine.ranked_block, "join an arena (every arena match is ranked)")
        return await self._decide(
            arena_id,
            lambda now: ar.JoinArena(
                player_id=player.id,
                name=player.name,
                rating=mine.rating,
                now=now,
                client_seed=client_seed,
            ),
            player.id,
        )

    async def pause(self, player: Player, arena_id: str) -> ar.ArenaState:
        """Stop being paired in the arena (a running match is still played out)."""
        return await self._decide(
            arena_id, lambda now: ar.PauseArena(player_id=player.id, now=now), player.id
        )

    async def resume(self, player: Player, arena_id: str) -> ar.ArenaState:
        """Be paired again (the 'continue' button)."""
        state = await self.state(arena_id)
        entrant = state.entrants.get(player.id)
        mine = await standing(self.engine, player.id, dt.datetime.now(dt.UTC))
        if entrant is not None and entrant.paused:
            if mine.ranked_block is not None:
                raise ranked_paused(mine.ranked_block, "play arena matches")
            await self._free_to_play(player.id, arena_id)
        return await self._decide(
            arena_id,
            lambda now: ar.ContinueArena(player_id=player.id, rating=mine.rating, now=now),
            player.id,
        )

    async def cancel(self, arena_id: str, reason: str, by: str) -> ar.ArenaState:
        """Cancel the arena (the caller checked who may)."""
        state = await self._decide(
            arena_id, lambda now: ar.CancelArena(reason=reason, by=by, now=now), by
        )
        _log.info(
            "arena_cancelled", arena_id=arena_id, by="operator" if by == "operator" else "creator"
        )
        return state

    async def _free_to_play(self, player_id: str, arena_id: str) -> None:
        """Refuse a player who waits in a quick-play pool, plays in another arena, or
        plays a running match or sits at an open party elsewhere."""
        pool = await self.pools.waiting_in(player_id)
        if pool is not None:
            raise Conflict(
                f"you are waiting in the {pool.name} quick-play pool: leave it first",
                code="seated_elsewhere",
            )
        other = self.playing_in(player_id, other_than=arena_id)
        if other is not None:
            raise Conflict(
                f"you play in the arena {other}: pause it first", code="seated_elsewhere"
            )
        table = holding(await tables_of(self.engine, self.store, player_id))
        if table is not None:
            if table.status == "open":
                detail = f"you sit at the open party {table.party_id}: leave it first"
            else:
                detail = f"your match {table.match_id} is still running: finish it first"
            raise Conflict(detail, code="seated_elsewhere")

    async def _decide(
        self, arena_id: str, command: Callable[[float], ar.ArenaCommand], actor: str
    ) -> ar.ArenaState:
        """Decide `command(now)` on the arena under its lock and append what it yields.
        `now` is read under the lock, after the stream is caught up: every command is
        decided against the arena's clock at the moment it is decided (a pause a few ms
        after the end is refused, whether or not the runner has recorded the end yet), and
        the times in the stream never go back."""
        await self.state(arena_id)  # 404 before any lock
        async with (
            self._writing.setdefault(arena_id, asyncio.Lock()),
            self.engine.connect() as conn,
        ):
            async with conn.begin():
                await conn.execute(_LOCK_ARENA, {"id": arena_id})
                fold = await self._current(arena_id)
                trial = fold.trial()
                now = self.clock()
                decided = ar.decide(command(now), trial)
                if isinstance(decided, ar.ArenaRejection):
                    raise _refused(decided)
                ar.fold(decided, trial)
                result = await self.store.append(
                    tournament_stream(arena_id),
                    fold.state.version,
                    decided,
                    metadata={"actor": actor},
                    side=[self._listing(trial, now)],
                    conn=conn,
                )
            await self.store.notify(result, conn)
        self._wake.set()
        return await self.state(arena_id)

    @staticmethod
    def _listing(state: ar.ArenaState, now: float) -> SideWrite:
        """The arena's row of the listing at `state`, a side write of the append."""
        created = state.created
        assert created is not None
        status = state.status(now)
        done = status == "finished" or (status == "cancelled" and not state.running)
        return SideWrite(
            _LISTING,
            {
                "ar_id": created.arena_id,
                "ar_private": created.private,
                "ar_schedule": created.schedule,
                "ar_starts": created.starts_at,
                "ar_ends": state.ends_at,
                "ar_status": status,
                "ar_done": done,
                "ar_summary": msgspec.json.encode(summary_of(state, now)).decode(),
            },
            _LOCK_LISTING,
        )

    # -------------------------------------------------------------------------- runner

    async def run(self) -> None:
        """The runner, until cancelled: the recurring arenas kept created, and a pass over
        every arena with work, once each `PASS_EVERY` seconds or when woken, but not more
        often than each `PASS_GAP` seconds: every move of every running arena match wakes
        it, and a pass between two moves finds nothing new."""
        while True:
            started = time.monotonic()
            self._wake.clear()
            try:
                if self.clock() - self._scheduled_at >= _SCHEDULE_EVERY:
                    await self.keep_scheduled()
                self._idle_passes = (self._idle_passes + 1) % _READ_ANYWAY
                if self._list_stale or not self._idle_passes:
                    # One query: an arena whose listing row moved (every append moves it)
                    # is read again, a lost hint or not.
                    self._list_stale = False
                    async with self.engine.connect() as conn:
                        rows = (await conn.execute(_WORK)).all()
                    work = {row.arena_id: row.updated_at for row in rows}
                    self._stale.update(a for a, at in work.items() if self._work.get(a) != at)
                    # And the arenas with matches running (a lost hint of a match's end).
                    self._stale.update(
                        a for a in work if a in self._folds and self._folds[a].state.running
                    )
                    self._work = work
                for arena_id in list(self._work):
                    fresh = arena_id in self._stale
                    self._stale.discard(arena_id)
                    try:
                        await self.tick(arena_id, fresh=fresh)
                    except Exception as error:  # the database away: the next pass retries
                        _log.warning(
                            "arena_pass_failed", arena_id=arena_id, **describe_exception(error)
                        )
            except Exception as error:
                _log.warning("arena_runner_failed", **describe_exception(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), PASS_EVERY)
            # A throttle, not a synchronisation: the woken pass waits out the gap.
            await asyncio.sleep(max(0.0, PASS_GAP - (time.monotonic() - started)))

    async def keep_scheduled(self, now: float | None = None) -> list[str]:
        """Create the recurring arenas' occurrences that should exist at `now` and do not;
        returns the ids of those created."""
        moment = dt.datetime.fromtimestamp(self.clock() if now is None else now, dt.UTC)
        self._scheduled_at = moment.timestamp()
        created = []
        for entry in self.schedule:
            for start in occurrences(entry, moment):
                arena_id = arena_id_for(entry, start)
                with contextlib.suppress(NotFound):
                    await self.state(arena_id)
                    continue
                await self.create(
                    name=entry.label,
                    seats=entry.seats,
                    rules=entry.rules,
                    turn_limit=entry.turn_limit,
                    minutes=entry.minutes,
                    starts_at=start.timestamp(),
                    private=False,
                    schedule=entry.name,
                    arena_id=arena_id,
                    title=dict(entry.title) or None,
                )
                created.append(arena_id)
        return created

    async def tick(self, arena_id: str, now: float | None = None, fresh: bool = True) -> Passed:
        """One pass over the arena at `now` (module docstring); nothing when another
        instance holds its lock, or when there is nothing to do. Not `fresh` (no hint
        named the arena or its matches since the last pass): the fold this process keeps
        is taken as it is, and its running matches as not ended."""
        cached = self._folds.get(arena_id)
        fold = cached if cached is not None and not fresh else await self._current(arena_id)
        state = fold.state
        clock = now  # the caller's clock (a test's), else the service's, read again below
        now = self.clock() if clock is None else clock
        ended: set[str] = set()
        if state.running and fresh:
            streams = [match_stream(m) for m in state.running]
            ended = set(await self.store.read_streams(streams, types=["MatchFinished"]))
        end_due = state.cancelled is None and state.ended_at is None and now >= state.ends_at
        waiting = state.status(now) == "running" and any(
            e.state == "waiting" for e in state.entrants.values()
        )
        if not (ended or end_due or waiting):
            return Passed()
        # What needs no lock is read before it: the ended matches' folds and who is
        # connected (the players waiting, and those whose match just ended). The pass
        # holds the arena's lock only to decide and write.
        matches = {m: await self.reads.state(m) for m in state.running if match_stream(m) in ended}
        seen = await self._look(state, matches, now) if state.status(now) == "running" else None
        opened: list[Opened] = []
        async with (
            self._writing.setdefault(arena_id, asyncio.Lock()),
            self.engine.connect() as conn,
        ):
            async with conn.begin():
                # Commands (a rush of joins) hold the lock in turns: the pass waits its
                # turn, a little, rather than skip while they last; a pass of another
                # instance makes it give up (the other did the work).
                await conn.execute(_LOCK_WAIT)
                try:
                    await conn.execute(_LOCK_ARENA, {"id": arena_id})
                except sa.exc.OperationalError:
                    return Passed()
                self.passes += 1
                fold = await self._current(arena_id)
                trial = fold.trial()
                # Decided at the time it is decided: the reads and the lock took a while,
                # and a pairing must not be stamped before an end it comes after.
                now = self.clock() if clock is None else clock
                end_due = (
                    trial.cancelled is None and trial.ended_at is None and now >= trial.ends_at
                )
                events: list[ar.ArenaEvent] = []
                scored = self._score(trial, matches, events)
                if end_due:
                    events += self._apply(trial, ar.EndArena(now=now))
                gone: list[str] = []
                tables: tuple[ar.ArenaTable, ...] = ()
                if trial.status(now) == "running" and seen is not None:
                    gone, tables = self._pair(fold, trial, now, seen, events)
                if not events:
                    return Passed()
                result = await self.store.append(
                    tournament_stream(arena_id),
                    fold.state.version,
                    events,
                    metadata={"actor": "arena"},
                    side=[self._listing(trial, now)],
                    conn=conn,
                )
                for table in tables:
                    opened.append(await self._open(conn, trial, table))
            await self.store.notify(result, conn)
            for done in opened:
                for appended in done.results:
                    await self.store.notify(appended, conn)
        for done in opened:
            self.parties.committed(done)
        passed = Passed(scored, tables, tuple(gone), trial.ended_at is not None and end_due)
        self._log(arena_id, passed)
        await self._current(arena_id)
        return passed

    @staticmethod
    def _apply(trial: ar.ArenaState, command: ar.ArenaCommand) -> list[ar.ArenaEvent]:
        """`command` decided and applied on the pass's copy (a refusal: nothing)."""
        decided = ar.decide(command, trial)
        if isinstance(decided, ar.ArenaRejection):
            return []
        ar.fold(decided, trial)
        return decided

    def _score(
        self,
        trial: ar.ArenaState,
        matches: dict[str, MatchState],
        events: list[ar.ArenaEvent],
    ) -> int:
        """Score each running match that ended, from its own fold (read before the lock)."""
        scored = 0
        for match_id, match in matches.items():
            if match_id not in trial.running:
                continue  # scored meanwhile by another instance's pass
            seated = tuple(s.player_id for s in match.seats)
            if seated != trial.running[match_id].players or match.placements is None:
                # Never: the pass opened this match for these players in this order.
                _log.error("arena_match_mismatch", match_id=match_id)
                continue
            assert trial.created is not None
            outcome = ar.match_outcome(
                match_id, match.placements, match.stood_in, scoring=trial.created.scoring
            )
            done = self._apply(trial, outcome)
            events += done
            scored += bool(done)
        return scored

    def _pair(
        self,
        fold: _Fold,
        trial: ar.ArenaState,
        now: float,
        seen: _Seen,
        events: list[ar.ArenaEvent],
    ) -> tuple[list[str], tuple[ar.ArenaTable, ...]]:
        """Pause the waiting players away past the grace, then pair those connected now
        (skipping any who play elsewhere), as `seen` before the lock."""
        waiting = [e for e in trial.entrants.values() if e.state == "waiting"]
        if not waiting:
            return [], ()
        gone = []
        for e in waiting:
            # Freed by this very pass: their wait starts now.
            freed = now if e.last_match in seen.ended else fold.freed_at.get(e.player_id, 0.0)
            free_from = max(e.since, freed)
            away = seen.ages.get(e.player_id, float("inf"))
            if (
                e.player_id not in seen.present
                and away > self.grace
                and now - free_from > self.grace
            ):
                gone.append(e.player_id)
                events += self._apply(
                    trial, ar.PauseArena(player_id=e.player_id, reason="gone", now=now)
                )
        # Not seen connected (or joined after the look), or playing elsewhere.
        absent = {
            e.player_id
            for e in waiting
            if e.player_id not in seen.present or e.player_id in seen.busy
        }
        ids = tuple((str(uuid.uuid4()), str(uuid.uuid4())) for _ in range(len(waiting)))
        paired = self._apply(trial, ar.PairTables(now=now, table_ids=ids, absent=frozenset(absent)))
        events += paired
        tables = paired[0].tables if paired and isinstance(paired[0], ar.TablesPaired) else ()
        return gone, tables

    async def _look(self, state: ar.ArenaState, ended: dict[str, MatchState], now: float) -> _Seen:
        """Who of the players about to wait (waiting now, or at a match that ended) is
        connected now, how long since each was seen on a socket, and who of them plays
        elsewhere (a running match or an open party: never seated twice)."""
        at_table: dict[str, str] = {}  # player -> the arena match whose table counts
        for e in state.entrants.values():
            if e.state == "waiting" and e.last_match is not None:
                at_table[e.player_id] = e.last_match
        for match_id in ended:
            for player_id in state.running[match_id].players:
                at_table[player_id] = match_id
        ids = [e.player_id for e in state.entrants.values() if e.state == "waiting"]
        ids += [p for m in ended for p in state.running[m].players]
        ages = await self.presence.ages(ids) if ids else {}
        present = {p for p, age in ages.items() if age <= PRESENT}
        seats = {
            (match_stream(m), state.tables[m].players.index(p)): p
            for p, m in at_table.items()
            if p not in present
        }
        if seats:
            streams = sorted({stream for stream, _seat in seats})
            async with self.engine.connect() as conn:
                for row in await conn.execute(_AT_TABLES, {"streams": streams}):
                    who = seats.get((row.stream_id, row.seat))
                    if who is not None:
                        present.add(who)
                        ages[who] = 0.0
        busy = set()
        assert state.created is not None
        if len(present) >= state.created.seats:
            for player_id in sorted(present):
                if holding(await tables_of(self.engine, self.store, player_id)) is not None:
                    busy.add(player_id)
        return _Seen(present, ages, busy, frozenset(ended))

    async def _open(
        self, conn: AsyncConnection, state: ar.ArenaState, table: ar.ArenaTable
    ) -> Opened:
        """The party and match of an arena table, in the pass's transaction: ranked, the
        arena's rules and turn limit, its players in the pairing's seat order."""
        created = state.created
        assert created is not None
        players = tuple(
            PoolPlayer(p, state.entrants[p].name, state.entrants[p].client_seed)
            for p in table.players
        )
        return await self.parties.open_seated(
            conn,
            SeatedTable(
                party_id=table.party_id,
                match_id=table.match_id,
                players=players,
                seats=len(players),
                turn_limit=created.turn_limit,
                ranked=True,
                ruleset={"preset": created.rules},
                arena_id=created.arena_id,
            ),
            actor="arena",
        )

    @staticmethod
    def _log(arena_id: str, passed: Passed) -> None:
        if passed.scored:
            _log.info("arena_scored", arena_id=arena_id, matches=passed.scored)
        if passed.gone:
            _log.info("arena_gone", arena_id=arena_id, players=len(passed.gone))
        if passed.paired:
            _log.info("arena_paired", arena_id=arena_id, tables=len(passed.paired))
        if passed.ended:
            _log.info("arena_ended", arena_id=arena_id)
