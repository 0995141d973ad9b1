"""The event store: one append-only PostgreSQL table (DESIGN.md §3, docs/event-store.md).

    store = EventStore(engine)
    result = await store.append("match-42", expected_version=7, events=[...],
                                command_id="player-1:6f1c…", metadata={"actor": "player-1"})
    events = await store.read_stream("match-42")
    batch = await store.read_all(after=cursor, limit=500)
    async with store.listen() as listener: ...

- `append` writes a command's events to one stream in one transaction. Versions are
  0-based; `expected_version` is the stream's length when the command was decided, so the
  new events get versions `expected_version + i`. Any other writer that got there first
  makes it raise `ConcurrencyError` (HTTP 409); nothing is lost or overwritten.
- With a `command_id`, event ids are `uuid5(COMMAND_NAMESPACE, f"{command_id}:{i}")` and the
  command is recorded in `commands`: a retried command (even two racing retries) returns
  the first outcome, `duplicate=True`, and appends nothing. Command ids are global: the
  services scope them (for example by player) before they get here.
- Every event extends its stream's hash chain, `domain.chain.event_hash`.
- `read_all` pages through every stream in commit-safe order with `Cursor(tx, position)`:
  only rows whose transaction id is below the oldest transaction still running, ordered by
  `(tx, global_position)`. A follower never skips an event that commits late and never sees
  one twice, without any lock on append.
- After a commit, `append` sends NOTIFY `ludo_events` with `{"stream_id", "version"}`: a
  wake-up hint only. `listen()` receives them on a dedicated connection; readers always
  catch up from their cursor, so a lost hint delays an event but never loses it.

Errors (everything raised on purpose derives from `EventStoreError`):

    EventStoreError
    ├── ConcurrencyError        expected_version is not the stream's length (HTTP 409)
    ├── IdempotencyKeyReused    the command id was already used on another stream (HTTP 422)
    └── ChainBroken             stored events fail the hash-chain check (`verify_stream`)

Bad arguments (empty event list, negative version, oversized ids) raise `ValueError`;
database failures surface as SQLAlchemy's `DBAPIError`. The store expects the default
READ COMMITTED isolation on the connections it is given.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Final

import msgspec
import psycopg
import sqlalchemy as sa
import structlog
from sqlalchemy.dialects.postgresql import ARRAY, JSON, JSONB
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import events as domain_events
from domain.chain import GENESIS, event_hash, first_break
from services.shared.database import libpq_url
from services.shared.logging import describe_exception

__all__ = [
    "CHANNEL",
    "COMMAND_NAMESPACE",
    "START",
    "AppendResult",
    "ChainBroken",
    "ConcurrencyError",
    "Cursor",
    "EventData",
    "EventStore",
    "EventStoreError",
    "IdempotencyKeyReused",
    "Listener",
    "Notification",
    "SideWrite",
    "StoredEvent",
    "event_ids_for",
]

_log = structlog.get_logger(__name__)

CHANNEL: Final = "ludo_events"
COMMAND_NAMESPACE: Final = uuid.UUID("1c6b3c52-52a3-5c1e-9a3c-6c75646f0001")
MAX_ID_LENGTH: Final = 200

# ------------------------------------------------------------------------------- errors


class EventStoreError(Exception):
    """Base class of the errors the event store raises on purpose."""


class ConcurrencyError(EventStoreError):
    """Another append reached the stream first: its length is `actual`, not `expected`."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream_id!r} is at version {actual}, expected {expected}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class IdempotencyKeyReused(EventStoreError):
    """The command id already appended to `other_stream_id`; it cannot name a new command."""

    def __init__(self, command_id: str, stream_id: str, other_stream_id: str) -> None:
        super().__init__(
            f"command {command_id!r} already appended to {other_stream_id!r}, not {stream_id!r}"
        )
        self.command_id = command_id
        self.stream_id = stream_id
        self.other_stream_id = other_stream_id


class ChainBroken(EventStoreError):
    """A stored event breaks its stream's hash chain (tampering or corruption)."""

    def __init__(self, stream_id: str, version: int, reason: str) -> None:
        super().__init__(
            f"stream {stream_id!r} breaks its hash chain at version {version}: {reason}"
        )
        self.stream_id = stream_id
        self.version = version
        self.reason = reason


# ------------------------------------------------------------------------------- values


class Cursor(msgspec.Struct, frozen=True, order=True):
    """A position in the global order: the `(tx, global_position)` of the last event read."""

    tx: int
    position: int


START: Final = Cursor(0, 0)


class EventData(msgspec.Struct, frozen=True):
    """An event ready to store: type name, schema version and its serialized bytes."""

    type: str
    schema_version: int
    data: bytes

    @classmethod
    def of(cls, event: msgspec.Struct) -> EventData:
        """From a tagged msgspec Struct (a `domain.events.Event` or any other stream's)."""
        kind = type(event)
        tag = kind.__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{kind.__name__} is not a tagged event struct")
        data = (
            domain_events.encode_event(event)  # type: ignore[arg-type]
            if tag in domain_events.EVENT_TYPES
            else msgspec.json.encode(event)
        )
        return cls(tag, int(getattr(kind, "schema_version", 1)), data)


class StoredEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the `events` table; `data` holds the exact bytes that were hashed."""

    global_position: int
    tx: int
    stream_id: str
    version: int
    event_id: uuid.UUID
    type: str
    schema_version: int
    data: bytes
    metadata: dict[str, Any]
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes

    @property
    def cursor(self) -> Cursor:
        """The cursor to continue `read_all` after this event."""
        return Cursor(self.tx, self.global_position)

    @property
    def event(self) -> domain_events.Event:
        """The match event, upcast from its stored schema version to the current one."""
        return domain_events.decode_event(
            self.data, type_name=self.type, schema_version=self.schema_version
        )


class AppendResult(msgspec.Struct, frozen=True, kw_only=True):
    """What an append stored: versions `first_version..last_version` of `stream_id`.

    `duplicate` is True when the command had already appended: `events` are then the ones
    its first attempt stored, and nothing new was written. `next_version` is the
    `expected_version` of the stream's next append (as of this command).
    """

    stream_id: str
    first_version: int
    last_version: int
    events: tuple[StoredEvent, ...]
    duplicate: bool = False

    @property
    def next_version(self) -> int:
        return self.last_version + 1


class Notification(msgspec.Struct, frozen=True):
    """A NOTIFY hint: `stream_id` has events up to `version` (committed)."""

    stream_id: str
    version: int


def event_ids_for(command_id: str, count: int) -> list[uuid.UUID]:
    """The ids of the events a command appends: derived from the command id alone."""
    return [uuid.uuid5(COMMAND_NAMESPACE, f"{command_id}:{i}") for i in range(count)]


# ----------------------------------------------------------------------- table mapping


class _JsonText(sa.types.TypeDecorator[bytes]):
    """`json` column holding exact bytes: written as text cast to json, read as text."""

    impl = sa.Text
    cache_ok = True

    def bind_expression(self, bindvalue: Any) -> Any:
        return sa.cast(bindvalue, JSON)

    def column_expression(self, col: Any) -> Any:
        return sa.type_coerce(sa.cast(col, sa.Text), self)

    def process_bind_param(self, value: bytes | None, dialect: Any) -> str | None:
        return None if value is None else value.decode("utf-8")

    def process_result_value(self, value: str | None, dialect: Any) -> bytes | None:
        return None if value is None else value.encode("utf-8")


class _Xid8(sa.types.TypeDecorator[int]):
    """`xid8` as a Python int (sent and read as text: there is no bigint cast)."""

    impl = sa.Text
    cache_ok = True

    def bind_expression(self, bindvalue: Any) -> Any:
        return sa.cast(bindvalue, _XID8)

    def column_expression(self, col: Any) -> Any:
        return sa.type_coerce(sa.cast(col, sa.Text), self)

    def process_bind_param(self, value: int | None, dialect: Any) -> str | None:
        return None if value is None else str(value)

    def process_result_value(self, value: str | None, dialect: Any) -> int | None:
        return None if value is None else int(value)


class _Xid8Name(sa.types.UserDefinedType[str]):
    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "xid8"


_XID8 = _Xid8Name()

metadata_obj = sa.MetaData()

events_table = sa.Table(
    "events",
    metadata_obj,
    sa.Column("global_position", sa.BigInteger, primary_key=True),
    sa.Column("tx", _Xid8()),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("stream_version", sa.Integer, nullable=False),
    sa.Column("event_id", sa.Uuid, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("data", _JsonText, nullable=False),
    sa.Column("metadata", JSONB, nullable=False),
    sa.Column("recorded_at", sa.DateTime(timezone=True)),
    sa.Column("prev_hash", sa.LargeBinary, nullable=False),
    sa.Column("hash", sa.LargeBinary, nullable=False),
)

commands_table = sa.Table(
    "commands",
    metadata_obj,
    sa.Column("command_id", sa.Text, primary_key=True),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("first_version", sa.Integer, nullable=False),
    sa.Column("last_version", sa.Integer, nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True)),
)

_E = events_table.c
_C = commands_table.c
_COLUMNS = (
    _E.global_position,
    _E.tx,
    _E.stream_id,
    _E.stream_version,
    _E.event_id,
    _E.type,
    _E.schema_version,
    _E.data,
    _E.metadata,
    _E.recorded_at,
    _E.prev_hash,
    _E.hash,
)


_READ_EVENTS: Final = (
    "SELECT type, schema_version, data::text, hash FROM events"
    " WHERE stream_id = %s AND stream_version >= %s ORDER BY stream_version"
)


class SideWrite(msgspec.Struct, frozen=True):
    """A data-modifying SQL fragment for `append_statement`, e.g. an upsert of a side
    table. It must read the relation `appended` (so it writes only when the events do)
    and name its parameters `%(name)s`, distinct from the store's own.

    `lock`: a `SELECT … FOR UPDATE` of the rows `sql` will write, taken BEFORE the events
    are inserted. Without it the side rows would be locked after the insert, and a
    transaction that locked them first and then appends to the same stream (the deadline
    scheduler does) would deadlock with this statement instead of losing the race cleanly.
    """

    sql: str
    params: dict[str, Any]
    lock: str | None = None


_RECORD_COMMAND: Final = (
    "command_record AS (INSERT INTO commands (command_id, stream_id, first_version,"
    " last_version) SELECT %(command)s, %(stream)s, %(first)s, %(last)s FROM appended)"
)


@functools.lru_cache(maxsize=64)
def _append_statement_cached(
    count: int, new_stream: bool, ctes: tuple[str, ...], locks: tuple[str, ...]
) -> str:
    head = (
        "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM events WHERE stream_id = %(stream)s)"
        if new_stream
        else "SELECT 1 FROM events WHERE stream_id = %(stream)s"
        " AND stream_version = %(prev_version)s AND hash = %(head_hash)s"
    )
    # Evaluated while `head` yields its row, so before any event row is inserted.
    for lock in locks:
        head += f" AND (SELECT count(*) FROM ({lock}) AS locked) >= 0"
    values = ", ".join(
        f"(%(v{i})s::integer, %(id{i})s::uuid, %(t{i})s::text, %(s{i})s::integer,"
        f" %(d{i})s::json, %(p{i})s::bytea, %(h{i})s::bytea)"
        for i in range(count)
    )
    extra = "".join(f", {cte}" for cte in ctes)
    return (
        f"WITH head AS ({head}),"
        " inserted AS (INSERT INTO events (stream_id, stream_version, event_id, type,"
        " schema_version, data, metadata, prev_hash, hash)"
        " SELECT %(stream)s, v.version, v.id, v.type, v.schema, v.data, %(meta)s::jsonb,"
        " v.prev, v.hash"
        f" FROM (VALUES {values}) AS v (version, id, type, schema, data, prev, hash), head"
        " RETURNING global_position, tx::text AS tx, stream_id, stream_version, event_id,"
        " type, schema_version, data::text AS data, metadata, recorded_at, prev_hash, hash),"
        f" appended AS (SELECT 1 FROM inserted LIMIT 1){extra}"
        " SELECT * FROM inserted"
    )


def _append_statement(count: int, new_stream: bool, ctes: list[str], locks: list[str]) -> str:
    return _append_statement_cached(count, new_stream, tuple(ctes), tuple(locks))


def _stored_row(row: Any) -> StoredEvent:
    """A `StoredEvent` from a raw (driver-level) row of `append_statement`."""
    return StoredEvent(
        global_position=row.global_position,
        tx=int(row.tx),
        stream_id=row.stream_id,
        version=row.stream_version,
        event_id=row.event_id,
        type=row.type,
        schema_version=row.schema_version,
        data=row.data.encode("utf-8"),
        metadata=row.metadata,
        recorded_at=row.recorded_at,
        prev_hash=bytes(row.prev_hash),
        hash=bytes(row.hash),
    )


def _stored(row: sa.Row[Any]) -> StoredEvent:
    return StoredEvent(
        global_position=row.global_position,
        tx=row.tx,
        stream_id=row.stream_id,
        version=row.stream_version,
        event_id=row.event_id,
        type=row.type,
        schema_version=row.schema_version,
        data=row.data,
        metadata=row.metadata,
        recorded_at=row.recorded_at,
        prev_hash=bytes(row.prev_hash),
        hash=bytes(row.hash),
    )


def _head_and_command(stream_id: str, command_id: str | None) -> sa.Select[Any]:
    """One round trip: the stream's last (version, hash) and the command's record."""
    head = (
        sa.select(_E.stream_version, _E.hash)
        .where(_E.stream_id == stream_id)
        .order_by(_E.stream_version.desc())
        .limit(1)
        .subquery("head")
    )
    command = (
        sa.select(_C.stream_id, _C.first_version, _C.last_version)
        .where(_C.command_id == command_id if command_id is not None else sa.false())
        .subquery("command")
    )
    one = sa.select(sa.literal(1).label("one")).subquery("one")
    return sa.select(
        head.c.stream_version,
        head.c.hash,
        command.c.stream_id.label("command_stream"),
        command.c.first_version,
        command.c.last_version,
    ).select_from(one.outerjoin(head, sa.true()).outerjoin(command, sa.true()))


def _is_unique_violation(exc: sa.exc.IntegrityError) -> bool:
    return getattr(exc.orig, "sqlstate", None) == "23505"


# --------------------------------------------------------------------------- the store


class EventStore:
    """Append to and read from the `events` table through an async SQLAlchemy engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # Reads are single statements (or reads of immutable rows): in autocommit they
        # cost one round trip instead of three (BEGIN, SELECT, ROLLBACK), with the same
        # consistency (one statement sees one snapshot).
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    # ------------------------------------------------------------------------- append

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[domain_events.Event | EventData | msgspec.Struct],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AppendResult:
        """Append `events` to `stream_id` at `expected_version` in one transaction.

        Raises `ConcurrencyError` when the stream's length is not `expected_version`, and
        `IdempotencyKeyReused` when `command_id` already appended to another stream. A
        command id that already appended to this stream returns that first outcome.
        """
        prepared = _prepare(stream_id, expected_version, events, command_id, metadata)
        async with self.engine.connect() as conn:
            try:
                async with conn.begin():
                    result = await self._append(
                        conn, stream_id, expected_version, *prepared, command_id
                    )
            except sa.exc.IntegrityError as exc:
                if not _is_unique_violation(exc):
                    raise
                async with conn.begin():
                    return await self._resolve(conn, stream_id, expected_version, command_id)
            if not result.duplicate:
                await self._notify(conn, result)
        return result

    async def append_in(
        self,
        conn: AsyncConnection,
        stream_id: str,
        expected_version: int,
        events: Sequence[domain_events.Event | EventData | msgspec.Struct],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        savepoint: bool = True,
    ) -> AppendResult:
        """`append` inside the caller's transaction on `conn` (committed by the caller).

        For writing side tables (seeds, deadlines) atomically with the events. The insert
        runs in a savepoint, so a conflict leaves the caller's transaction usable. Call
        `notify(result)` after the commit.

        With `savepoint=False` (two round trips fewer) a conflicting insert aborts the
        caller's transaction and its `IntegrityError` propagates: roll back, then call
        `resolve` for the outcome (`ConcurrencyError`, or the first outcome of a retry).
        """
        prepared = _prepare(stream_id, expected_version, events, command_id, metadata)
        if not savepoint:
            return await self._append(conn, stream_id, expected_version, *prepared, command_id)
        try:
            async with conn.begin_nested():
                return await self._append(conn, stream_id, expected_version, *prepared, command_id)
        except sa.exc.IntegrityError as exc:
            if not _is_unique_violation(exc):
                raise
            return await self._resolve(conn, stream_id, expected_version, command_id)

    async def _append(
        self,
        conn: AsyncConnection,
        stream_id: str,
        expected_version: int,
        items: list[EventData],
        meta: dict[str, Any],
        command_id: str | None,
    ) -> AppendResult:
        found, earlier = await self._head_and_outcome(conn, stream_id, command_id)
        if earlier is not None:
            return earlier
        actual = 0 if found.stream_version is None else found.stream_version + 1
        if actual != expected_version:
            raise ConcurrencyError(stream_id, expected_version, actual)
        prev = GENESIS if found.hash is None else bytes(found.hash)

        ids = (
            event_ids_for(command_id, len(items))
            if command_id is not None
            else [uuid.uuid4() for _ in items]
        )
        rows = []
        for i, item in enumerate(items):
            version = expected_version + i
            digest = event_hash(prev, stream_id, version, item.type, item.schema_version, item.data)
            rows.append(
                {
                    "stream_id": stream_id,
                    "stream_version": version,
                    "event_id": ids[i],
                    "type": item.type,
                    "schema_version": item.schema_version,
                    "data": item.data,
                    "metadata": meta,
                    "prev_hash": prev,
                    "hash": digest,
                }
            )
            prev = digest
        last_version = expected_version + len(items) - 1
        insert = events_table.insert().values(rows).returning(*_COLUMNS)
        if command_id is not None:
            # The idempotency record goes in with the events, in the same statement.
            record = commands_table.insert().values(
                command_id=command_id,
                stream_id=stream_id,
                first_version=expected_version,
                last_version=last_version,
            )
            insert = insert.add_cte(record.cte("command_record"))
        stored = [_stored(row) for row in (await conn.execute(insert)).all()]
        stored.sort(key=lambda e: e.version)
        return AppendResult(
            stream_id=stream_id,
            first_version=expected_version,
            last_version=last_version,
            events=tuple(stored),
        )

    async def append_statement(
        self,
        stream_id: str,
        expected_version: int,
        prev_hash: bytes,
        events: Sequence[domain_events.Event | EventData | msgspec.Struct],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        side: Sequence[SideWrite] = (),
    ) -> AppendResult:
        """`append` as ONE autocommit statement, then the NOTIFY hint: two round trips
        where `append` takes five (BEGIN, head, INSERT, COMMIT, NOTIFY).

        For a caller that already knows the hash of the stream's last event (`prev_hash`;
        `GENESIS` for a new stream), as a service that keeps folded streams does: the
        statement inserts the events only if the event at `expected_version - 1` still
        has that hash, so a stale caller can never fork the chain. The guarantees are
        `append`'s: a writer that got there first makes it raise `ConcurrencyError`, a
        retried `command_id` returns the first outcome.

        `side` statements (`SideWrite`) run inside the same statement and take effect
        only when the events do: each is a data-modifying SQL fragment that reads the
        relation `appended` (one row when the events go in, none otherwise).
        """
        items, meta = _prepare(stream_id, expected_version, events, command_id, metadata)
        if len(prev_hash) != len(GENESIS):
            raise ValueError("prev_hash must be 32 bytes")
        ids = (
            event_ids_for(command_id, len(items))
            if command_id is not None
            else [uuid.uuid4() for _ in items]
        )
        params: dict[str, Any] = {
            "stream": stream_id,
            "meta": msgspec.json.encode(meta).decode(),
            "prev_version": expected_version - 1,
            "head_hash": prev_hash,
        }
        prev = prev_hash
        for i, item in enumerate(items):
            version = expected_version + i
            digest = event_hash(prev, stream_id, version, item.type, item.schema_version, item.data)
            params |= {
                f"v{i}": version,
                f"id{i}": ids[i],
                f"t{i}": item.type,
                f"s{i}": item.schema_version,
                f"d{i}": item.data.decode("utf-8"),
                f"p{i}": prev,
                f"h{i}": digest,
            }
            prev = digest
        last_version = expected_version + len(items) - 1
        ctes = []
        if command_id is not None:
            params |= {"command": command_id, "first": expected_version, "last": last_version}
            ctes.append(_RECORD_COMMAND)
        for n, write in enumerate(side):
            ctes.append(f"side{n} AS ({write.sql})")
            params |= write.params
        locks = [write.lock for write in side if write.lock]
        sql = _append_statement(len(items), expected_version == 0, ctes, locks)
        async with self._reader.connect() as conn:
            try:
                rows = (await conn.exec_driver_sql(sql, params)).all()
            except sa.exc.IntegrityError as exc:
                if not _is_unique_violation(exc):
                    raise
                return await self._resolve(conn, stream_id, expected_version, command_id)
            if not rows:
                # The head moved between the caller's read and this statement (or the
                # caller's prev_hash is wrong): nothing was written.
                try:
                    return await self._resolve(conn, stream_id, expected_version, command_id)
                except ConcurrencyError as exc:
                    if exc.actual != expected_version:
                        raise
                raise ValueError(f"prev_hash is not the hash of {stream_id}'s last event")
            stored = sorted((_stored_row(row) for row in rows), key=lambda e: e.version)
            result = AppendResult(
                stream_id=stream_id,
                first_version=expected_version,
                last_version=last_version,
                events=tuple(stored),
            )
            await conn.commit()  # ends SQLAlchemy's autobegun block; nothing is sent
            await self._notify(conn, result)
        return result

    async def resolve(
        self, stream_id: str, expected_version: int, command_id: str | None
    ) -> AppendResult:
        """After `append_in(savepoint=False)` failed with a unique violation (and the
        caller rolled back): the first outcome of the same command, or `ConcurrencyError`."""
        async with self._reader.connect() as conn:
            return await self._resolve(conn, stream_id, expected_version, command_id)

    @staticmethod
    def is_conflict(exc: sa.exc.IntegrityError) -> bool:
        """Whether an append's `IntegrityError` is a conflict (`resolve` tells which)."""
        return _is_unique_violation(exc)

    async def _resolve(
        self,
        conn: AsyncConnection,
        stream_id: str,
        expected_version: int,
        command_id: str | None,
    ) -> AppendResult:
        """After a unique violation: the same command won (its outcome) or another did."""
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
        found = (await conn.execute(_head_and_command(stream_id, command_id))).one()
        if found.command_stream is None:
            return found, None
        assert command_id is not None
        if found.command_stream != stream_id:
            raise IdempotencyKeyReused(command_id, stream_id, found.command_stream)
        first, last = found.first_version, found.last_version
        rows = await conn.execute(
            sa.select(*_COLUMNS)
            .where(_E.stream_id == stream_id, _E.stream_version.between(first, last))
            .order_by(_E.stream_version)
        )
        return found, AppendResult(
            stream_id=stream_id,
            first_version=first,
            last_version=last,
            events=tuple(_stored(row) for row in rows),
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
        """Send the NOTIFY hint for a committed `append_in` (no-op for duplicates).

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
        payload = msgspec.json.encode(Notification(result.stream_id, result.last_version))
        try:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.execute(sa.select(sa.func.pg_notify(CHANNEL, payload.decode())))
            await auto.commit()  # ends SQLAlchemy's autobegun block; nothing is sent
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            _log.warning("notify_failed", stream_id=result.stream_id, **describe_exception(exc))

    # --------------------------------------------------------------------------- read

    async def read_stream(
        self, stream_id: str, from_version: int = 0, *, limit: int | None = None
    ) -> list[StoredEvent]:
        """The events of `stream_id` from `from_version` on, in version order."""
        query = (
            sa.select(*_COLUMNS)
            .where(_E.stream_id == stream_id, _E.stream_version >= from_version)
            .order_by(_E.stream_version)
        )
        if limit is not None:
            query = query.limit(limit)
        async with self._reader.connect() as conn:
            return [_stored(row) for row in await conn.execute(query)]

    async def read_events(self, stream_id: str, from_version: int = 0) -> list[domain_events.Event]:
        """The match events of `stream_id` from `from_version` on, decoded and upcast, in
        version order: what folding needs, and nothing else (no ids, hashes, metadata).

        Several times cheaper per row than `read_stream`: a few columns, no SQLAlchemy
        type processing, no `StoredEvent`. Use `read_stream` to check the hash chain or to
        show stored events.
        """
        return (await self.read_events_and_hash(stream_id, from_version))[0]

    async def read_events_and_hash(
        self, stream_id: str, from_version: int = 0
    ) -> tuple[list[domain_events.Event], bytes | None]:
        """`read_events`, plus the hash of the last event read (None when none was): what
        a caller of `append_statement` needs to extend the chain."""
        async with self._reader.connect() as conn:
            rows = (await conn.exec_driver_sql(_READ_EVENTS, (stream_id, from_version))).all()
        decode = domain_events.decode_event
        events = [
            decode(data.encode(), type_name=kind, schema_version=schema)
            for kind, schema, data, _hash in rows
        ]
        return events, (bytes(rows[-1][3]) if rows else None)

    async def stream_version(self, stream_id: str) -> int:
        """The stream's length: the `expected_version` of its next append (0: no stream)."""
        async with self._reader.connect() as conn:
            last = await conn.scalar(
                sa.select(sa.func.max(_E.stream_version)).where(_E.stream_id == stream_id)
            )
        return 0 if last is None else int(last) + 1

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """`stream_version` of many streams in one query (absent streams: 0). The live hub's
        safety poll asks this for every stream it follows at once."""
        if not stream_ids:
            return {}
        query = (
            sa.select(_E.stream_id, sa.func.max(_E.stream_version))
            # One array parameter, however many streams (an IN list binds one each).
            .where(_E.stream_id == sa.any_(sa.literal(list(stream_ids), ARRAY(sa.Text))))
            .group_by(_E.stream_id)
        )
        async with self._reader.connect() as conn:
            found = {stream: int(last) + 1 for stream, last in await conn.execute(query)}
        return {stream: found.get(stream, 0) for stream in stream_ids}

    async def read_all(self, after: Cursor = START, limit: int = 1000) -> list[StoredEvent]:
        """Up to `limit` events of all streams after `after`, in commit-safe global order.

        Only rows whose transaction is older than every transaction still running
        (`tx < pg_snapshot_xmin(pg_current_snapshot())`) are returned, ordered by
        `(tx, global_position)`: any row that becomes visible later sorts after every row
        returned now, so continuing from the last event's `cursor` misses nothing and
        repeats nothing.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        cursor = sa.tuple_(
            sa.cast(sa.literal(str(after.tx)), _XID8), sa.literal(after.position, sa.BigInteger)
        )
        query = (
            sa.select(*_COLUMNS)
            .where(
                sa.tuple_(events_table.c.tx, _E.global_position) > cursor,
                events_table.c.tx < sa.func.pg_snapshot_xmin(sa.func.pg_current_snapshot()),
            )
            .order_by(_E.tx, _E.global_position)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            return [_stored(row) for row in await conn.execute(query)]

    async def verify_stream(self, stream_id: str) -> int:
        """Recompute the stream's hash chain; its length if intact, else `ChainBroken`."""
        stored = await self.read_stream(stream_id)
        broken = first_break(
            (e.stream_id, e.version, e.type, e.schema_version, e.data, e.prev_hash, e.hash)
            for e in stored
        )
        if broken is not None:
            raise ChainBroken(stream_id, *broken)
        return len(stored)

    # ------------------------------------------------------------------------- listen

    def listen(self) -> Listener:
        """A `Listener` for the NOTIFY hints, on its own connection (use `async with`)."""
        return Listener(libpq_url(self.engine.url))


class Listener:
    """LISTEN `ludo_events` on a dedicated psycopg connection (not from the pool).

        async with store.listen() as listener:
            async for note in listener:          # every hint, forever
                ...
            notes = await listener.wait(1.0)     # or: hints within 1 s ([] on timeout)

    Hints can be lost (a crash between commit and NOTIFY) or coalesced; always catch up
    with `read_all`/`read_stream` from your own cursor, and poll on timeout.
    """

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._conn: Any = None

    async def __aenter__(self) -> Listener:
        self._conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        await self._conn.execute(f"LISTEN {CHANNEL}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def __aiter__(self) -> AsyncIterator[Notification]:
        async for note in self._connection().notifies():
            yield _parse(note.payload)

    async def wait(self, timeout: float) -> list[Notification]:
        """The hints that arrive within `timeout` seconds (returns at the first batch)."""
        conn = self._connection()
        notes = [_parse(n.payload) async for n in conn.notifies(timeout=timeout, stop_after=1)]
        if notes:
            notes += [_parse(n.payload) async for n in conn.notifies(timeout=0)]
        return notes

    def _connection(self) -> Any:
        if self._conn is None:
            raise RuntimeError("use the listener inside `async with store.listen()`")
        return self._conn


def _parse(payload: str) -> Notification:
    return msgspec.json.decode(payload, type=Notification)


def _prepare(
    stream_id: str,
    expected_version: int,
    events: Sequence[domain_events.Event | EventData | msgspec.Struct],
    command_id: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[list[EventData], dict[str, Any]]:
    if not stream_id or len(stream_id) > MAX_ID_LENGTH:
        raise ValueError(f"stream id must have 1 to {MAX_ID_LENGTH} characters")
    if command_id is not None and not 0 < len(command_id) <= MAX_ID_LENGTH:
        raise ValueError(f"command id must have 1 to {MAX_ID_LENGTH} characters")
    if expected_version < 0:
        raise ValueError("expected_version must be >= 0")
    if not events:
        raise ValueError("an append needs at least one event")
    items = [e if isinstance(e, EventData) else EventData.of(e) for e in events]
    meta = dict(metadata or {})
    if command_id is not None:
        meta["command_id"] = command_id
    return items, meta
