"""What each running instance says of itself, for the operator's live view.

Every instance of either service writes ONE row of `instance_stats` (migration 0012) every
`BEAT` seconds: its name, service, pid, start, and `figures`, a small JSON object of the
moment that the instance alone knows: its database pool (size, connections open and in use,
its checkouts, how many waited over `metrics.POOL_WAIT` seconds and how long in all: its
engine's pool's own, `metrics.TimedPool`) and its live sockets (its app's `Counters`). Its
own, never the process's: other engines or apps alive in the same process (a test run)
count nothing in them. The ranking service's live view
(`services/ranking/dashboard/service.py`) reads the rows seen lately: the instances alive now, each
with its figures, however many there are and behind whatever balancer. The same statement
deletes rows not seen for a day (instances long gone), so the table stays as small as the
fleet.

The name is the instance's `application_name` (`match-1`, `ranking-2`, set by `ludo up` and
compose.yaml in the database URL) or, without one, `<service>-<host>-<pid>`.

A beat that fails (the database away) is logged once at warning and retried at the next;
the first that succeeds again is logged at info.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import Any, Final

import msgspec
import psycopg
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.database import libpq_url
from services.shared.logging import describe_exception
from services.shared.metrics import Counters, TimedPool

__all__ = ["BEAT", "SEEN_WITHIN", "InstanceBeat", "instance_name", "pool_figures"]

_log = structlog.get_logger(__name__)

BEAT: Final = 5.0  # seconds between two rows of one instance (0.2 statements a second)
# An instance whose row is older than this is not counted as alive (two beats missed).
SEEN_WITHIN: Final = BEAT * 3
# Rows of instances not seen for this long are deleted by any instance's beat.
FORGET_AFTER: Final = 24 * 3600

_BEAT = """
    WITH forgotten AS (
        DELETE FROM instance_stats
        WHERE seen_at < now() - make_interval(secs => %(forget)s)
    )
    INSERT INTO instance_stats (name, service, pid, started_at, seen_at, figures)
    VALUES (%(name)s, %(service)s, %(pid)s, to_timestamp(%(started)s), now(),
            CAST(%(figures)s AS jsonb))
    ON CONFLICT (name) DO UPDATE
        SET service = EXCLUDED.service, pid = EXCLUDED.pid, started_at = EXCLUDED.started_at,
            seen_at = EXCLUDED.seen_at, figures = EXCLUDED.figures
"""


def instance_name(engine: AsyncEngine, service: str) -> str:
    """The instance's name: its sessions' `application_name`, else `<service>-<host>-<pid>`."""
    given = engine.url.query.get("application_name")
    if isinstance(given, str) and given:
        return given
    return f"{service}-{socket.gethostname()}-{os.getpid()}"


def pool_figures(engine: AsyncEngine) -> dict[str, Any]:
    """The pool of `engine` now: its size, connections open, and in use (checked out), and
    its checkouts so far, those that waited and the seconds waited (`TimedPool.waits`)."""
    pool: Any = engine.sync_engine.pool
    figures: dict[str, Any] = {}
    try:
        in_use, idle = int(pool.checkedout()), int(pool.checkedin())
        figures = {"size": int(pool.size()), "open": in_use + idle, "in_use": in_use}
    except AttributeError:  # a pool that keeps no connections (NullPool)
        pass
    if isinstance(pool, TimedPool):
        figures |= pool.waits()
    return figures


class InstanceBeat:
    """The instance's row of `instance_stats`, rewritten every `BEAT` seconds by `run()`.

    `figures()` gives what the row carries.
    """

    def __init__(self, engine: AsyncEngine, service: str, counters: Counters) -> None:
        self._engine = engine
        self._counters = counters  # its app's: the live sockets
        # A connection of its own, not one of the pool's: the beat neither takes a
        # connection from the requests nor counts itself in the pool it reports.
        self._url = libpq_url(engine.url)
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self.service = service
        self.name = instance_name(engine, service)
        self.started = time.time()
        self._failing = False

    def figures(self) -> dict[str, Any]:
        """What this instance says of itself now: its engine's pool (`pool_figures`) and
        its app's live sockets."""
        return {"pool": pool_figures(self._engine), "sockets": self._counters.sockets()}

    async def beat(self) -> None:
        """Write the row now (one statement; the connection opened first if need be)."""
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        try:
            await self._conn.execute(
                _BEAT,
                {
                    "forget": FORGET_AFTER,
                    "name": self.name,
                    "service": self.service,
                    "pid": os.getpid(),
                    "started": self.started,
                    "figures": msgspec.json.encode(self.figures()).decode(),
                },
                prepare=True,
            )
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close the beat's connection (the next beat opens another)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def run(self) -> None:
        """Beat until cancelled; a failed beat is logged once and retried at the next."""
        try:
            await self._run()
        finally:
            await self.close()

    async def _run(self) -> None:
        while True:
            try:
                await self.beat()
            except Exception as error:  # the database away: the next beat retries
                if not self._failing:
                    self._failing = True
                    _log.warning("instance_beat_failed", **describe_exception(error))
            else:
                if self._failing:
                    self._failing = False
                    _log.info("instance_beat_resumed", instance=self.name)
            await asyncio.sleep(BEAT)  # a period, not a synchronisation
