"""The pure half of an append, shared by every store: the arguments checked, the events
serialized, their ids, and the links of the hash chain they extend."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, NamedTuple

import msgspec

from domain import events as domain_events
from domain.chain import GENESIS, event_hash, first_break

from ._errors import ChainBroken
from ._records import EventData, StoredEvent, event_ids_for

__all__ = ["MAX_ID_LENGTH", "Link", "Prepared", "check_chain", "link", "prepare"]

MAX_ID_LENGTH: Final = 200

AnyEvent = domain_events.Event | EventData | msgspec.Struct


class Prepared(NamedTuple):
    """A checked append: the events as stored bytes and the metadata every row gets."""

    items: list[EventData]
    metadata: dict[str, Any]


class Link(NamedTuple):
    """One event to insert: its version and id, the event, and its place in the chain."""

    version: int
    event_id: uuid.UUID
    item: EventData
    prev_hash: bytes
    hash: bytes

    def stored(
        self,
        stream_id: str,
        metadata: dict[str, Any],
        *,
        global_position: int,
        tx: int,
        recorded_at: datetime,
    ) -> StoredEvent:
        """The event as stored, given what the store assigned it (`metadata`: as the
        store gives it back, see `stored_metadata`)."""
        return StoredEvent(
            global_position=global_position,
            tx=tx,
            stream_id=stream_id,
            version=self.version,
            event_id=self.event_id,
            type=self.item.type,
            schema_version=self.item.schema_version,
            data=self.item.data,
            metadata=dict(metadata),
            recorded_at=recorded_at,
            prev_hash=self.prev_hash,
            hash=self.hash,
        )


def stored_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` as a `jsonb` column gives it back: JSON types only (tuples become lists)."""
    value: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(meta))
    return value


def prepare(
    stream_id: str,
    expected_version: int,
    events: Sequence[AnyEvent],
    command_id: str | None,
    metadata: Mapping[str, Any] | None,
    prev_hash: bytes | None,
) -> Prepared:
    """The append's arguments checked (`ValueError` when bad) and its events serialized."""
    if not stream_id or len(stream_id) > MAX_ID_LENGTH:
        raise ValueError(f"stream id must have 1 to {MAX_ID_LENGTH} characters")
    if command_id is not None and not 0 < len(command_id) <= MAX_ID_LENGTH:
        raise ValueError(f"command id must have 1 to {MAX_ID_LENGTH} characters")
    if expected_version < 0:
        raise ValueError("expected_version must be >= 0")
    if not events:
        raise ValueError("an append needs at least one event")
    if prev_hash is not None and len(prev_hash) != len(GENESIS):
        raise ValueError("prev_hash must be 32 bytes")
    items = [e if isinstance(e, EventData) else EventData.of(e) for e in events]
    meta = dict(metadata or {})
    if command_id is not None:
        meta["command_id"] = command_id
    return Prepared(items, meta)


def link(
    stream_id: str,
    expected_version: int,
    prev_hash: bytes,
    items: Sequence[EventData],
    command_id: str | None,
) -> list[Link]:
    """The rows of an append after the event whose hash is `prev_hash`: versions from
    `expected_version`, ids from the command id (random without one), each hash chained
    to the one before (`domain.chain.event_hash`)."""
    ids = (
        event_ids_for(command_id, len(items))
        if command_id is not None
        else [uuid.uuid4() for _ in items]
    )
    links = []
    prev = prev_hash
    for i, item in enumerate(items):
        version = expected_version + i
        digest = event_hash(prev, stream_id, version, item.type, item.schema_version, item.data)
        links.append(Link(version, ids[i], item, prev, digest))
        prev = digest
    return links


def check_chain(stream_id: str, stored: Iterable[StoredEvent]) -> int:
    """The number of `stored` events (a whole stream) if their chain is intact, else
    `ChainBroken` at the first event that breaks it."""
    rows = [
        (e.stream_id, e.version, e.type, e.schema_version, e.data, e.prev_hash, e.hash)
        for e in stored
    ]
    broken = first_break(iter(rows))
    if broken is not None:
        raise ChainBroken(stream_id, *broken)
    return len(rows)
