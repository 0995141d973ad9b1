"""The group commit's pipeline (eventstore/_pipeline.py): values written and read back as
psycopg's cursor writes and reads them, statements prepared once, a failure raised after
the round trip with the statements after it not run."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.database import libpq_url
from services.shared.eventstore._pipeline import Pipeline
from tests.pg_waits import wait_until_blocked

pytestmark = pytest.mark.anyio


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    async with await psycopg.AsyncConnection.connect(
        libpq_url(database_url), autocommit=True
    ) as conn:
        yield conn


_VALUES: dict[str, Any] = {
    "text": "späť 'quoted' %s",
    "int": 2**40,
    "small": -3,
    "bytes": b"\x00\xff\\x",
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "float": 0.1,
    "bool": True,
    "none": None,
    "decimal": Decimal("1.50"),  # no rule of its own: psycopg's dumper writes it
}
_SELECT = (
    "SELECT %(text)s::text, %(int)s::bigint, %(small)s::integer, %(bytes)s::bytea,"
    " %(uuid)s::uuid, %(float)s::float8, %(bool)s::boolean, %(none)s::text,"
    " %(decimal)s::numeric, %(int)s::bigint + 1, '100%%'::text, now()"
)


class TestValues:
    async def test_rows_are_what_the_cursor_gives(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Every kind of parameter goes in and comes back exactly as through a cursor."""
        (rows,) = await Pipeline(conn).run([(_SELECT, _VALUES)])
        cursor = await conn.execute(_SELECT, _VALUES)
        expected = await cursor.fetchall()
        assert [row[:-1] for row in rows] == [row[:-1] for row in expected]
        assert rows[0][:11] == (*_VALUES.values(), 2**40 + 1, "100%")
        assert isinstance(rows[0][-1], datetime.datetime) and rows[0][-1].tzinfo is not None

    async def test_positional_parameters(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """`%s` parameters are numbered in order."""
        (rows,) = await Pipeline(conn).run([("SELECT %s::text || %s::text", ("a", "b"))])
        assert rows == [("ab",)]

    async def test_a_command_has_no_rows(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Statements without parameters and commands give an empty list of rows."""
        results = await Pipeline(conn).run([("BEGIN", None), ("SELECT 1", {}), ("COMMIT", None)])
        assert results == [[], [(1,)], []]


class TestPrepared:
    async def test_a_statement_is_prepared_once(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """The same text with the same parameter types is parsed once per connection,
        also when it comes twice in one batch; other types make another statement."""
        pipeline = Pipeline(conn)
        sql = "SELECT %(x)s::text"
        assert await pipeline.run([(sql, {"x": "a"}), (sql, {"x": "b"})]) == [[("a",)], [("b",)]]
        assert await pipeline.run([(sql, {"x": "c"})]) == [[("c",)]]
        await pipeline.run([(sql, {"x": 7})])
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1::text'"
        )
        assert await cursor.fetchone() == (2,)


class TestFailure:
    async def test_the_first_error_is_raised_and_the_rest_not_run(
        self, conn: psycopg.AsyncConnection[Any]
    ) -> None:
        """A failed statement raises its own error after the round trip; the statements
        after it did not run, and the connection is usable again after a rollback."""
        await conn.execute("CREATE TEMPORARY TABLE seen (n integer PRIMARY KEY)")
        insert = "INSERT INTO seen VALUES (%(n)s)"
        pipeline = Pipeline(conn)
        with pytest.raises(psycopg.errors.UniqueViolation):
            await pipeline.run(
                [
                    ("BEGIN", None),
                    (insert, {"n": 1}),
                    (insert, {"n": 1}),
                    (insert, {"n": 2}),
                    ("COMMIT", None),
                ]
            )
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        await conn.execute("ROLLBACK")
        cursor = await conn.execute("SELECT count(*) FROM seen")
        assert await cursor.fetchone() == (0,)
        assert await pipeline.run([(insert, {"n": 3}), ("SELECT n FROM seen", None)]) == [
            [],
            [(3,)],
        ]

    async def test_a_bad_statement_is_not_remembered_as_prepared(
        self, conn: psycopg.AsyncConnection[Any]
    ) -> None:
        """A statement whose Parse failed is parsed again the next time."""
        pipeline = Pipeline(conn)
        with pytest.raises(psycopg.errors.UndefinedTable):
            await pipeline.run([("SELECT * FROM not_yet WHERE n = %(n)s", {"n": 1})])
        await conn.execute("CREATE TEMPORARY TABLE not_yet (n integer)")
        assert await pipeline.run([("SELECT * FROM not_yet WHERE n = %(n)s", {"n": 1})]) == [[]]

    async def test_a_cancelled_round_trip_leaves_the_connection_usable_or_closed(
        self, conn: psycopg.AsyncConnection[Any], database_url: str, engine: AsyncEngine
    ) -> None:
        """Cancelled while a statement waits on a lock, the round trip raises the
        cancellation, and the connection is out of pipeline mode: usable, or closed."""
        await conn.execute("CREATE TABLE held (n integer)")
        pipeline = Pipeline(conn)
        async with await psycopg.AsyncConnection.connect(libpq_url(database_url)) as holder:
            await holder.execute("LOCK TABLE held")
            task = asyncio.create_task(pipeline.run([("SELECT count(*) FROM held", None)]))
            await wait_until_blocked(engine)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await holder.rollback()
        assert conn.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF or conn.closed
        if not conn.closed:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                await conn.execute("ROLLBACK")
            assert await pipeline.run([("SELECT 1", None)]) == [[(1,)]]

    async def test_mixed_placeholders_are_refused(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """A statement with both named and positional parameters is a mistake, refused
        before anything is sent; the connection stays usable."""
        pipeline = Pipeline(conn)
        with pytest.raises(psycopg.ProgrammingError, match="mixed"):
            await pipeline.run([("SELECT %(a)s::text, %s::text", {"a": "x"})])
        assert await pipeline.run([("SELECT 1", None)]) == [[(1,)]]
