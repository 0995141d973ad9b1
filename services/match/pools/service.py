"""Quick play's pools (docs/pools.md): entering, leaving, and the pairing pass that seats
the waiting players at tables, on any instance.

Each pool is a stream folded by `domain.pool`'s Decider. This process keeps each pool's
fold and catches it up from its version before deciding (`_current`), so a decision costs
a read of what is new, not of the pool's whole history.

- **Entering** takes a transaction-scoped advisory lock on the player, then checks every
  pool and the player's tables: two entries of one player (two tabs, two instances) are
  decided one after the other, so nobody waits in two pools.
- **Pairing** (`pair`) runs on every instance, about once a second and at once after an
  entry here. Its append carries the pool's version, so two passes at once are a conflict,
  never two seatings; a transaction-scoped `pg_try_advisory_xact_lock` per pool makes the
  other instances skip a pass already running instead of doing it twice for nothing. The
  `TableFormed` events, the parties they open and their matches' first events go in ONE
  transaction (`PartyCommands.open_formed`): a table exists with its party and match, or
  not at all, whatever instance dies when.
- **Presence**: only players whose lobby socket is connected now are seated
  (`lobby_presence.PRESENT`); one not seen for `LUDO_POOL_GRACE` seconds (and waiting
  longer than that) is taken out (`PoolLeft`, reason `gone`) by the same pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import pool as pl
from domain.errors import Conflict, Forbidden, NotFound, rejection_error
from domain.streams import POOL_PREFIX
from services.match.caches import remember
from services.match.guests import Player
from services.match.parties.my_tables import holding, tables_of
from services.match.parties.service import Opened, PartyCommands
from services.match.players.lobby_presence import PRESENT, LobbyPresence
from services.shared.eventstore import EventStore
from services.shared.logging import describe_exception
from services.shared.settings import Settings
from services.shared.standing import RankedBlock, standing

__all__ = ["KINDS", "PAIR_EVERY", "Pools", "PoolsSnapshot", "Seated", "ranked_paused"]

_log = structlog.get_logger(__name__)

KINDS: Final = {kind.name: kind for kind in pl.POOL_KINDS}
PAIR_EVERY: Final = 1.0  # seconds between two pairing passes of an instance when idle
_READ_ANYWAY: Final = 10  # passes: every tenth reads every pool, hint or not
_SEATINGS: Final = 4096  # tables formed remembered, for the sockets of their players
_RECENT: Final = 60.0  # seconds a seating is told to a lobby that connects after it

# The locks' keys: one space per use, hashed with the id (pg's `hashtext`).
# The players of a batch, in the order given (sorted by the caller).
_LOCK_PLAYERS = sa.text(
    """
    SELECT count(pg_advisory_xact_lock(hashtext('pool-player:' || id)))
    FROM unnest(CAST(:ids AS text[])) WITH ORDINALITY AS p(id, n)
    """
)
_LOCK_POOL = sa.text("SELECT pg_advisory_xact_lock(hashtext('pool:' || :stream))")


_Pending = tuple[pl.EnterPool | pl.LeavePool, "asyncio.Future[tuple[pl.PoolEvent, int]]"]


class Seated(msgspec.Struct, frozen=True):
    """A player's table, formed by a pool at `at` (seconds since the epoch)."""

    pool: str
    party_id: str
    match_id: str
    at: float


class PoolsSnapshot(msgspec.Struct, frozen=True):
    """What every lobby socket of a process shows, read once per change: who waits in
    which pool, how many are online, and the tables formed lately."""

    waiting: dict[str, list[pl.Waiting]]  # by pool name, in order of entry
    online: int
    seated: dict[str, Seated]  # by player id
    # The guests whose lobby this process holds that `online` counts (`Online.here`).
    here: frozenset[str] = frozenset()


class Pools:
    """The four pools of this process (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        parties: PartyCommands,
        presence: LobbyPresence,
        settings: Settings,
        busy_elsewhere: Callable[[str], str | None] = lambda _player_id: None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.parties = parties
        self.presence = presence
        self.grace = settings.pool_grace
        self._states = {kind: pl.PoolState(kind) for kind in pl.POOL_KINDS}
        self._locks = {kind: asyncio.Lock() for kind in pl.POOL_KINDS}
        self._entering = {kind: asyncio.Lock() for kind in pl.POOL_KINDS}
        self._pending: dict[pl.PoolKind, list[_Pending]] = {k: [] for k in pl.POOL_KINDS}
        self._seated: OrderedDict[str, Seated] = OrderedDict()
        self._wake = asyncio.Event()
        # Pools that may have changed since this process last read them: a hint for their
        # stream, an entry here. An idle site's passes then cost no query; a pool is read
        # anyway every `_READ_ANYWAY` passes, in case a hint was lost.
        self._stale = set(pl.POOL_KINDS)
        self._idle_passes = 0
        self.passes = 0  # pairing passes run (diagnostics)
        # Where else a player plays without a table (an arena between matches): the
        # arenas' answer, None when nowhere.
        self.busy_elsewhere = busy_elsewhere

    # ---------------------------------------------------------------------------- reads

    def heard(self, stream_id: str) -> None:
        """A hint for `stream_id` (LISTEN/NOTIFY): a pool's is read at its next pass."""
        if stream_id.startswith(POOL_PREFIX):
            self._stale.update(k for k in pl.POOL_KINDS if k.stream == stream_id)
            self._wake.set()

    async def _current(self, kind: pl.PoolKind) -> pl.PoolState:
        """The pool's fold, caught up from its version (one reader at a time per pool, so
        an event is never folded twice)."""
        async with self._locks[kind]:
            self._stale.discard(kind)
            state = self._states[kind]
            for stored in await self.store.read_stream(kind.stream, state.version):
                event = pl.decode_pool_event(stored.data)
                pl.apply(state, event)
                if isinstance(event, pl.TableFormed):
                    seated = Seated(
                        kind.name, event.party_id, event.match_id, stored.recorded_at.timestamp()
                    )
                    for player in event.players:
                        remember(self._seated, player.player_id, seated, _SEATINGS)
            return state

    async def snapshot(self) -> PoolsSnapshot:
        """Every pool now, the online count and the recent seatings (the lobby's view)."""
        waiting = {}
        for kind in pl.POOL_KINDS:
            waiting[kind.name] = list((await self._current(kind)).waiting.values())
        online = await self.presence.online()
        return PoolsSnapshot(waiting, online.count, dict(self._seated), online.here)

    async def waiting_in(self, player_id: str) -> pl.PoolKind | None:
        """The pool `player_id` waits in, if any."""
        for kind in pl.POOL_KINDS:
            if player_id in (await self._current(kind)).waiting:
                return kind
        return None

    # ------------------------------------------------------------------------- commands

    async def enter(
        self, player: Player, pool: str, cpu_after: int | None, client_seed: str
    ) -> tuple[pl.Waiting, int]:
        """Wait in `pool`; the entry and how many wait there now."""
        kind = kind_named(pool)
        mine = await standing(self.engine, player.id, dt.datetime.now(dt.UTC))
        if kind.ranked and mine.ranked_block is not None:
            raise ranked_paused(mine.ranked_block, "enter ranked pools")
        command = pl.EnterPool(
            player_id=player.id,
            name=player.name,
            rating=mine.rating,
            now=time.time(),
            cpu_after=cpu_after,
            client_seed=client_seed,
        )
        await self._not_waiting(player.id)  # the common refusals, before any lock
        await self._not_seated(player.id)
        event, waiting = await self._submit(kind, command)
        self._wake.set()
        assert isinstance(event, pl.PoolEntered)
        entry = pl.waiting_of(event)
        return entry, waiting

    async def leave(self, player: Player, pool: str) -> None:
        """Stop waiting in `pool`."""
        await self._submit(kind_named(pool), pl.LeavePool(player_id=player.id))

    async def _submit(
        self, kind: pl.PoolKind, command: pl.EnterPool | pl.LeavePool
    ) -> tuple[pl.PoolEvent, int]:
        """`command`'s event and how many wait after it, decided in a batch: the entries
        and leaves of a pool that arrive while a batch is being written go together in the
        next one (one transaction, one append), as the event store's group commit does
        for matches. So a rush costs a few transactions, not one per guest each waiting
        for the pool's lock (and holding a database connection meanwhile)."""
        future: asyncio.Future[tuple[pl.PoolEvent, int]] = (
            asyncio.get_running_loop().create_future()
        )
        self._pending[kind].append((command, future))
        async with self._entering[kind]:
            if not future.done():
                batch, self._pending[kind] = self._pending[kind], []
                await self._write_batch(kind, batch)
        return await future

    async def _write_batch(self, kind: pl.PoolKind, batch: list[_Pending]) -> None:
        """Decide `batch` in order on the pool, under its lock, and append what it
        accepted as one append; each command's future gets its event or its refusal.

        Entering takes a transaction-scoped lock on each player first (in id order, as
        every batch does, so two never wait for each other) and then checks the other
        pools: a player entering two pools at once (two tabs, two instances) waits in one,
        the other entry is refused."""
        outcomes: list[tuple[pl.PoolEvent, int] | Exception] = []
        try:
            async with self.engine.connect() as conn:
                async with conn.begin():
                    entering = sorted(
                        {c.player_id for c, _ in batch if isinstance(c, pl.EnterPool)}
                    )
                    if entering:
                        await conn.execute(_LOCK_PLAYERS, {"ids": entering})
                    elsewhere = {}
                    for other in pl.POOL_KINDS:
                        if other != kind and entering:
                            for player_id in (await self._current(other)).waiting:
                                elsewhere[player_id] = other
                    await conn.execute(_LOCK_POOL, {"stream": kind.stream})
                    state = await self._current(kind)
                    trial = _copy(state)
                    events: list[pl.PoolEvent] = []
                    for command, _future in batch:
                        decided = _decide_one(trial, command, elsewhere)
                        if isinstance(decided, Exception):
                            outcomes.append(decided)
                            continue
                        events.append(decided)
                        outcomes.append((decided, len(trial.waiting)))
                    if events:
                        result = await self.store.append(
                            kind.stream,
                            state.version,
                            events,
                            metadata={"actor": "pool"},
                            conn=conn,
                        )
                if events:
                    await self.store.notify(result, conn)
        except Exception as error:  # the database away, say: every command of the batch
            for _command, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for (_command, future), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    async def _not_waiting(self, player_id: str) -> None:
        """Refuse a player who already waits in a pool."""
        elsewhere = await self.waiting_in(player_id)
        if elsewhere is not None:
            raise Conflict(
                f"you are already waiting in the {elsewhere.name} pool", code="already_waiting"
            )

    async def _not_seated(self, player_id: str) -> None:
        """Refuse a player who plays a running match or sits at an open party."""
        arena = self.busy_elsewhere(player_id)
        if arena is not None:
            raise Conflict(
                f"you play in the arena {arena}: pause it first", code="seated_elsewhere"
            )
        table = holding(await tables_of(self.engine, self.store, player_id))
        if table is None:
            return
        if table.status == "open":
            detail = f"you sit at the open party {table.party_id}: leave it first"
        else:
            detail = f"your match {table.match_id} is still running: finish it first"
        raise Conflict(detail, code="seated_elsewhere")

    # ------------------------------------------------------------------------- pairing

    async def run(self) -> None:
        """Pairing passes over every pool, until cancelled: one each `PAIR_EVERY` seconds,
        or at once after an entry here."""
        while True:
            self._wake.clear()
            self._idle_passes = (self._idle_passes + 1) % _READ_ANYWAY
            if not self._idle_passes:
                self._stale.update(pl.POOL_KINDS)
            for kind in pl.POOL_KINDS:
                if kind not in self._stale and not self._states[kind].waiting:
                    continue  # nobody waited at the last read, and nothing was heard since
                try:
                    await self.pair(kind)
                except Exception as error:  # the database away: the next pass retries
                    _log.warning("pairing_failed", pool=kind.name, **describe_exception(error))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), PAIR_EVERY)

    async def pair(self, kind: pl.PoolKind, now: float | None = None) -> list[pl.TableFormed]:
        """One pairing pass over `kind`'s pool: the gone taken out, the tables formed and
        opened, under the pool's lock (a pass of another instance, or a batch of entries,
        goes before or after, never between the read and the append). Returns the tables
        this pass formed."""
        if not (await self._current(kind)).waiting:
            return []
        self.passes += 1
        opened: list[Opened] = []
        async with self.engine.connect() as conn:
            async with conn.begin():
                await conn.execute(_LOCK_POOL, {"stream": kind.stream})
                state = await self._current(kind)
                now = time.time() if now is None else now
                gone, events = await self._decide_pass(state, now)
                if not events:
                    return []
                result = await self.store.append(
                    kind.stream, state.version, events, metadata={"actor": "pool"}, conn=conn
                )
                tables = [e for e in events if isinstance(e, pl.TableFormed)]
                for table in tables:
                    opened.append(await self.parties.open_formed(conn, table, kind))
            await self.store.notify(result, conn)
            for done in opened:
                for appended in done.results:
                    await self.store.notify(appended, conn)
        for done in opened:
            self.parties.committed(done)
        if gone:
            _log.info("pool_gone", pool=kind.name, players=len(gone))
        for table in tables:
            _log.info(
                "table_formed",
                pool=kind.name,
                party_id=table.party_id,
                match_id=table.match_id,
                players=len(table.players),
                cpus=table.cpus,
            )
        return tables

    async def _decide_pass(
        self, state: pl.PoolState, now: float
    ) -> tuple[list[str], list[pl.PoolEvent]]:
        """The pass's events on `state` at `now`: the gone left, then the tables formed of
        the players connected now; and who was gone."""
        ages = await self.presence.ages(list(state.waiting))
        never = float("inf")
        gone = [
            w.player_id
            for w in state.waiting.values()
            if ages.get(w.player_id, never) > self.grace and now - w.entered_at > self.grace
        ]
        absent = frozenset(p for p in state.waiting if ages.get(p, never) > PRESENT)
        trial = _copy(state)
        events: list[pl.PoolEvent] = []
        for player_id in gone:
            left = pl.PoolLeft(player_id=player_id, reason="gone")
            pl.apply(trial, left)
            events.append(left)
        ids = tuple((str(uuid.uuid4()), str(uuid.uuid4())) for _ in trial.waiting)
        formed = pl.decide(pl.FormTables(now=now, table_ids=ids, absent=absent), trial)
        assert not isinstance(formed, pl.PoolRejection)  # an id pair for every player
        return gone, events + formed


def _decide_one(
    trial: pl.PoolState,
    command: pl.EnterPool | pl.LeavePool,
    elsewhere: dict[str, pl.PoolKind],
) -> pl.PoolEvent | Exception:
    """One command of a batch on the batch's running state: its event (applied), or why
    it is refused."""
    if isinstance(command, pl.EnterPool) and command.player_id in elsewhere:
        other = elsewhere[command.player_id]
        return Conflict(f"you are already waiting in the {other.name} pool", code="already_waiting")
    decided = pl.decide(command, trial)
    if isinstance(decided, pl.PoolRejection):
        return rejection_error(decided.code, decided.reason, decided.field)
    (event,) = decided
    pl.apply(trial, event)
    return event


def _copy(state: pl.PoolState) -> pl.PoolState:
    """A pool's fold to decide on without touching the process's own."""
    trial = pl.PoolState(state.kind)
    trial.version = state.version
    trial.waiting = dict(state.waiting)
    return trial


def ranked_paused(block: RankedBlock, what: str) -> Forbidden:
    """The refusal of a player paused from ranked play (`what` they cannot do): why, and
    until when (`until`, for the page to count down)."""
    why = (
        "an operator suspended you"
        if block.reason == "suspended"
        else "you left 3 ranked matches within 24 hours"
    )
    return Forbidden(
        f"you cannot {what} until {block.until.isoformat()}: {why}",
        code="ranked_paused",
        until=block.until.isoformat(),
    )


def kind_named(pool: str) -> pl.PoolKind:
    """The pool of an API name (`2-casual`, ...), or 404."""
    kind = KINDS.get(pool)
    if kind is None:
        raise NotFound(f"no pool {pool!r}: one of {', '.join(KINDS)}")
    return kind
