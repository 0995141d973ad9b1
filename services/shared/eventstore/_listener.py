"""The NOTIFY hints of the PostgreSQL store: LISTEN on a dedicated connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Final

import msgspec
import psycopg

from ._records import Notification

__all__ = ["CHANNEL", "Listener"]

CHANNEL: Final = "ludo_events"


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
