"""The contract every event store keeps (tests/services/shared/eventstore/contract.py
checks it against each): what a caller may rely on whatever the store behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self

from domain import events as domain_events

from ._prepare import AnyEvent
from ._records import AppendResult, Backlog, Cursor, EventData, Notification, Page, StoredEvent

__all__ = ["EventLog", "HintListener"]


class HintListener(Protocol):
    """The append hints, inside `async with`: `wait(timeout)` or `async for`."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def __aiter__(self) -> AsyncIterator[Notification]: ...

    async def wait(self, timeout: float) -> list[Notification]: ...


class EventLog(Protocol):
    """Append with an expected version (and optionally the head's hash), read a stream
    or many, list the streams of a kind, page through the global order (all of it, or
    some types with where to continue), its head and a cursor's backlog, answer a
    retried command, check a chain, hint. Nothing else of the product reads `events`."""

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[AnyEvent],
        *,
        command_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        prev_hash: bytes | None = None,
    ) -> AppendResult: ...

    async def find_command(self, command_id: str, stream_id: str) -> AppendResult | None: ...

    async def read_stream(
        self, stream_id: str, from_version: int = 0, *, limit: int | None = None
    ) -> list[StoredEvent]: ...

    async def read_events(
        self, stream_id: str, from_version: int = 0
    ) -> list[domain_events.Event]: ...

    async def read_events_and_hash(
        self, stream_id: str, from_version: int = 0
    ) -> tuple[list[domain_events.Event], bytes | None]: ...

    async def stream_version(self, stream_id: str) -> int: ...

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]: ...

    async def read_all(self, after: Cursor = ..., limit: int = 1000) -> list[StoredEvent]: ...

    async def read_page(
        self,
        after: Cursor = ...,
        limit: int = 1000,
        *,
        types: Sequence[str] | None = None,
        until: Cursor | None = None,
    ) -> Page: ...

    async def read_streams(
        self, stream_ids: Sequence[str], *, types: Sequence[str] | None = None
    ) -> dict[str, list[EventData]]: ...

    async def streams(self, prefix: str) -> list[str]: ...

    async def head(self) -> Cursor: ...

    async def settle(self, until: Cursor, *, poll: float = 0.02) -> None: ...

    async def backlog(self, after: Cursor, of_type: str | None = None) -> Backlog: ...

    async def verify_stream(self, stream_id: str) -> int: ...

    def listen(self) -> HintListener: ...
