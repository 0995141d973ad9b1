"""The PostgreSQL event store: one append-only `events` table (docs/design.md#the-event-store,
docs/event-store.md), through an async SQLAlchemy engine on psycopg 3."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import events as domain_events
from domain.chain import GENESIS
from services.shared.database import libpq_url
from services.shared.logging import describe_exception
from services.shared.metrics import UNCOUNTED, Counters

from . import _sql
from ._errors import ConcurrencyError, IdempotencyKeyReused
from ._group import Fallback, GroupCommit
from ._listener import CHANNEL, Listener
from ._prepare import AnyEvent, Link, check_chain, link, prepare, stored_metadata
from ._records import (
    BACKLOG_COUNT,
    START,
    AppendResult,
    Backlog,
    Cursor,
    EventData,
    Notification,
    Page,
    SideWrite,
    StoredEvent,
)

__all__ = ["EventStore"]

_NOTIFY = "SELECT pg_notify(%s, %s)"

_log = structlog.get_logger("services.shared.eventstore")  # the package, as logs name it


class EventStore:
    """Append to and read from the `events` table through an async SQLAlchemy engine.

    The store expects the default READ COMMITTED isolation on the connections it gets.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        group_commit: bool = False,
        counters: Counters = UNCOUNTED,
        connect_patience: float = 0.0,
    ) -> None:
        self.engine = engine
        self.counters = counters  # its appends and events (`ludo_appends_total`, …)
        # Single statements (and reads of rows that never change once committed): in
        # autocommit they cost one round trip instead of three (BEGIN, the statement,
        # COMMIT), with the same consistency (one statement sees one snapshot).
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        # `group_commit`: appends made on their own that know their head's hash go in
        # batches on a connection of the store's own (`_group`); `close()` closes it.
        self.group: GroupCommit | None = (
            GroupCommit(libpq_url(engine.url), counters, connect_patience) if group_commit else None
        )

    async def close(self) -> None:
        """Close what the store opened itself (the group commit's connection); the
        engine is the caller's."""
        if self.group is not None:
            await self.group.close()

    # ------------------------------------------------------------------------- append

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[AnyEvent],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        prev_hash: bytes | None = None,
        side: Sequence[SideWrite] = (),
        conn: AsyncConnection | None = None,
        on_commit: Callable[[AppendResult], None] | None = None,
    ) -> AppendResult:
        """Append `events` to `stream_id` as versions `expected_version…`: ONE statement
        inserts them with the command record and the `side` writes, or nothing at all.

        - `ConcurrencyError` when the stream's length is not `expected_version`;
          `IdempotencyKeyReused` when `command_id` already appended to another stream; a
          `command_id` that already appended to this stream returns that first outcome
          (`duplicate=True`) and writes nothing.
        - `prev_hash`: the hash of the stream's last event (`GENESIS` for a new stream),
          when the caller knows it (a service that keeps folded streams): it saves the
          head read. The statement inserts only if the event at `expected_version - 1`
          still has that hash, so a stale caller cannot fork the chain; a hash that is
          not the head's at the right version is a `ValueError`.
        - `side`: `SideWrite`s that run in the same statement, only when the events go in.
        - Without `conn` the statement runs on its own (autocommit) and the NOTIFY hint
          follows; with `group_commit`, it runs in the next batch (`_group.py`), in one
          transaction with the appends made meanwhile, each on its own stream's head.
          With `conn` it runs inside the caller's transaction, in a savepoint (a lost race
          leaves that transaction usable), and the caller commits, then calls
          `notify(result, conn)`.
        - `on_commit` (without `conn`): called with the result once the events are
          committed and before the NOTIFY hint goes out, so that this process learns of
          its own events before its listener hears of them (not for a duplicate).
        """
        items, meta = prepare(stream_id, expected_version, events, command_id, metadata, prev_hash)
        result = await self._append_by_path(
            stream_id, expected_version, items, meta, command_id, prev_hash, side, conn, on_commit
        )
        if not result.duplicate:
            # Inside a caller's transaction (`conn`): counted once the statement went in,
            # though the caller may still roll back (the scheduler's few appends).
            self.counters.appended(stream_id, [item.type for item in items])
        return result

    async def _append_by_path(
        self,
        stream_id: str,
        expected_version: int,
        items: list[EventData],
        meta: dict[str, Any],
        command_id: str | None,
        prev_hash: bytes | None,
        side: Sequence[SideWrite],
        conn: AsyncConnection | None,
        on_commit: Callable[[AppendResult], None] | None,
    ) -> AppendResult:
        if conn is None and self.group is not None:
            try:
                return await self._append_grouped(
                    stream_id, expected_version, items, meta, command_id, prev_hash, side, on_commit
                )
            except Fallback:
                pass  # the batch rolled back: on its own, where the usual rules decide
        if conn is not None:
            return await self._append(
                conn, stream_id, expected_version, items, meta, command_id, prev_hash, side, True
            )
        async with self._reader.connect() as own:
            result = await self._append(
                own, stream_id, expected_version, items, meta, command_id, prev_hash, side, False
            )
            await own.commit()  # ends SQLAlchemy's autobegun block; nothing is sent
            if not result.duplicate:
                if on_commit is not None:
                    on_commit(result)
                await self._notify(own, result)
        return result

    async def _append_grouped(
        self,
        stream_id: str,
        expected_version: int,
        items: list[EventData],
        meta: dict[str, Any],
        command_id: str | None,
        prev_hash: bytes | None,
        side: Sequence[SideWrite],
        on_commit: Callable[[AppendResult], None] | None,
    ) -> AppendResult:
        if prev_hash is None:
            async with self._reader.connect() as own:
                head = await self._head(own, stream_id, expected_version, command_id)
            if isinstance(head, AppendResult):
                return head
            prev_hash = head
        sql, params, links = _statement(
            stream_id, expected_version, items, meta, command_id, prev_hash, side
        )
        last_version = links[-1].version

        def finish(rows: Sequence[Any]) -> AppendResult | None:
            # In the batch, right after its commit and before its NOTIFY hints.
            if not rows:
                return None
            result = _result(stream_id, links, meta, rows)
            if on_commit is not None:
                on_commit(result)
            return result

        types = (link.item.type for link in links)
        hinted = Notification.of_append(stream_id, last_version, types)
        payload = msgspec.json.encode(hinted).decode()
        assert self.group is not None
        result: AppendResult | None = await self.group.append(sql, params, payload, finish)
        if result is not None:
            return result
        # The head moved since the caller folded it: nothing was written.
        async with self._reader.connect() as own:
            return await self._after_empty(own, stream_id, expected_version, command_id)

    async def _append(
        self,
        conn: AsyncConnection,
        stream_id: str,
        expected_version: int,
        items: list[EventData],
        meta: dict[str, Any],
        command_id: str | None,
        prev_hash: bytes | None,
        side: Sequence[SideWrite],
        savepoint: bool,
    ) -> AppendResult:
        if prev_hash is None:
            head = await self._head(conn, stream_id, expected_version, command_id)
            if isinstance(head, AppendResult):
                return head
            prev_hash = head
        sql, params, links = _statement(
            stream_id, expected_version, items, meta, command_id, prev_hash, side
        )
        try:
            if savepoint:
                async with conn.begin_nested():
                    rows = (await conn.exec_driver_sql(sql, params)).all()
            else:
                rows = (await conn.exec_driver_sql(sql, params)).all()
        except sa.exc.IntegrityError as exc:
            if not _sql.is_unique_violation(exc):
                raise
            return await self._resolve(conn, stream_id, expected_version, command_id)
        if not rows:
            return await self._after_empty(conn, stream_id, expected_version, command_id)
        return _result(stream_id, links, meta, rows)

    async def _after_empty(
        self, conn: AsyncConnection, stream_id: str, expected_version: int, command_id: str | None
    ) -> AppendResult:
        """The statement inserted nothing: the head moved since it was read (or the
        caller's prev_hash is wrong)."""
        try:
            return await self._resolve(conn, stream_id, expected_version, command_id)
        except ConcurrencyError as exc:
            if exc.actual != expected_version:
                raise
        raise ValueError(f"prev_hash is not the hash of {stream_id}'s last event")

    async def _head(
        self, conn: AsyncConnection, stream_id: str, expected_version: int, command_id: str | None
    ) -> bytes | AppendResult:
        """The hash to chain an append on, read from the stream's head: or the first
        outcome of `command_id` when it already appended; `ConcurrencyError` when the
        stream's length is not `expected_version`."""
        found, earlier = await self._head_and_outcome(conn, stream_id, command_id)
        if earlier is not None:
            return earlier
        actual = 0 if found.stream_version is None else found.stream_version + 1
        if actual != expected_version:
            raise ConcurrencyError(stream_id, expected_version, actual)
        return GENESIS if found.hash is None else bytes(found.hash)

    async def _resolve(
        self,
        conn: AsyncConnection,
        stream_id: str,
        expected_version: int,
        command_id: str | None,
    ) -> AppendResult:
        """After a lost race: the same command won (its outcome) or another did."""
        found, earlier = await self._head_and_outcome(conn, stream_id, command_id)
        if earlier is not None:
            return earlier
        actual = 0 if found.stream_version is None else found.stream_version + 1
        raise ConcurrencyError(stream_id, expected_version, actual)

    async def _head_and_outcome(
        self, conn: AsyncConnection, stream_id: str, command_id: str | None
    ) -> tuple[Any, AppendResult | None]:
        """One round trip for the stream's head, then the first outcome of `command_id`
        when it was already recorded (None when it was not, or there is no id)."""
        found = (
            await conn.exec_driver_sql(
                _sql.HEAD_AND_COMMAND, {"stream": stream_id, "command": command_id}
            )
        ).one()
        if found.command_stream is None:
            return found, None
        assert command_id is not None
        if found.command_stream != stream_id:
            raise IdempotencyKeyReused(command_id, stream_id, found.command_stream)
        first, last = found.first_version, found.last_version
        rows = await conn.exec_driver_sql(
            _sql.READ_RANGE, {"stream": stream_id, "first": first, "last": last}
        )
        return found, AppendResult(
            stream_id=stream_id,
            first_version=first,
            last_version=last,
            events=tuple(_sql.stored_event(row) for row in rows),
            duplicate=True,
        )

    async def find_command(self, command_id: str, stream_id: str) -> AppendResult | None:
        """The outcome of `command_id` if it already appended (to `stream_id`), else None.

        Lets a service answer a retried command before deciding it again. (Autocommit:
        the command record and its events commit together and never change.)
        """
        async with self._reader.connect() as conn:
            _, earlier = await self._head_and_outcome(conn, stream_id, command_id)
            return earlier

    # ------------------------------------------------------------------------- notify

    async def notify(self, result: AppendResult, conn: AsyncConnection | None = None) -> None:
        """Send the NOTIFY hint for an append committed in the caller's transaction
        (no-op for duplicates).

        With `conn` (the append's connection, its transaction committed, none begun since)
        the hint goes out on it, which saves a pool checkout; the NOTIFY still runs in its
        own autocommit transaction, after the append's commit.
        """
        if result.duplicate:
            return
        if conn is not None:
            if conn.in_transaction():
                raise RuntimeError("notify after the append's transaction has ended")
            await self._notify(conn, result)
            return
        async with self.engine.connect() as own:
            await self._notify(own, result)

    async def _notify(self, conn: AsyncConnection, result: AppendResult) -> None:
        # In its own (autocommit) transaction after the data committed: NOTIFY takes a
        # database-wide lock from its commit until its end, which must not span the
        # append's WAL flush (that would serialize the commits of all appends). A
        # notify-only transaction writes no WAL of its own, so it commits without a flush.
        # A hint lost between the two commits only delays readers, who poll as a fallback.
        # The events are committed whatever happens here, so a failure is logged, never
        # raised: the caller must not take a lost hint for a failed append and retry it.
        types = (event.type for event in result.events)
        payload = msgspec.json.encode(
            Notification.of_append(result.stream_id, result.last_version, types)
        )
        try:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            # Driver-level SQL: a compiled `select(func.pg_notify(…))` cost a tenth of the
            # service's CPU per command in a profile.
            await auto.exec_driver_sql(_NOTIFY, (CHANNEL, payload.decode()))
            await auto.commit()  # ends SQLAlchemy's autobegun block; nothing is sent
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            _log.warning("notify_failed", stream_id=result.stream_id, **describe_exception(exc))

    # --------------------------------------------------------------------------- read

    async def read_stream(
        self, stream_id: str, from_version: int = 0, *, limit: int | None = None
    ) -> list[StoredEvent]:
        """The events of `stream_id` from `from_version` on, in version order."""
        params = {"stream": stream_id, "from": from_version, "limit": limit}
        async with self._reader.connect() as conn:
            rows = await conn.exec_driver_sql(_sql.READ_STREAM, params)
            return [_sql.stored_event(row) for row in rows]

    async def read_events(self, stream_id: str, from_version: int = 0) -> list[domain_events.Event]:
        """The match events of `stream_id` from `from_version` on, decoded and upcast, in
        version order: what folding needs, and nothing else (no ids, hashes, metadata).

        Cheaper per row than `read_stream`: a few columns, no `StoredEvent`. Use
        `read_stream` to check the hash chain or to show stored events.
        """
        return (await self.read_events_and_hash(stream_id, from_version))[0]

    async def read_events_and_hash(
        self, stream_id: str, from_version: int = 0
    ) -> tuple[list[domain_events.Event], bytes | None]:
        """`read_events`, plus the hash of the last event read (None when none was): the
        `prev_hash` of the caller's next append."""
        async with self._reader.connect() as conn:
            rows = (await conn.exec_driver_sql(_sql.READ_EVENTS, (stream_id, from_version))).all()
        decode = domain_events.decode_event
        events = [
            decode(data.encode(), type_name=kind, schema_version=schema)
            for kind, schema, data, _hash in rows
        ]
        return events, (bytes(rows[-1][3]) if rows else None)

    async def stream_version(self, stream_id: str) -> int:
        """The stream's length: the `expected_version` of its next append (0: no stream)."""
        async with self._reader.connect() as conn:
            length = (
                await conn.exec_driver_sql(_sql.STREAM_LENGTH, {"stream": stream_id})
            ).scalar_one()
        return int(length)

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """`stream_version` of many streams in one query (absent streams: 0). The live
        hub's safety poll asks it for every stream it follows at once."""
        if not stream_ids:
            return {}
        async with self._reader.connect() as conn:
            rows = await conn.exec_driver_sql(_sql.STREAM_LENGTHS, {"streams": list(stream_ids)})
            found = {row.stream_id: int(row.length) for row in rows}
        return {stream: found.get(stream, 0) for stream in stream_ids}

    async def read_all(self, after: Cursor = START, limit: int = 1000) -> list[StoredEvent]:
        """Up to `limit` events of all streams after `after`, in commit-safe global order
        (`_sql`'s rule: continuing from the last event's `cursor` misses nothing and
        repeats nothing)."""
        _check_limit(limit)
        async with self._reader.connect() as conn:
            rows = await conn.exec_driver_sql(_sql.READ_ALL, _sql.order_params(after, limit=limit))
            return [_sql.stored_event(row) for row in rows]

    async def read_page(
        self,
        after: Cursor = START,
        limit: int = 1000,
        *,
        types: Sequence[str] | None = None,
        until: Cursor | None = None,
        conn: AsyncConnection | None = None,
    ) -> Page:
        """Up to `limit` events after `after` in the global order of `read_all`, only of
        `types` when given and only up to `until` when given, in ONE statement: with
        where to continue (`Page.last`, which moves past the events of other types too)
        and whether committed events are held back by the rule, as of the same snapshot.
        On `conn` (in the caller's transaction) when given."""
        _check_limit(limit)
        sql = _sql.read_page(typed=types is not None, until=until is not None)
        params = _sql.order_params(after, until=until, limit=limit, types=_listed(types))
        async with self._connection(conn) as reader:
            rows = (await reader.exec_driver_sql(sql, params)).all()
        first = rows[0]
        events = [] if first.global_position is None else [_sql.stored_event(r) for r in rows]
        if len(events) == limit:
            last: Cursor | None = events[-1].cursor
        elif first.reach_tx is None:
            last = None
        else:
            last = Cursor(int(first.reach_tx), first.reach_position)
        return Page(events, last, bool(first.held))

    async def read_streams(
        self,
        stream_ids: Sequence[str],
        *,
        types: Sequence[str] | None = None,
        conn: AsyncConnection | None = None,
    ) -> dict[str, list[EventData]]:
        """The events of many streams in one query (only of `types` when given), per
        stream in version order; a stream with none of them is absent. On `conn` when
        given. As `read_events`, what folding needs and nothing else: each event's type,
        schema version and exact bytes (`EventData`; `.event` decodes a match event),
        no ids, hashes or metadata, cheaper per row than `StoredEvent`s."""
        if not stream_ids:
            return {}
        params = {"streams": list(stream_ids), "types": _listed(types)}
        out: dict[str, list[EventData]] = {}
        async with self._connection(conn) as reader:
            for stream, kind, schema, data in await reader.exec_driver_sql(
                _sql.READ_STREAMS, params
            ):
                out.setdefault(stream, []).append(EventData(kind, schema, data.encode()))
        return out

    async def streams(self, prefix: str) -> list[str]:
        """The ids of the streams whose id starts with `prefix` (a kind of stream:
        `domain.streams.MATCH_PREFIX`, …), in the order they were begun."""
        async with self._reader.connect() as conn:
            rows = await conn.exec_driver_sql(_sql.STREAMS, {"prefix": prefix})
            return [row.stream_id for row in rows]

    async def head(self) -> Cursor:
        """The cursor of the newest event in the global order (START: none), counting
        events the rule still holds back."""
        async with self._reader.connect() as conn:
            row = (await conn.exec_driver_sql(_sql.HEAD)).first()
        return START if row is None else Cursor(int(row.tx), row.global_position)

    async def settle(self, until: Cursor, *, poll: float = 0.02) -> None:
        """Returns once the rule lets a follower read every event up to `until`: no
        transaction as old as its `tx` still runs, so no event can join them any more
        (checked every `poll` seconds: PostgreSQL has no notice of it)."""
        async with self._reader.connect() as conn:
            params = _sql.order_params(START, until=until)
            while not (await conn.exec_driver_sql(_sql.SETTLED, params)).scalar_one():
                await asyncio.sleep(poll)

    async def backlog(self, after: Cursor, of_type: str | None = None) -> Backlog:
        """How far `after` is behind the log: the newest position, the events after it
        (held back or not, counted up to `BACKLOG_COUNT`), the age of the oldest, and how
        many of them are of the type `of_type`."""
        params = _sql.order_params(after, limit=BACKLOG_COUNT, of_type=of_type)
        async with self._reader.connect() as conn:
            row = (await conn.exec_driver_sql(_sql.BACKLOG, params)).one()
        return Backlog(
            int(row.head_position), int(row.events), float(row.seconds), int(row.of_type)
        )

    @contextlib.asynccontextmanager
    async def _connection(self, conn: AsyncConnection | None) -> AsyncIterator[AsyncConnection]:
        """`conn` when the caller gives one, else an autocommit connection of the pool."""
        if conn is not None:
            yield conn
            return
        async with self._reader.connect() as own:
            yield own

    async def verify_stream(self, stream_id: str) -> int:
        """Recompute the stream's hash chain; its length if intact, else `ChainBroken`."""
        return check_chain(stream_id, await self.read_stream(stream_id))

    # ------------------------------------------------------------------------- listen

    def listen(self) -> Listener:
        """A `Listener` for the NOTIFY hints, on its own connection (use `async with`)."""
        return Listener(libpq_url(self.engine.url))


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError("limit must be at least 1")


def _listed(types: Sequence[str] | None) -> list[str] | None:
    if isinstance(types, str):  # a str is a sequence of str: one type was meant
        raise TypeError("types: a sequence of type names, not one name")
    return None if types is None else list(types)


def _statement(
    stream_id: str,
    expected_version: int,
    items: list[EventData],
    meta: dict[str, Any],
    command_id: str | None,
    prev_hash: bytes,
    side: Sequence[SideWrite],
) -> tuple[str, dict[str, Any], list[Link]]:
    """The append statement of these events chained on `prev_hash`, its parameters and
    the rows it inserts."""
    links = link(stream_id, expected_version, prev_hash, items, command_id)
    last_version = links[-1].version
    params: dict[str, Any] = {
        "stream": stream_id,
        "meta": msgspec.json.encode(meta).decode(),
        "prev_version": expected_version - 1,
        "head_hash": prev_hash,
    }
    for i, row in enumerate(links):
        params |= {
            f"v{i}": row.version,
            f"id{i}": row.event_id,
            f"t{i}": row.item.type,
            f"s{i}": row.item.schema_version,
            f"d{i}": row.item.data.decode("utf-8"),
            f"p{i}": row.prev_hash,
            f"h{i}": row.hash,
        }
    if command_id is not None:
        params |= {"command": command_id, "first": expected_version, "last": last_version}
    for write in side:
        params |= write.params
    sql = _sql.append_statement(
        len(links),
        expected_version == 0,
        command_id is not None,
        [(write.sql, write.lock) for write in side],
    )
    return sql, params, links


def _result(
    stream_id: str, links: Sequence[Link], meta: dict[str, Any], rows: Sequence[Any]
) -> AppendResult:
    """The outcome of an append from what it sent (`links`, `meta`) and the rows of
    `APPENDED_COLUMNS` its statement returned (what the database assigned)."""
    # By position (`APPENDED_COLUMNS`' order): the group commit's rows are plain tuples.
    assigned = {row[0]: row for row in rows}
    metadata = stored_metadata(meta)
    events = []
    for sent in links:
        _version, position, tx, recorded_at = assigned[sent.version]
        events.append(
            sent.stored(
                stream_id, metadata, global_position=position, tx=int(tx), recorded_at=recorded_at
            )
        )
    return AppendResult(
        stream_id=stream_id,
        first_version=links[0].version,
        last_version=links[-1].version,
        events=tuple(events),
    )
