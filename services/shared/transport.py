"""Writes to a connection coalesced per turn of the event loop.

uvicorn writes each ASGI message to the socket as it comes: an HTTP response is two
writes (its head, then its body), and a command answered over a match socket is three
frames (the result, and its batch on both seats' sockets), each its own `send` system
call. `CoalescedTransport` keeps what is written during one turn of the loop
and writes it as one at the end of that turn: the same bytes in the same order, one system
call per connection and turn. Under load the calls had been a seventh of the service's CPU
per command over the socket (docs/benchmarks.md).

The served protocols wrap their transport in it (services/shared/limits.py); a WebSocket
upgraded from such a connection keeps it.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["CoalescedTransport", "CoalescedWrites"]


class CoalescedTransport:
    """A transport whose writes within one turn of the loop go out in one write."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if self._pending is None:
            self._pending = [bytes(data)]
            self._loop.call_soon(self._flush)
        else:
            self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def get_write_buffer_size(self) -> int:
        pending = sum(map(len, self._pending)) if self._pending else 0
        return int(self._transport.get_write_buffer_size()) + pending

    def close(self) -> None:
        self._flush()  # what was written before the close goes out before it
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's own
        return getattr(self._transport, name)

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))


class CoalescedWrites:
    """Mixed in before one of uvicorn's protocol classes: its transport (and that of a
    WebSocket upgraded from it) is a `CoalescedTransport`."""

    loop: asyncio.AbstractEventLoop

    def connection_made(self, transport: Any) -> None:
        super().connection_made(CoalescedTransport(transport, self.loop))  # type: ignore[misc]
