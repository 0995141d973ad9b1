"""The services' connections through a failover (services/shared/reconnect.py): a new
connection is tried again while nothing takes it, for the patience and no longer, and not
for a refusal that waiting cannot mend; a pooled connection its server ended is replaced
before a statement is sent on it (the group commit's: eventstore/test_group_commit.py).

The database's absence is played by a stand-in for HAProxy in front of the test's server
(`Balancer`): while it has no primary it closes each connection at once, as HAProxy does
with `retries 0` and no server up; then it forwards to the real server."""

from __future__ import annotations

import asyncio
import contextlib
import select
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.database import create_engine, reachable, read_write_url
from services.shared.settings import Settings
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


class Balancer:
    """A TCP port in front of the server of `url`: closes every connection at once until
    `primary` is set, then forwards them."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        host = parsed.query.get("host") or parsed.host or ""
        port = parsed.port or int(str(parsed.query.get("port") or 5432))
        self._unix = f"{host}/.s.PGSQL.{port}" if str(host).startswith("/") else None
        self._tcp = (str(host), port)
        self.primary = False
        self.closed = 0  # connections closed at once, with no primary
        self.forwarded = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Balancer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()

    def url(self, url: str) -> str:
        """`url` through this balancer."""
        parsed = make_url(url)
        query = {k: v for k, v in parsed.query.items() if k not in ("host", "port")}
        moved = parsed.set(host="127.0.0.1", port=self.port, query=query)
        return moved.render_as_string(hide_password=False)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.primary:
            self.closed += 1
            writer.close()
            return
        self.forwarded += 1
        if self._unix is not None:
            up_reader, up_writer = await asyncio.open_unix_connection(self._unix)
        else:
            up_reader, up_writer = await asyncio.open_connection(*self._tcp)
        self._writers += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@pytest.fixture
async def balancer(database_url: str) -> AsyncIterator[Balancer]:
    async with Balancer(database_url) as stand_in:
        yield stand_in


def _settings(tmp_path: Path, patience: float) -> Settings:
    return Settings(data_dir=tmp_path, db_connect_patience=patience, statement_timeout=0)


async def _select_one(engine: AsyncEngine) -> Any:
    async with engine.connect() as conn:
        return await conn.scalar(sa.text("SELECT 1"))


async def test_a_new_connection_waits_for_the_database_to_take_it(
    balancer: Balancer, database_url: str, tmp_path: Path
) -> None:
    """While nothing takes a new connection, it is tried again and again; the statement
    that waited for it runs as soon as the server is back."""
    engine = create_engine(balancer.url(database_url), _settings(tmp_path, 60))
    try:
        waiting = asyncio.create_task(_select_one(engine))
        await wait_until(lambda: balancer.closed >= 3, 30, what="three refused tries")
        assert not waiting.done()
        balancer.primary = True
        assert await waiting == 1
    finally:
        await engine.dispose()
    assert balancer.forwarded >= 1


async def test_past_its_patience_the_failure_is_the_requests(
    balancer: Balancer, database_url: str, tmp_path: Path
) -> None:
    """With no server for longer than the patience, the connection fails after several
    tries; with a patience of 0, after one."""
    for patience, tries in ((1.0, 2), (0.0, 1)):
        balancer.closed = 0
        engine = create_engine(balancer.url(database_url), _settings(tmp_path, patience))
        try:
            with pytest.raises(sa.exc.OperationalError):
                await _select_one(engine)
        finally:
            await engine.dispose()
        assert balancer.closed >= tries if patience else balancer.closed == tries


async def test_a_refusal_that_waiting_cannot_mend_fails_at_once(
    balancer: Balancer, database_url: str, tmp_path: Path
) -> None:
    """An unknown database or role is refused by the server itself: not tried again,
    whatever the patience."""
    balancer.primary = True
    through = make_url(balancer.url(database_url))
    for url, named in (
        (through.set(database="no_such_database"), "no_such_database"),
        (through.set(username="no_such_role"), "no_such_role"),
    ):
        balancer.forwarded = 0
        engine = create_engine(url.render_as_string(hide_password=False), _settings(tmp_path, 60))
        try:
            with pytest.raises(sa.exc.OperationalError, match=named):
                await _select_one(engine)
        finally:
            await engine.dispose()
        assert balancer.forwarded == 1


async def test_the_health_check_does_not_wait(
    balancer: Balancer, database_url: str, tmp_path: Path
) -> None:
    """The health checks' probe tries a new connection once, whatever the patience: it
    says at once that the database is away, and that it is back."""
    engine = create_engine(balancer.url(database_url), _settings(tmp_path, 60))
    try:
        assert await reachable(engine) is False
        assert balancer.closed == 1
        balancer.primary = True
        assert await reachable(engine) is True
    finally:
        await engine.dispose()


def _peer_closed(fd: int) -> bool:
    """Whether the other end of socket `fd` closed it (nothing is read from it)."""
    poller = select.poll()
    poller.register(fd, select.POLLRDHUP)
    return any(events & (select.POLLRDHUP | select.POLLHUP) for _fd, events in poller.poll(0))


async def _end_other_sessions(engine: AsyncEngine) -> None:
    """pg_terminate_backend of every other session on the database of `engine`."""
    async with engine.connect() as conn:
        await conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )


async def test_a_pooled_connection_its_server_ended_is_replaced_before_use(
    database_url: str, tmp_path: Path
) -> None:
    """A pooled connection whose server ended it (as a crashed primary ends them all) is
    not handed out: the next statement runs on a new one, with no error."""
    engine = create_engine(database_url, _settings(tmp_path, 0))
    admin = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            before = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            fd = raw.pgconn.socket
        await _end_other_sessions(admin)
        await wait_until(lambda: _peer_closed(fd), 30, what="the server's end of it closed")
        async with engine.connect() as conn:
            after = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
    finally:
        await engine.dispose()
        await admin.dispose()
    assert after != before


def test_the_services_ask_for_a_server_that_takes_writes() -> None:
    """The services' URL asks libpq for a read-write server (a standby is refused when the
    connection opens), unless the URL says otherwise."""
    url = read_write_url("postgresql+psycopg://ludo@db:5432/ludo")
    assert make_url(url).query["target_session_attrs"] == "read-write"
    given = read_write_url("postgresql://ludo@db/ludo?target_session_attrs=any")
    assert make_url(given).query["target_session_attrs"] == "any"
