"""The event store (docs/design.md#the-event-store, docs/event-store.md): streams of immutable
events, one append path, a commit-safe global order, NOTIFY hints.

    store = EventStore(engine)                       # PostgreSQL; InMemoryEventStore()
    result = await store.append("match-42", 7, [...], command_id="player-1:6f1c…",
                                metadata={"actor": "player-1"})
    events = await store.read_stream("match-42")
    batch = await store.read_all(after=cursor, limit=500)
    async with store.listen() as listener: ...

- `append` is the one way in: versions are 0-based and `expected_version` is the stream's
  length when the command was decided, so the new events get versions
  `expected_version + i`. Any other writer that got there first makes it raise
  `ConcurrencyError`; nothing is lost or overwritten. On PostgreSQL it is ONE statement
  (head check, events, command record, `SideWrite`s), on its own or inside the caller's
  transaction (`conn=`); a caller that knows the head's hash passes it (`prev_hash=`).
- With a `command_id`, event ids are `uuid5(COMMAND_NAMESPACE, f"{command_id}:{i}")` and
  the command is recorded: a retried command (even two racing retries) returns the first
  outcome, `duplicate=True`, and appends nothing. Command ids are global: the services
  scope them (for example by player) before they get here.
- Every event extends its stream's hash chain, `domain.chain.event_hash`.
- `read_all` pages through every stream with `Cursor(tx, position)` in commit-safe order
  (the rule is written once, in `_sql`): a follower never skips an event that commits
  late and never sees one twice, without any lock on append. `read_page` is the same
  order for a follower of some types (`Page.last`: where to continue, past the other
  types too; `Page.held_back`), up to a cursor when given; `head`, `settle(cursor)` and
  `backlog(cursor)` say where the log ends, wait until nothing can join it before a
  cursor, and how far a cursor is behind.
- `read_streams(ids, types=…)` reads many streams at once; `streams(prefix)` lists the
  streams of a kind (`domain.streams.MATCH_PREFIX`, …) in the order they were begun.
  These are the only reads of `events` in the product: the services read through them.
- After a commit a hint `{"stream_id", "version"}` goes to the listeners (NOTIFY
  `ludo_events` on PostgreSQL): a wake-up only; readers catch up from their cursor.

Errors:

    EventStoreError
    ├── ConcurrencyError        expected_version is not the stream's length
    ├── IdempotencyKeyReused    the command id already appended to another stream
    └── ChainBroken             stored events fail the hash-chain check (`verify_stream`)

Bad arguments raise `ValueError`; database failures surface as SQLAlchemy's `DBAPIError`.

Inside: `_errors`, `_records` (the values), `_prepare` (an append's pure half: checks, ids,
chain), `_tables` (the store's tables, declared once: `events_table`, `commands_table`),
`_sql` (the PostgreSQL statements and the one row builder), `_postgres` (the store),
`_listener` (LISTEN), `_memory` (the in-memory store), `_protocol` (the contract).
"""

from ._errors import ChainBroken, ConcurrencyError, EventStoreError, IdempotencyKeyReused
from ._listener import CHANNEL, Listener
from ._memory import InMemoryEventStore
from ._postgres import EventStore
from ._protocol import EventLog, HintListener
from ._records import (
    BACKLOG_COUNT,
    COMMAND_NAMESPACE,
    START,
    AppendResult,
    Backlog,
    Cursor,
    EventData,
    Notification,
    Page,
    SideWrite,
    StoredEvent,
    event_ids_for,
)
from ._tables import commands_table, events_table

__all__ = [
    "BACKLOG_COUNT",
    "CHANNEL",
    "COMMAND_NAMESPACE",
    "START",
    "AppendResult",
    "Backlog",
    "ChainBroken",
    "ConcurrencyError",
    "Cursor",
    "EventData",
    "EventLog",
    "EventStore",
    "EventStoreError",
    "HintListener",
    "IdempotencyKeyReused",
    "InMemoryEventStore",
    "Listener",
    "Notification",
    "Page",
    "SideWrite",
    "StoredEvent",
    "commands_table",
    "event_ids_for",
    "events_table",
]
