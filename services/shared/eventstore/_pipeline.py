"""One batch of statements in one round trip: the group commit's (`_group.py`), through
psycopg's public pipeline API (`AsyncConnection.pipeline()`).

Every statement of a batch is queued on a cursor of its own inside one pipeline block,
prepared on the server once per connection and shape (`prepare=True`: the append
statements repeat), and the block's end sends the Sync and reads every result back; the
rows are then each cursor's. So the values are exactly what the cursor gives, and a failed
statement raises its own error once the round trip is over, the statements after it not
run (the server skips them to the Sync).

This module once drove psycopg's private generators and libpq's pipeline calls
by hand, to save the cursor's per-statement work; measured against this public path in
the same run it saved less than the 15% of the service's CPU per command that would have
justified depending on psycopg's internals (docs/benchmarks.md, docs/event-store.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

__all__ = ["Pipeline"]


class Pipeline:
    """Runs batches of statements on one psycopg connection (held only by its owner)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def run(
        self, statements: Sequence[tuple[str, Mapping[str, Any] | Sequence[Any] | None]]
    ) -> list[list[tuple[Any, ...]]]:
        """Each statement's rows (none for a command), in one round trip ending in a
        Sync. Raises the first failed statement's error (those after it did not run) once
        the round trip is over, or the driver's error when the connection fails."""
        conn = self.conn
        cursors: list[psycopg.AsyncCursor[Any]] = []
        try:
            async with conn.pipeline():
                for query, params in statements:
                    cursor = conn.cursor()
                    # Without parameters a statement goes as a simple query (BEGIN,
                    # COMMIT), as psycopg's cursor sends it; with them it is prepared.
                    await cursor.execute(query, params, prepare=params is not None)
                    cursors.append(cursor)
        except BaseException:
            if conn.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF:
                # Cut short with results still due (cancelled mid-round-trip): the
                # session is in no state to reuse; closed, its owner opens another.
                await conn.close()
            raise
        return [await _rows(cursor) for cursor in cursors]


async def _rows(cursor: psycopg.AsyncCursor[Any]) -> list[tuple[Any, ...]]:
    if cursor.pgresult is None or cursor.pgresult.status != psycopg.pq.ExecStatus.TUPLES_OK:
        return []
    return await cursor.fetchall()
