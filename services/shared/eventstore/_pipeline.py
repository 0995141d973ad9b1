"""One batch of statements through libpq's pipeline, driven directly: the group commit's
round trip (`_group.py`).

Why not the cursor: in pipeline mode psycopg's `execute` converts the query, looks up its
prepared state, queues it and then talks to the socket (`_communicate_gen`) once per
statement, and a cursor, its results and a row per column name come after; for the
small append statements of a batch that had been a sixth of the service's CPU per
command, more than the statements' own work. Here every statement of a batch is queued
with one libpq call (`send_query_prepared`, prepared once per connection and shape), the
whole batch is flushed and read back in one pass of psycopg's own C generators
(`send`, `fetch_many`), and only rows are loaded, by psycopg's C transformer, so their
values are exactly what the cursor would give.

Parameters are written as psycopg writes them, by Python type: `str` as text of unknown
type (the server infers it from the statement, as with psycopg), `int` as int8, `bytes`
as binary bytea, `uuid.UUID` as binary uuid, `float` as float8, `bool`, `None` as NULL;
anything else through psycopg's own dumper. A statement is prepared once per connection
for its text and its parameters' types.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

import psycopg
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.generators import fetch_many, send

__all__ = ["Pipeline"]

_TEXT: Final = 0
_BINARY: Final = 1
_UNKNOWN, _BOOL, _BYTEA, _INT8, _FLOAT8, _UUID = 0, 16, 17, 20, 701, 2950
_PLACEHOLDER: Final = re.compile(r"%\((\w+)\)s|%s|%%")


class _Shape:
    """A statement's text in `$n` form and where each parameter goes."""

    __slots__ = ("names", "positional", "sql")

    def __init__(self, query: str) -> None:
        names: list[str] = []
        positional = 0

        def number(match: re.Match[str]) -> str:
            nonlocal positional
            if match.group(0) == "%%":
                return "%"
            name = match.group(1)
            if name is None:
                positional += 1
                return f"${positional}"
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        self.sql = _PLACEHOLDER.sub(number, query).encode()
        if names and positional:
            raise ValueError("a statement mixes named and positional parameters")
        self.names = names
        self.positional = positional


class Pipeline:
    """Runs batches of statements on one psycopg connection (held only by its owner)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn
        self._shapes: dict[str, _Shape] = {}
        self._prepared: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self._names = 0
        self._transformer = Transformer.from_context(conn)

    async def run(
        self, statements: Sequence[tuple[str, Mapping[str, Any] | Sequence[Any] | None]]
    ) -> list[list[tuple[Any, ...]]]:
        """Each statement's rows (none for a command), in one round trip ending in a
        Sync. Raises the first failed statement's error (those after it did not run) once
        the round trip is over, or the driver's error when the connection fails."""
        conn = self.conn
        pgconn = conn.pgconn
        # What each queued command is: a Parse (the key and name it prepares) or not.
        queued: list[tuple[tuple[bytes, tuple[int, ...]], bytes] | None] = []
        async with conn.lock:
            pgconn.enter_pipeline_mode()
            try:
                for query, params in statements:
                    if params is None:
                        pgconn.send_query_params(query.encode(), None)
                        queued.append(None)
                        continue
                    shape = self._shapes.get(query)
                    if shape is None:
                        shape = self._shapes[query] = _Shape(query)
                    values, types, formats = self._dump(shape, params)
                    key = (shape.sql, types)
                    name = self._prepared.get(key) or self._preparing(key, queued)
                    if name is None:
                        name = f"ludo_batch_{self._names}".encode()
                        self._names += 1
                        pgconn.send_prepare(name, shape.sql, param_types=types)
                        queued.append((key, name))
                    pgconn.send_query_prepared(name, values, param_formats=formats)
                    queued.append(None)
                pgconn.pipeline_sync()
                fetched = await conn.wait(_exchange(pgconn, len(queued)))
            finally:
                if pgconn.status == pq.ConnStatus.OK:
                    try:
                        pgconn.exit_pipeline_mode()
                    except psycopg.Error:
                        # Results still due (the round trip was cut short): the session
                        # is in no state to reuse. Closed here, its owner opens another.
                        pgconn.finish()
        return self._rows(fetched, queued)

    @staticmethod
    def _preparing(
        key: tuple[bytes, tuple[int, ...]],
        queued: list[tuple[tuple[bytes, tuple[int, ...]], bytes] | None],
    ) -> bytes | None:
        """The name of a statement this batch prepares already (twice in one batch)."""
        for parse in queued:
            if parse is not None and parse[0] == key:
                return parse[1]
        return None

    def _rows(
        self,
        fetched: list[list[pq.abc.PGresult]],
        queued: list[tuple[tuple[bytes, tuple[int, ...]], bytes] | None],
    ) -> list[list[tuple[Any, ...]]]:
        encoding = self.conn.info.encoding
        failure: psycopg.Error | None = None
        out: list[list[tuple[Any, ...]]] = []
        transformer = self._transformer
        for results, parse in zip(fetched, queued, strict=True):
            result = results[-1]
            status = result.status
            if status == pq.ExecStatus.FATAL_ERROR:
                failure = failure or errors.error_from_result(result, encoding=encoding)
            elif status == pq.ExecStatus.PIPELINE_ABORTED:
                failure = failure or errors.PipelineAborted("pipeline aborted")
            if parse is not None:
                if status == pq.ExecStatus.COMMAND_OK:  # the statement now exists here
                    self._prepared[parse[0]] = parse[1]
                continue
            if status == pq.ExecStatus.TUPLES_OK:
                transformer.set_pgresult(result)
                out.append(transformer.load_rows(0, result.ntuples, tuple))
            else:
                out.append([])
        if failure is not None:
            raise failure
        return out

    def _dump(
        self, shape: _Shape, params: Mapping[str, Any] | Sequence[Any]
    ) -> tuple[list[bytes | None], tuple[int, ...], list[int]]:
        if isinstance(params, Mapping):
            given = [params[name] for name in shape.names]
        else:
            given = list(params)
            if len(given) != shape.positional:
                raise TypeError(f"{shape.positional} parameters expected, {len(given)} given")
        values: list[bytes | None] = []
        types: list[int] = []
        formats: list[int] = []
        for value in given:
            kind = type(value)
            if kind is str:
                values.append(value.encode())
                types.append(_UNKNOWN)
                formats.append(_TEXT)
            elif kind is int:
                values.append(b"%d" % value)
                types.append(_INT8)
                formats.append(_TEXT)
            elif kind is bytes:
                values.append(value)
                types.append(_BYTEA)
                formats.append(_BINARY)
            elif kind is uuid.UUID:
                values.append(value.bytes)
                types.append(_UUID)
                formats.append(_BINARY)
            elif kind is float:
                values.append(repr(value).encode())
                types.append(_FLOAT8)
                formats.append(_TEXT)
            elif kind is bool:
                values.append(b"t" if value else b"f")
                types.append(_BOOL)
                formats.append(_TEXT)
            elif value is None:
                values.append(None)
                types.append(_UNKNOWN)
                formats.append(_TEXT)
            else:
                dumper = self._transformer.get_dumper(value, PyFormat.TEXT)
                dumped = dumper.dump(value)
                values.append(None if dumped is None else bytes(dumped))
                types.append(dumper.oid)
                formats.append(_TEXT)
        return values, tuple(types), formats


def _exchange(pgconn: pq.abc.PGconn, queued: int) -> Any:
    """Flush what is queued, then read each command's results and the Sync's."""
    yield from send(pgconn)
    fetched = []
    for _ in range(queued):
        fetched.append((yield from fetch_many(pgconn)))
    yield from fetch_many(pgconn)  # the Sync
    return fetched
