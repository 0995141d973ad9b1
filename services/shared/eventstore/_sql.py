"""The SQL of the PostgreSQL store, as driver-level text (psycopg `%(name)s` parameters):
the append statement, the reads, the global-order rule (written once), and the one row
builder. No other module of the product reads the `events` table.

Every statement that reads events selects `EVENT_COLUMNS` from `events e`, so one
function (`stored_event`) turns any of their rows into a `StoredEvent`; the append
statement returns only what the database assigned (`APPENDED_COLUMNS`), and the store
completes each event from what it sent. The tables are
declared in `_tables` (and made by the migrations, migrations/versions/0001_event_store.py).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final

from ._records import Cursor, StoredEvent
from ._tables import events_table

__all__ = [
    "APPENDED_COLUMNS",
    "BACKLOG",
    "EVENT_COLUMNS",
    "HEAD",
    "HEAD_AND_COMMAND",
    "READ_ALL",
    "READ_EVENTS",
    "READ_RANGE",
    "READ_STREAM",
    "READ_STREAMS",
    "SETTLED",
    "STREAMS",
    "STREAM_LENGTH",
    "STREAM_LENGTHS",
    "append_statement",
    "is_unique_violation",
    "order_params",
    "read_page",
    "stored_event",
]

# Every column of `events`, `tx` and `data` as text: xid8 has no cast to bigint, and
# `json` text is the exact bytes.
_AS_TEXT: Final = frozenset({"tx", "data"})
EVENT_COLUMNS: Final = ", ".join(
    f"e.{c.name}::text AS {c.name}" if c.name in _AS_TEXT else f"e.{c.name}"
    for c in events_table.columns
)


# What an append's statement returns of each row it inserted: the columns the database
# assigns. The append knows every other column already (it sent them), and reading them
# back (the data as text, the metadata parsed, the id and hashes) had cost the service
# and the server for nothing.
APPENDED_COLUMNS: Final = "e.stream_version, e.global_position, e.tx::text AS tx, e.recorded_at"


def stored_event(row: Any) -> StoredEvent:
    """The `StoredEvent` of a row of `EVENT_COLUMNS` (the one row builder of reads)."""
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


# ------------------------------------------------------------------------------ reads

READ_STREAM: Final = (
    f"SELECT {EVENT_COLUMNS} FROM events e"
    " WHERE e.stream_id = %(stream)s AND e.stream_version >= %(from)s"
    " ORDER BY e.stream_version LIMIT %(limit)s"
)
READ_RANGE: Final = (
    f"SELECT {EVENT_COLUMNS} FROM events e"
    " WHERE e.stream_id = %(stream)s AND e.stream_version BETWEEN %(first)s AND %(last)s"
    " ORDER BY e.stream_version"
)
# What folding needs and nothing else (see `EventStore.read_events`).
READ_EVENTS: Final = (
    "SELECT type, schema_version, data::text, hash FROM events"
    " WHERE stream_id = %s AND stream_version >= %s ORDER BY stream_version"
)
# Many streams at once, as one array parameter however many there are (absent ones: no row).
STREAM_LENGTHS: Final = (
    "SELECT stream_id, max(stream_version) + 1 AS length FROM events"
    " WHERE stream_id = ANY(%(streams)s::text[]) GROUP BY stream_id"
)
STREAM_LENGTH: Final = (
    "SELECT coalesce(max(stream_version) + 1, 0) FROM events WHERE stream_id = %(stream)s"
)
# One round trip: the stream's last (version, hash) and the command's record, if any.
HEAD_AND_COMMAND: Final = (
    "SELECT h.stream_version, h.hash, c.stream_id AS command_stream, c.first_version,"
    " c.last_version FROM (SELECT 1) AS one"
    " LEFT JOIN (SELECT stream_version, hash FROM events WHERE stream_id = %(stream)s"
    " ORDER BY stream_version DESC LIMIT 1) AS h ON true"
    " LEFT JOIN commands c ON c.command_id = %(command)s"
)

# ----------------------------------------------------------------- the global order
#
# docs/design.md#the-global-order: follow `(tx, global_position)`, and read only rows whose
# transaction is older than every transaction still running. Identity values are handed out at
# insert time but transactions commit in any order; a row that becomes visible later has a `tx`
# at or above today's xmin, so it sorts after every row returned now: a follower never
# skips a late commit and never sees an event twice. Written here once (`_AFTER`,
# `_SETTLED`), for every read of the global order: `read_all`, `read_page`, `backlog`,
# `head` and `settle`.

_AFTER: Final = "({a}.tx, {a}.global_position) > (%(after_tx)s::xid8, %(after_position)s)"
_UNTIL: Final = "({a}.tx, {a}.global_position) <= (%(until_tx)s::xid8, %(until_position)s)"
_SETTLED: Final = "{a}.tx < pg_snapshot_xmin(pg_current_snapshot())"
_TYPED: Final = "{a}.type = ANY(%(types)s::text[])"


def _readable(a: str, *, until: bool) -> str:
    """The rows after the cursor (up to `until`) that the rule lets a follower read."""
    where = f"{_AFTER.format(a=a)} AND {_SETTLED.format(a=a)}"
    return where + (f" AND {_UNTIL.format(a=a)}" if until else "")


# `read_all`: every column of the events after the cursor, in global order.
READ_ALL: Final = (
    f"SELECT {EVENT_COLUMNS} FROM events e WHERE {_readable('e', until=False)}"
    " ORDER BY e.tx, e.global_position LIMIT %(limit)s"
)


@functools.lru_cache(maxsize=8)
def read_page(*, typed: bool, until: bool) -> str:
    """`read_page`'s one statement: the readable events after the cursor (of
    `%(types)s` when `typed`, up to the cursor `%(until_…)s` when `until`), at most
    `%(limit)s`; on every row, as of the same snapshot, the last readable event of any
    type (`reach_tx`, `reach_position`: NULL when there is none) and whether committed
    events after the cursor are held back (`held`). The one-row left side keeps both
    when no event is given. (Ordered by `tx8`, the xid8 itself: `tx` is its text, and
    "999" sorts after "1000".)"""
    given = _readable("e", until=until) + (f" AND {_TYPED.format(a='e')}" if typed else "")
    return (
        "SELECT r.held, r.reach_tx, r.reach_position, p.* FROM (SELECT"
        f" EXISTS (SELECT FROM events h WHERE {_AFTER.format(a='h')}"
        f" AND NOT {_SETTLED.format(a='h')}) AS held,"
        " reach.tx::text AS reach_tx, reach.global_position AS reach_position"
        " FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT c.tx, c.global_position"
        f" FROM events c WHERE {_readable('c', until=until)}"
        " ORDER BY c.tx DESC, c.global_position DESC LIMIT 1) AS reach ON true) AS r"
        f" LEFT JOIN LATERAL (SELECT e.tx AS tx8, {EVENT_COLUMNS} FROM events e"
        f" WHERE {given} ORDER BY e.tx, e.global_position LIMIT %(limit)s) AS p ON true"
        " ORDER BY p.tx8, p.global_position"
    )


# The newest event in the global order (committed, held back or not).
HEAD: Final = (
    "SELECT e.tx::text AS tx, e.global_position FROM events e"
    " ORDER BY e.tx DESC, e.global_position DESC LIMIT 1"
)
# Whether the rule lets a follower read every event up to `%(until_tx)s`: no transaction
# as old as it still runs, so none can add an event before it any more.
SETTLED: Final = "SELECT pg_snapshot_xmin(pg_current_snapshot()) > %(until_tx)s::xid8"
# How far a cursor is behind: all the events after it, held back or not.
BACKLOG: Final = (
    "SELECT (SELECT coalesce(max(global_position), 0) FROM events) AS head_position,"
    " count(*) AS events, coalesce(extract(epoch FROM now() - min(b.recorded_at)), 0)"
    " AS seconds, count(*) FILTER (WHERE b.type = %(of_type)s) AS of_type"
    f" FROM (SELECT e.recorded_at, e.type FROM events e WHERE {_AFTER.format(a='e')}"
    " LIMIT %(limit)s) AS b"
)


def order_params(after: Cursor, *, until: Cursor | None = None, **more: Any) -> dict[str, Any]:
    """The parameters of the global-order statements: the cursor (and `until`) as text
    for xid8, and `more`."""
    params = {"after_tx": str(after.tx), "after_position": after.position, **more}
    if until is not None:
        params |= {"until_tx": str(until.tx), "until_position": until.position}
    return params


# Streams begun under a prefix (their version 0), in the order they were begun.
STREAMS: Final = (
    "SELECT stream_id FROM events WHERE stream_version = 0"
    " AND starts_with(stream_id, %(prefix)s) ORDER BY global_position"
)
# The events of many streams (of some types), per stream in version order: what folding
# needs (as `READ_EVENTS`).
READ_STREAMS: Final = (
    "SELECT stream_id, type, schema_version, data::text FROM events"
    " WHERE stream_id = ANY(%(streams)s::text[])"
    " AND (%(types)s::text[] IS NULL OR type = ANY(%(types)s::text[]))"
    " ORDER BY stream_id, stream_version"
)


# ---------------------------------------------------------------------------- append

RECORD_COMMAND: Final = (
    "command_record AS (INSERT INTO commands (command_id, stream_id, first_version,"
    " last_version) SELECT %(command)s, %(stream)s, %(first)s, %(last)s FROM appended)"
)


@functools.lru_cache(maxsize=64)
def _append_statement(
    count: int, new_stream: bool, record_command: bool, sides: tuple[tuple[str, str | None], ...]
) -> str:
    head = (
        "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM events WHERE stream_id = %(stream)s)"
        if new_stream
        else "SELECT 1 FROM events WHERE stream_id = %(stream)s"
        " AND stream_version = %(prev_version)s AND hash = %(head_hash)s"
    )
    # Evaluated while `head` yields its row, so before any event row is inserted.
    for _sql, lock in sides:
        if lock:
            head += f" AND (SELECT count(*) FROM ({lock}) AS locked) >= 0"
    values = ", ".join(
        f"(%(v{i})s::integer, %(id{i})s::uuid, %(t{i})s::text, %(s{i})s::integer,"
        f" %(d{i})s::json, %(p{i})s::bytea, %(h{i})s::bytea)"
        for i in range(count)
    )
    ctes = [RECORD_COMMAND] if record_command else []
    ctes += [f"side{n} AS ({sql})" for n, (sql, _lock) in enumerate(sides)]
    extra = "".join(f", {cte}" for cte in ctes)
    return (
        f"WITH head AS ({head}),"
        " inserted AS (INSERT INTO events AS e (stream_id, stream_version, event_id, type,"
        " schema_version, data, metadata, prev_hash, hash)"
        " SELECT %(stream)s, v.version, v.id, v.type, v.schema, v.data, %(meta)s::jsonb,"
        " v.prev, v.hash"
        f" FROM (VALUES {values}) AS v (version, id, type, schema, data, prev, hash), head"
        f" RETURNING {APPENDED_COLUMNS}),"
        f" appended AS (SELECT 1 FROM inserted LIMIT 1){extra}"
        " SELECT * FROM inserted"
    )


def append_statement(
    count: int, new_stream: bool, record_command: bool, sides: Sequence[tuple[str, str | None]]
) -> str:
    """The ONE statement of an append of `count` events (cached by shape): it inserts them
    only if the stream's head is still the one they were chained to (`%(prev_version)s`
    with `%(head_hash)s`; none for a new stream), records the command id with them, runs
    the side writes `(sql, lock)` when they go in, and returns the rows it inserted."""
    return _append_statement(count, new_stream, record_command, tuple(sides))


def is_unique_violation(exc: BaseException) -> bool:
    """Whether a DBAPI error is a unique violation (a lost append race)."""
    return getattr(getattr(exc, "orig", None), "sqlstate", None) == "23505"
