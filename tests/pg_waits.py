"""Waiting for PostgreSQL to show that a session is blocked, instead of sleeping.

A test that starts a statement which must wait for another transaction, sleeps a moment
and asserts the statement has not finished proves nothing on a slow machine: the statement
may not have reached the server yet. `wait_until_blocked` waits for the real condition,
the session waiting on a lock in `pg_stat_activity`, so the assertion that follows it
means the statement is held by the lock, and the test then releases it.

Tests import it with `from tests.pg_waits import ...`.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from tests.waiting import wait_until

# Sessions of this database (each test has its own) waiting for a lock, other than ours;
# with :by, only those that the session :by blocks.
_BLOCKED = sa.text(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    " AND wait_event_type = 'Lock'"
    " AND (CAST(:by AS integer) IS NULL OR CAST(:by AS integer) = ANY(pg_blocking_pids(pid)))"
)
_SESSIONS = sa.text(
    "SELECT pid, state, wait_event_type, wait_event, pg_blocking_pids(pid) AS blocked_by,"
    " left(query, 80) AS query FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


async def backend_pid(conn: AsyncConnection) -> int:
    """The server process of `conn`'s session (what `pg_blocking_pids` names)."""
    return int(await conn.scalar(sa.select(sa.func.pg_backend_pid())) or 0)


async def wait_until_blocked(
    engine: AsyncEngine, *, by: int | None = None, count: int = 1, timeout: float = 30.0
) -> None:
    """Returns once `count` sessions of `engine`'s database wait on a lock (held by the
    session whose backend pid is `by`, when given); fails the test after `timeout` s,
    listing the database's sessions."""
    async with engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")

        async def blocked() -> bool:
            return int(await auto.scalar(_BLOCKED, {"by": by}) or 0) >= count

        try:
            await wait_until(blocked, timeout, pause=0.01)
        except AssertionError:
            sessions = [dict(r._mapping) for r in await auto.execute(_SESSIONS)]
            raise AssertionError(
                f"not {count} session(s) blocked{f' by {by}' if by else ''}"
                f" within {timeout:g} s: {sessions}"
            ) from None
