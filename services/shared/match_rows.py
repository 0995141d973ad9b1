"""The rows a match keeps beside its event stream, and every SQL statement on them.

- `matches`: the table settings a match needs but its rules do not (its party, turn
  limit, ranked, the CPUs' speed), one `MatchRow` per match stream, written with
  `MatchCreated` (which pins the same settings since its version 3: the row is the queries'
  index of them, and the only record for matches stored before; docs/events.md);
- `match_seeds`: the server seed, kept out of the public stream until `SeedRevealed`
  (docs/design.md#fair-dice), written with `MatchCreated` (or by a replay import).

Both never change once written, but for `matches.cpu_speed`, the host's setting, which may
change while the match plays (`cpu_speed_write`); the deadline worker reads it afresh. The
match service writes and reads them (starting a match, its reads and timers, replays); the
ranking consumer reads `matches` (the party link and the ranked flag, docs/ranking.md "What
counts"), the one table of the match service it reads. Here because both services use
it: shared code lives under `services/shared/`, and this is the one module that names
these two tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from services.shared.eventstore import SideWrite

__all__ = [
    "NO_ROW",
    "MatchRow",
    "cpu_factor_sql",
    "cpu_speed_write",
    "insert_match",
    "insert_seed",
    "read_began",
    "read_row",
    "read_rows",
    "read_seed",
]


class MatchRow(msgspec.Struct, frozen=True):
    """The match's side-table settings (`matches`); `cpu_speed`: `normal` or `fast`, the
    pause before each CPU action (`Deadlines.timing`)."""

    party_id: str
    turn_limit: int | None
    ranked: bool
    cpu_speed: str = "normal"


# A match written without the service (imported, say) has no row: no timers, not rated.
NO_ROW: Final = MatchRow("", None, False)

# A new match's seed and its row, in one statement of the start's transaction.
_NEW_MATCH: Final = """
    WITH seed AS (
        INSERT INTO match_seeds (stream_id, server_seed) VALUES (%(s)s, %(seed)s)
    )
    INSERT INTO matches (stream_id, party_id, turn_limit, ranked, cpu_speed)
    VALUES (%(s)s, %(p)s, %(t)s, %(r)s, %(c)s)
"""
# An imported match's seed: the file's, unless this database has one already.
_IMPORTED_SEED: Final = (
    "INSERT INTO match_seeds (stream_id, server_seed) VALUES (%(s)s, %(seed)s)"
    " ON CONFLICT (stream_id) DO NOTHING"
)
_SEED: Final = "SELECT server_seed FROM match_seeds WHERE stream_id = %(s)s"
_ROWS: Final = (
    "SELECT stream_id, party_id, turn_limit, ranked, cpu_speed FROM matches"
    " WHERE stream_id = ANY(%(streams)s::text[])"
)

_BEGAN: Final = (
    "SELECT stream_id, created_at FROM matches WHERE stream_id = ANY(%(streams)s::text[])"
)


# The host changed the CPUs' speed of a playing table: its match's row, as a side write
# of the party's append (it goes in only with the `SettingsChanged`).
_CPU_SPEED: Final = """
    UPDATE matches SET cpu_speed = %(ms_speed)s
     WHERE stream_id = %(ms_stream)s AND EXISTS (SELECT 1 FROM appended)
    RETURNING 1
"""
_LOCK_ROW: Final = "SELECT 1 FROM matches WHERE stream_id = %(ms_stream)s FOR UPDATE"


def cpu_factor_sql(stream: str, fast: str) -> str:
    """An SQL expression: the factor of a CPU's pause in the match of stream `stream`, read
    from its row when the statement runs (1.0 at `normal` or without a row, `fast` at
    `fast`); `stream` and `fast` name the statement's parameters."""
    return (
        f"COALESCE((SELECT CASE m.cpu_speed WHEN 'fast' THEN %({fast})s ELSE 1.0 END"
        f" FROM matches m WHERE m.stream_id = %({stream})s), 1.0)"
    )


def cpu_speed_write(stream: str, speed: str) -> SideWrite:
    """The side write that sets the CPU speed of the match of `stream`."""
    return SideWrite(_CPU_SPEED, {"ms_stream": stream, "ms_speed": speed}, _LOCK_ROW)


async def insert_match(conn: AsyncConnection, stream: str, seed: bytes, row: MatchRow) -> None:
    """Write a new match's seed and row (in the caller's transaction, with its events)."""
    params = {
        "s": stream,
        "seed": seed,
        "p": row.party_id,
        "t": row.turn_limit,
        "r": row.ranked,
        "c": row.cpu_speed,
    }
    await conn.exec_driver_sql(_NEW_MATCH, params)


async def insert_seed(conn: AsyncConnection, stream: str, seed: bytes) -> None:
    """Keep an imported match's seed (nothing when the stream has one already)."""
    await conn.exec_driver_sql(_IMPORTED_SEED, {"s": stream, "seed": seed})


async def read_seed(conn: AsyncConnection, stream: str) -> bytes | None:
    """The match's server seed, None when none is kept."""
    seed = (await conn.exec_driver_sql(_SEED, {"s": stream})).scalar_one_or_none()
    return None if seed is None else bytes(seed)


async def read_rows(conn: AsyncConnection, streams: Sequence[str]) -> dict[str, MatchRow]:
    """The `matches` rows of many match streams in one query; a stream without one is
    absent."""
    if not streams:
        return {}
    rows = await conn.exec_driver_sql(_ROWS, {"streams": list(streams)})
    return {r.stream_id: MatchRow(r.party_id, r.turn_limit, r.ranked, r.cpu_speed) for r in rows}


async def read_began(conn: AsyncConnection, streams: Sequence[str]) -> dict[str, datetime]:
    """When each of many match streams began (its `matches` row was written with its
    `MatchCreated`); a stream without a row is absent."""
    if not streams:
        return {}
    rows = await conn.exec_driver_sql(_BEGAN, {"streams": list(streams)})
    return {r.stream_id: r.created_at for r in rows}


async def read_row(conn: AsyncConnection, stream: str) -> MatchRow | None:
    """The match stream's `matches` row, None without one."""
    return (await read_rows(conn, [stream])).get(stream)
