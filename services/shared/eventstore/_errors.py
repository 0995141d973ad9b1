"""What the event store raises on purpose.

    EventStoreError
    ├── ConcurrencyError        expected_version is not the stream's length
    ├── IdempotencyKeyReused    the command id already appended to another stream
    └── ChainBroken             stored events fail the hash-chain check (`verify_stream`)

Bad arguments (an empty event list, a negative version, an empty or oversized id, a
`prev_hash` that is not the stream head's) raise `ValueError`; database failures surface
as SQLAlchemy's `DBAPIError`. The store knows nothing of HTTP: the services map these to
responses at their edge.
"""

from __future__ import annotations

__all__ = ["ChainBroken", "ConcurrencyError", "EventStoreError", "IdempotencyKeyReused"]


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
