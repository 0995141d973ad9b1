"""The event-store contract in this process's memory: for tests and for replaying or
verifying a log without PostgreSQL (never a stand-in for the database in service tests).

The same append semantics as the PostgreSQL store: versions from `expected_version`,
`ConcurrencyError` for any other length, idempotency by command id (a retry returns the
first outcome, a command id of another stream is `IdempotencyKeyReused`), the same event
ids and hash chain (`prev_hash` checked when given), and a global order whose cursors
grow with every append. What only a database has is left out: side writes and the
caller's transaction (`side`, `conn`), roles and triggers.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from domain import events as domain_events
from domain.chain import GENESIS

from ._errors import ConcurrencyError, IdempotencyKeyReused
from ._prepare import AnyEvent, check_chain, link, prepare, stored_metadata
from ._records import (
    BACKLOG_COUNT,
    START,
    AppendResult,
    Backlog,
    Cursor,
    EventData,
    Notification,
    Page,
    StoredEvent,
)

__all__ = ["InMemoryEventStore", "MemoryListener"]


class InMemoryEventStore:
    """Streams, the global log and the command records in memory. Each append is one
    transaction, atomic on the event loop (no await between its check and its write)."""

    def __init__(self) -> None:
        self._streams: dict[str, list[StoredEvent]] = {}
        self._log: list[StoredEvent] = []
        self._commands: dict[str, tuple[str, int, int]] = {}
        self._tx = 0
        self._queues: set[asyncio.Queue[Notification]] = set()

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[AnyEvent],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        prev_hash: bytes | None = None,
    ) -> AppendResult:
        """`EventStore.append` without side writes or a caller's transaction."""
        items, meta = prepare(stream_id, expected_version, events, command_id, metadata, prev_hash)
        earlier = self._outcome(command_id, stream_id)
        if earlier is not None:
            return earlier
        stream = self._streams.get(stream_id, [])
        if len(stream) != expected_version:
            raise ConcurrencyError(stream_id, expected_version, len(stream))
        head = stream[-1].hash if stream else GENESIS
        if prev_hash is not None and prev_hash != head:
            raise ValueError(f"prev_hash is not the hash of {stream_id}'s last event")
        metadata = stored_metadata(meta)
        self._tx += 1
        now = datetime.now(UTC)
        stored = tuple(
            row.stored(
                stream_id,
                metadata,
                global_position=len(self._log) + 1 + i,
                tx=self._tx,
                recorded_at=now,
            )
            for i, row in enumerate(link(stream_id, expected_version, head, items, command_id))
        )
        self._streams.setdefault(stream_id, []).extend(stored)
        self._log.extend(stored)
        last = stored[-1].version
        if command_id is not None:
            self._commands[command_id] = (stream_id, expected_version, last)
        for queue in self._queues:
            queue.put_nowait(Notification.of_append(stream_id, last, (e.type for e in stored)))
        return AppendResult(
            stream_id=stream_id, first_version=expected_version, last_version=last, events=stored
        )

    def _outcome(self, command_id: str | None, stream_id: str) -> AppendResult | None:
        record = None if command_id is None else self._commands.get(command_id)
        if record is None:
            return None
        assert command_id is not None
        other, first, last = record
        if other != stream_id:
            raise IdempotencyKeyReused(command_id, stream_id, other)
        return AppendResult(
            stream_id=stream_id,
            first_version=first,
            last_version=last,
            events=tuple(self._streams[stream_id][first : last + 1]),
            duplicate=True,
        )

    async def find_command(self, command_id: str, stream_id: str) -> AppendResult | None:
        """The outcome of `command_id` if it already appended (to `stream_id`), else None."""
        return self._outcome(command_id, stream_id)

    async def read_stream(
        self, stream_id: str, from_version: int = 0, *, limit: int | None = None
    ) -> list[StoredEvent]:
        """The events of `stream_id` from `from_version` on, in version order."""
        stored = self._streams.get(stream_id, [])[from_version:]
        return stored if limit is None else stored[:limit]

    async def read_events(self, stream_id: str, from_version: int = 0) -> list[domain_events.Event]:
        """The match events of `stream_id` from `from_version` on, decoded and upcast."""
        return (await self.read_events_and_hash(stream_id, from_version))[0]

    async def read_events_and_hash(
        self, stream_id: str, from_version: int = 0
    ) -> tuple[list[domain_events.Event], bytes | None]:
        """`read_events`, plus the hash of the last event read (None when none was)."""
        stored = await self.read_stream(stream_id, from_version)
        return [e.event for e in stored], (stored[-1].hash if stored else None)

    async def stream_version(self, stream_id: str) -> int:
        """The stream's length: the `expected_version` of its next append (0: no stream)."""
        return len(self._streams.get(stream_id, []))

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """`stream_version` of many streams (absent streams: 0)."""
        return {stream: len(self._streams.get(stream, [])) for stream in stream_ids}

    async def read_all(self, after: Cursor = START, limit: int = 1000) -> list[StoredEvent]:
        """Up to `limit` events of all streams after `after`, in global order (every
        append has ended, so none is held back)."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        first = self._after(after)
        return self._log[first : first + limit]

    def _after(self, after: Cursor) -> int:
        """The index in the log of the first event after `after`. Cursors grow with the
        log, so it is found by bisection."""
        return bisect.bisect_right(self._log, after, key=lambda e: e.cursor)

    async def read_page(
        self,
        after: Cursor = START,
        limit: int = 1000,
        *,
        types: Sequence[str] | None = None,
        until: Cursor | None = None,
    ) -> Page:
        """`EventStore.read_page`: the events after `after` (of `types`, up to `until`),
        and where to continue; nothing is ever held back here."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        if isinstance(types, str):
            raise TypeError("types: a sequence of type names, not one name")
        end = len(self._log) if until is None else self._after(until)
        reach = self._log[self._after(after) : end]
        wanted = None if types is None else frozenset(types)
        events = [e for e in reach if wanted is None or e.type in wanted][:limit]
        if len(events) == limit:
            return Page(events, events[-1].cursor)
        return Page(events, reach[-1].cursor if reach else None)

    async def read_streams(
        self, stream_ids: Sequence[str], *, types: Sequence[str] | None = None
    ) -> dict[str, list[EventData]]:
        """The events of many streams (of `types` when given), per stream in version
        order, as `EventData`; a stream with none of them is absent."""
        out = {}
        for stream in dict.fromkeys(stream_ids):
            events = [
                EventData(e.type, e.schema_version, e.data)
                for e in self._streams.get(stream, [])
                if types is None or e.type in types
            ]
            if events:
                out[stream] = events
        return out

    async def streams(self, prefix: str) -> list[str]:
        """The ids of the streams whose id starts with `prefix`, in the order they were
        begun (a dict keeps its keys in insertion order)."""
        return [stream for stream in self._streams if stream.startswith(prefix)]

    async def head(self) -> Cursor:
        """The cursor of the newest event (START: none)."""
        return self._log[-1].cursor if self._log else START

    async def settle(self, until: Cursor, *, poll: float = 0.02) -> None:
        """Every append has ended: every event up to `until` is readable already."""

    async def backlog(self, after: Cursor, of_type: str | None = None) -> Backlog:
        """How far `after` is behind the log (see `EventStore.backlog`)."""
        pending = self._log[self._after(after) :][:BACKLOG_COUNT]
        age = (datetime.now(UTC) - pending[0].recorded_at).total_seconds() if pending else 0.0
        head = self._log[-1].global_position if self._log else 0
        typed = sum(1 for e in pending if e.type == of_type)
        return Backlog(head, len(pending), max(age, 0.0), typed)

    async def verify_stream(self, stream_id: str) -> int:
        """Recompute the stream's hash chain; its length if intact, else `ChainBroken`."""
        return check_chain(stream_id, self._streams.get(stream_id, []))

    def listen(self) -> MemoryListener:
        """A listener for the hints of the appends made from now on (use `async with`)."""
        return MemoryListener(self._queues)


class MemoryListener:
    """The in-memory store's hints: one per append, in append order (none for retries)."""

    def __init__(self, queues: set[asyncio.Queue[Notification]]) -> None:
        self._queues = queues
        self._queue: asyncio.Queue[Notification] | None = None

    async def __aenter__(self) -> MemoryListener:
        self._queue = asyncio.Queue()
        self._queues.add(self._queue)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._queue is not None:
            self._queues.discard(self._queue)
            self._queue = None

    async def __aiter__(self) -> AsyncIterator[Notification]:
        while True:
            yield await self._get().get()

    async def wait(self, timeout: float) -> list[Notification]:
        """The hints that arrive within `timeout` seconds (returns at the first batch)."""
        queue = self._get()
        try:
            notes = [await asyncio.wait_for(queue.get(), timeout)]
        except TimeoutError:
            return []
        while not queue.empty():
            notes.append(queue.get_nowait())
        return notes

    def _get(self) -> asyncio.Queue[Notification]:
        if self._queue is None:
            raise RuntimeError("use the listener inside `async with store.listen()`")
        return self._queue
