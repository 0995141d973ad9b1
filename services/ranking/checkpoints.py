"""Where each consumer of the global cursor is (`consumer_checkpoints`, one row per
consumer name): read, optionally locked for the batch's transaction, and moved with the
batch's effects in that same transaction."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from services.shared.eventstore import Cursor

__all__ = ["read_checkpoint", "write_checkpoint"]


async def read_checkpoint(conn: AsyncConnection, name: str, *, lock: bool = False) -> Cursor:
    query = "SELECT tx, position FROM consumer_checkpoints WHERE name = :n"
    row = (
        await conn.execute(sa.text(query + (" FOR UPDATE" if lock else "")), {"n": name})
    ).first()
    if row is None:
        await conn.execute(
            sa.text(
                "INSERT INTO consumer_checkpoints (name, tx, position) VALUES (:n, 0, 0) "
                "ON CONFLICT DO NOTHING"
            ),
            {"n": name},
        )
        return await read_checkpoint(conn, name, lock=lock)
    return Cursor(int(row.tx), int(row.position))


async def write_checkpoint(conn: AsyncConnection, name: str, cursor: Cursor) -> None:
    await conn.execute(
        sa.text(
            "UPDATE consumer_checkpoints SET tx = :tx, position = :p, updated_at = now() "
            "WHERE name = :n"
        ),
        {"tx": cursor.tx, "p": cursor.position, "n": name},
    )
