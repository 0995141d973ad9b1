"""The ranking consumer: finished ranked matches -> rating changes, exactly once.

It follows the global cursor (`EventStore.read_all`, DESIGN.md §3), woken by the NOTIFY
hints and polling as a fallback. For each batch, ONE transaction:

1. locks its checkpoint row (`consumer_checkpoints`, `SELECT … FOR UPDATE`) and reads the
   cursor from it, never from memory;
2. reads the events after that cursor; for every `MatchFinished` of a ranked match it
   rates the match in every model (`ratings`, `rating_changes`);
3. moves the checkpoint to the last event read, and commits.

Effects and checkpoint commit together, so a crash at any point leaves either both or
neither: a match is counted once, never twice, never missed. The row lock makes this hold
even if two consumers ran at once; normally only one does: `run()` holds a session
advisory lock (`CONSUMER_LOCK`) while consuming, and other instances stand by, retrying
the lock, and take over when its holder's connection goes away.

What counts (DESIGN.md §6, RULES.md §4):

- Ranked or not: the `MatchOpened` event of the match's party stream (`ranked`), found
  through the `matches` row's `party_id`; the `matches.ranked` column (written in the same
  transaction as `MatchCreated`) when the party stream has no such event. No row: casual.
- CPU seats are not rated. A seat whose last stand-in reason before the end was `left` or
  `disconnected`, with no `SeatReclaimed` after it, is placed last (after every place of
  `MatchFinished.placements`; several such players share that last place).
- Fewer than two distinct rated players: nothing is rated (the checkpoint still moves).

`recompute()` rebuilds everything from the log into new tables and swaps them in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, Final

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import events as ev
from services.ranking.ratings import MODELS, Entry, Skill, rate
from services.shared.eventstore import START, Cursor, EventStore, StoredEvent

__all__ = [
    "CHECKPOINT",
    "CONSUMER_LOCK",
    "RECOMPUTE_LOCK",
    "RankingConsumer",
    "RatedPlayer",
    "RecomputeBusy",
    "Tables",
    "match_outcome",
    "ratings_hash",
    "recompute",
]

_log = structlog.get_logger("services.ranking")

CHECKPOINT: Final = "ranking"
# Advisory lock keys (any two distinct bigints; "ludo" + 1 / + 2).
CONSUMER_LOCK: Final = 0x6C75646F0001
RECOMPUTE_LOCK: Final = 0x6C75646F0002
_LEFT_REASONS: Final = frozenset({"left", "disconnected"})


class RatedPlayer(msgspec.Struct, frozen=True):
    player_id: str
    place: int
    left: bool


class Tables(msgspec.Struct, frozen=True):
    """The rating tables to write: the live ones, or the ones a recompute builds."""

    ratings: str = "ratings"
    changes: str = "rating_changes"


LIVE: Final = Tables()
NEXT: Final = Tables("ratings_next", "rating_changes_next")


class RecomputeBusy(RuntimeError):
    """Another recompute holds the recompute lock."""


# --------------------------------------------------------------------------- the outcome


def match_outcome(events: Sequence[ev.Event]) -> list[RatedPlayer] | None:
    """The rated players of a finished match and their places; None: nothing to rate."""
    created: ev.MatchCreated | None = None
    finished: ev.MatchFinished | None = None
    left: dict[int, bool] = {}
    for event in events:
        if isinstance(event, ev.MatchCreated):
            created = event
        elif isinstance(event, ev.SeatStoodIn):
            left[event.seat] = event.reason in _LEFT_REASONS
        elif isinstance(event, ev.SeatReclaimed):
            left[event.seat] = False
        elif isinstance(event, ev.MatchFinished):
            finished = event
            break
    if created is None or finished is None:
        return None
    last = max(finished.placements, default=0) + 1
    players = [
        RatedPlayer(
            spec.player_id,
            last if left.get(seat, False) else finished.placements[seat],
            left.get(seat, False),
        )
        for seat, spec in enumerate(created.seats)
        if spec.player_id is not None and spec.cpu is None
    ]
    ids = [p.player_id for p in players]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        return None
    return players


async def _is_ranked(conn: AsyncConnection, store: EventStore, stream_id: str) -> bool:
    row = (
        await conn.execute(
            sa.text("SELECT party_id, ranked FROM matches WHERE stream_id = :s"), {"s": stream_id}
        )
    ).first()
    if row is None:
        return False
    match_id = stream_id.removeprefix("match-")
    for stored in await store.read_stream(f"party-{row.party_id}"):
        if stored.type != "MatchOpened":
            continue
        data = msgspec.json.decode(stored.data)
        if data.get("match_id") in (match_id, stream_id):
            return bool(data.get("ranked"))
    return bool(row.ranked)


# ------------------------------------------------------------------------ applying a match


async def _apply_match(
    conn: AsyncConnection,
    store: EventStore,
    finished: StoredEvent,
    tables: Tables,
) -> bool:
    """Rate the match that `finished` ends, in every model; False when it is not rated."""
    stream_id = finished.stream_id
    if not await _is_ranked(conn, store, stream_id):
        return False
    players = match_outcome(await store.read_events(stream_id))
    if players is None:
        return False
    ids = [p.player_id for p in players]
    entries = [Entry(p.player_id, p.place) for p in players]
    rows = (
        await conn.execute(
            sa.text(
                f"SELECT model, player_id, mu, sigma, volatility, matches FROM {tables.ratings} "
                "WHERE player_id = ANY(:ids) ORDER BY model, player_id FOR UPDATE"
            ),
            {"ids": ids},
        )
    ).all()
    current: dict[str, dict[str, Skill]] = {m: {} for m in MODELS}
    for r in rows:
        if r.model in current:
            current[r.model][r.player_id] = Skill(
                mu=r.mu, sigma=r.sigma, volatility=r.volatility, matches=r.matches
            )
    at: datetime = finished.recorded_at
    upserts: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    for name, model in MODELS.items():
        before = {pid: current[name].get(pid) or model.initial() for pid in ids}
        after = rate(name, current[name], entries)
        params = msgspec.json.encode(model.params).decode()
        for p in players:
            b, a = before[p.player_id], after[p.player_id]
            upserts.append(
                {
                    "model": name,
                    "player_id": p.player_id,
                    "mu": a.mu,
                    "sigma": a.sigma,
                    "volatility": a.volatility,
                    "rating": model.display(a),
                    "provisional": model.provisional(a),
                    "matches": a.matches,
                    "at": at,
                }
            )
            changes.append(
                {
                    "model": name,
                    "stream": stream_id,
                    "player_id": p.player_id,
                    "position": finished.global_position,
                    "place": p.place,
                    "players": len(players),
                    "left": p.left,
                    "mu_b": b.mu,
                    "sigma_b": b.sigma,
                    "rating_b": model.display(b),
                    "mu_a": a.mu,
                    "sigma_a": a.sigma,
                    "rating_a": model.display(a),
                    "params": params,
                    "library": model.library,
                    "at": at,
                }
            )
    await conn.execute(
        sa.text(
            f"INSERT INTO {tables.ratings} (model, player_id, mu, sigma, volatility, rating, "
            "provisional, matches, last_match_at) VALUES (:model, :player_id, :mu, :sigma, "
            ":volatility, :rating, :provisional, :matches, :at) "
            "ON CONFLICT (model, player_id) DO UPDATE SET mu = EXCLUDED.mu, "
            "sigma = EXCLUDED.sigma, volatility = EXCLUDED.volatility, rating = EXCLUDED.rating, "
            "provisional = EXCLUDED.provisional, matches = EXCLUDED.matches, "
            "last_match_at = EXCLUDED.last_match_at"
        ),
        upserts,
    )
    # A plain INSERT: a second rating of the same match would violate the primary key.
    await conn.execute(
        sa.text(
            f"INSERT INTO {tables.changes} (model, match_stream, player_id, position, place, "
            "players, left_match, mu_before, sigma_before, rating_before, mu_after, "
            "sigma_after, rating_after, params, library, finished_at) VALUES (:model, :stream, "
            ":player_id, :position, :place, :players, :left, :mu_b, :sigma_b, :rating_b, :mu_a, "
            ":sigma_a, :rating_a, CAST(:params AS jsonb), :library, :at)"
        ),
        changes,
    )
    return True


async def _apply_batch(
    conn: AsyncConnection, store: EventStore, batch: Sequence[StoredEvent], tables: Tables
) -> int:
    rated = 0
    for stored in batch:
        if stored.type == "MatchFinished" and stored.stream_id.startswith("match-"):
            rated += await _apply_match(conn, store, stored, tables)
    return rated


async def read_checkpoint(conn: AsyncConnection, name: str, *, lock: bool = False) -> Cursor:
    query = "SELECT tx, position FROM consumer_checkpoints WHERE name = :n"
    row = (
        await conn.execute(sa.text(query + (" FOR UPDATE" if lock else "")), {"n": name})
    ).first()
    if row is None:
        await conn.execute(
            sa.text(
                "INSERT INTO consumer_checkpoints (name, tx, position) VALUES (:n, 0, 0) "
                "ON CONFLICT DO NOTHING"
            ),
            {"n": name},
        )
        return await read_checkpoint(conn, name, lock=lock)
    return Cursor(int(row.tx), int(row.position))


async def _write_checkpoint(conn: AsyncConnection, name: str, cursor: Cursor) -> None:
    await conn.execute(
        sa.text(
            "UPDATE consumer_checkpoints SET tx = :tx, position = :p, updated_at = now() "
            "WHERE name = :n"
        ),
        {"tx": cursor.tx, "p": cursor.position, "n": name},
    )


async def head_cursor(engine: AsyncEngine) -> Cursor:
    """The cursor of the last committed event in the global order (START: none)."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT tx::text AS tx, global_position FROM events "
                    "ORDER BY tx DESC, global_position DESC LIMIT 1"
                )
            )
        ).first()
    return START if row is None else Cursor(int(row.tx), int(row.global_position))


# ------------------------------------------------------------------------------ consumer


class RankingConsumer:
    """Follows the log and keeps the live rating tables (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore | None = None,
        *,
        name: str = CHECKPOINT,
        batch: int = 500,
        poll: float = 1.0,
        standby_poll: float = 2.0,
    ) -> None:
        self.engine = engine
        self.store = store or EventStore(engine)
        self.name = name
        self.batch = batch
        self.poll = poll
        self.standby_poll = standby_poll
        self.active = False  # holds the advisory lock and consumes

    async def step(self) -> int:
        """One batch in one transaction; returns the number of events read (0: caught up)."""
        async with self.engine.begin() as conn:
            cursor = await read_checkpoint(conn, self.name, lock=True)
            batch = await self.store.read_all(cursor, self.batch)
            if not batch:
                return 0
            rated = await _apply_batch(conn, self.store, batch, LIVE)
            await _write_checkpoint(conn, self.name, batch[-1].cursor)
        if rated:
            _log.info("matches_rated", matches=rated, events=len(batch))
        return len(batch)

    async def catch_up(self, timeout: float = 60.0) -> int:
        """Steps until the checkpoint reaches the log's head as of this call (events of
        transactions still running anywhere on the server are waited for: the xid8 rule
        holds them back until then); returns the number of events read."""
        head = await head_cursor(self.engine)
        deadline = asyncio.get_running_loop().time() + timeout
        total = 0
        while True:
            n = await self.step()
            total += n
            if n:
                continue
            async with self.engine.connect() as conn:
                if await read_checkpoint(conn, self.name) >= head:
                    return total
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("the ranking consumer did not reach the log's head")
            await asyncio.sleep(0.02)

    @contextlib.asynccontextmanager
    async def _leadership(self) -> AsyncIterator[AsyncConnection | None]:
        async with self.engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            got = await auto.scalar(sa.select(sa.func.pg_try_advisory_lock(CONSUMER_LOCK)))
            try:
                yield auto if got else None
            finally:
                if got:
                    with contextlib.suppress(Exception):
                        await auto.execute(sa.select(sa.func.pg_advisory_unlock(CONSUMER_LOCK)))

    async def run(self) -> None:
        """Forever: stand by until the advisory lock is ours, then consume (cancel to stop)."""
        while True:
            try:
                async with self._leadership() as lock_conn:
                    if lock_conn is None:
                        await asyncio.sleep(self.standby_poll)
                        continue
                    self.active = True
                    _log.info("ranking_consumer_active")
                    await self._consume(lock_conn)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("ranking_consumer_error", error=str(exc), exc_info=exc)
                await asyncio.sleep(self.standby_poll)
            finally:
                self.active = False

    async def _consume(self, lock_conn: AsyncConnection) -> None:
        async with self.store.listen() as listener:
            while True:
                if await self.step() >= self.batch:
                    continue
                await listener.wait(self.poll)
                # The lock lives as long as its connection: check that it is still there.
                await lock_conn.execute(sa.text("SELECT 1"))


# ----------------------------------------------------------------------------- hashing


async def ratings_hash(engine: AsyncEngine, table: str = "ratings") -> tuple[str, int]:
    """sha256 over every rating row (exact float bits), and the number of rows."""
    digest = hashlib.sha256()
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT model, player_id, mu, sigma, volatility, rating, provisional, "
                    f"matches, last_match_at FROM {table} ORDER BY model, player_id"
                )
            )
        ).all()
    for r in rows:
        line = "|".join(
            (
                r.model,
                r.player_id,
                float(r.mu).hex(),
                float(r.sigma).hex(),
                float(r.volatility).hex(),
                float(r.rating).hex(),
                str(int(r.provisional)),
                str(r.matches),
                r.last_match_at.isoformat(),
            )
        )
        digest.update(line.encode() + b"\n")
    return digest.hexdigest(), len(rows)


# ---------------------------------------------------------------------------- recompute


async def recompute(
    engine: AsyncEngine, store: EventStore | None = None, *, batch: int = 500
) -> str:
    """Rebuild all ratings from the log into new tables and swap them in (blue/green).

    The live tables keep serving (and the live consumer keeps writing them) until the new
    ones are complete; then, in one transaction holding the consumer's checkpoint row, the
    new tables replace the live ones and the checkpoint moves to where the rebuild stopped,
    so the live consumer continues from there on the new tables. Returns the ratings hash.
    """
    store = store or EventStore(engine)
    async with engine.connect() as lock_conn:
        auto = await lock_conn.execution_options(isolation_level="AUTOCOMMIT")
        if not await auto.scalar(sa.select(sa.func.pg_try_advisory_lock(RECOMPUTE_LOCK))):
            raise RecomputeBusy("another recompute is running")
        try:
            async with engine.begin() as conn:
                for live, new in ((LIVE.ratings, NEXT.ratings), (LIVE.changes, NEXT.changes)):
                    await conn.execute(sa.text(f"DROP TABLE IF EXISTS {new}"))
                    await conn.execute(sa.text(f"CREATE TABLE {new} (LIKE {live} INCLUDING ALL)"))
            # Up to the head as of now: events of transactions still running are waited
            # for (the xid8 rule holds them back), so two recomputes of one log agree.
            head = await head_cursor(engine)
            cursor = START
            while cursor < head:
                async with engine.begin() as conn:
                    events = await store.read_all(cursor, batch)
                    if events:
                        await _apply_batch(conn, store, events, NEXT)
                if events:
                    cursor = events[-1].cursor
                else:
                    await asyncio.sleep(0.02)
            async with engine.begin() as conn:
                await read_checkpoint(conn, CHECKPOINT, lock=True)
                for live, new in ((LIVE.ratings, NEXT.ratings), (LIVE.changes, NEXT.changes)):
                    await conn.execute(sa.text(f"ALTER TABLE {live} RENAME TO {live}_old"))
                    await conn.execute(sa.text(f"ALTER TABLE {new} RENAME TO {live}"))
                    await conn.execute(sa.text(f"DROP TABLE {live}_old"))
                await _write_checkpoint(conn, CHECKPOINT, cursor)
        finally:
            await auto.execute(sa.select(sa.func.pg_advisory_unlock(RECOMPUTE_LOCK)))
    digest, rows = await ratings_hash(engine)
    _log.info("ratings_recomputed", hash=digest, rows=rows, tx=cursor.tx, position=cursor.position)
    return digest
