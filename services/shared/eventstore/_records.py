"""The values the event store takes and gives: events to store, stored events, outcomes,
cursors and hints. Plain msgspec structs, the same for every store implementation."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

import msgspec

from domain import events as domain_events

__all__ = [
    "BACKLOG_COUNT",
    "COMMAND_NAMESPACE",
    "START",
    "AppendResult",
    "Backlog",
    "Cursor",
    "EventData",
    "Notification",
    "Page",
    "SideWrite",
    "StoredEvent",
    "event_ids_for",
]

COMMAND_NAMESPACE: Final = uuid.UUID("1c6b3c52-52a3-5c1e-9a3c-6c75646f0001")


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

    @property
    def event(self) -> domain_events.Event:
        """The match event, upcast from its schema version to the current one."""
        return domain_events.decode_event(
            self.data, type_name=self.type, schema_version=self.schema_version
        )


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


class Page(msgspec.Struct, frozen=True):
    """One read of the global order (`read_page`): the events it gives, and how far it
    reached.

    `last` is where the follower continues: the last event given when the page is full,
    else the last event of the global order the read covered, whatever its type (so a
    follower of a few types moves past the others); None when nothing after the cursor
    is readable yet. `held_back`: committed events after `last` that the global-order
    rule still holds back (a transaction older than theirs runs), as of the same read.
    """

    events: list[StoredEvent]
    last: Cursor | None
    held_back: bool = False


class Backlog(msgspec.Struct, frozen=True):
    """How far a cursor is behind the log (`backlog`): the newest event's position, how
    many events lie after the cursor (counted up to `BACKLOG_COUNT`), the age in
    seconds of the oldest of them (0 when none), and how many of those events are of the
    type the caller asked about (`of_type`: the consumers' `MatchFinished`, 0 unasked)."""

    head_position: int
    events: int
    seconds: float
    of_type: int = 0


# Events `backlog` counts at most: enough to say "far behind", cheap at any size.
BACKLOG_COUNT: Final = 100_000


class Notification(msgspec.Struct, frozen=True, omit_defaults=True):
    """A NOTIFY hint: `stream_id` has events up to `version` (committed).

    `types`: the type names of the events the append stored, so that a reader acting on a
    few types (the ranking service's consumers: match ends) need not read for the others;
    empty when the hint does not say (a hint of another kind: a reader must assume any)."""

    stream_id: str
    version: int
    types: tuple[str, ...] = ()

    @classmethod
    def of_append(cls, stream_id: str, version: int, types: Iterable[str]) -> Notification:
        """The hint of an append to `stream_id`, up to `version`, of events of `types`."""
        return cls(stream_id, version, tuple(sorted(set(types))))

    def may_hold(self, types: frozenset[str]) -> bool:
        """Whether the events hinted at may include one of `types`."""
        return not self.types or not types.isdisjoint(self.types)


class SideWrite(msgspec.Struct, frozen=True):
    """A data-modifying SQL fragment that runs inside the append's one statement (the
    PostgreSQL store only), e.g. an upsert of a side table. It must read the relation
    `appended` (so it writes only when the events do) and name its parameters
    `%(name)s`, distinct from the store's own.

    `lock`: a `SELECT … FOR UPDATE` of the rows `sql` will write, taken BEFORE the events
    are inserted. Without it the side rows would be locked after the insert, and a
    transaction that locked them first and then appends to the same stream (the deadline
    scheduler does) would deadlock with this statement instead of losing the race cleanly.
    """

    sql: str
    params: dict[str, Any]
    lock: str | None = None


# RFC 4122 name-based UUIDs: version 5 in bits 76-79, the variant 0b10 in bits 62-63.
_KEEP: Final = ~((0xF << 76) | (0x3 << 62))
_MARK: Final = (5 << 76) | (0x2 << 62)


def event_ids_for(command_id: str, count: int) -> list[uuid.UUID]:
    """The ids of the events a command appends: derived from the command id alone, the
    `uuid.uuid5(COMMAND_NAMESPACE, f"{command_id}:{i}")` of each, computed as it is but
    without its conversions (they were a thirtieth of the service's CPU per command)."""
    namespace = COMMAND_NAMESPACE.bytes
    ids = []
    for i in range(count):
        digest = hashlib.sha1(namespace + f"{command_id}:{i}".encode(), usedforsecurity=False)
        ids.append(uuid.UUID(int=(int.from_bytes(digest.digest()[:16]) & _KEEP) | _MARK))
    return ids
