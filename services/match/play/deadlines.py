"""Turn deadlines (docs/design.md#timers-presence-and-cpu-stand-ins): each match has at most one row
in `turn_deadlines`, derived from its state after every append, which the scheduler claims when due.

The row is written by ONE pair of statements: as a side write of the append that changes
the state (`side_write`: it takes effect only when the events go in), or on its own
(`refresh`, after a stale firing, when there is nothing to append)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.decider import MatchState
from domain.streams import match_id_of, match_stream
from services.match.play.reads import MatchReads, MatchRow, settings_of
from services.shared import match_rows
from services.shared.eventstore import SideWrite
from services.shared.settings import Settings

__all__ = ["CPU_SPEED_FACTOR", "Deadlines"]

# The pause before each CPU action, as a share of `LUDO_CPU_DELAY`, by the match's CPU speed
# (`domain.party.CpuSpeed`, the host's setting): fast is four times as quick.
CPU_SPEED_FACTOR: dict[str, float] = {"normal": 1.0, "fast": 0.25}

# `{gate}` ties the write to an append (the relation `appended` of the append statement,
# one row when the events go in) or is empty for a write on its own.
# A CPU's pause is `dl_secs` (LUDO_CPU_DELAY) times the factor of the match's CPU speed as
# the match's row holds it when the deadline is written (`match_rows.cpu_factor_sql`): the
# host may change the speed while the match plays (`PartyCommands`), so it is read then,
# never from a cached row.
_UPSERT = """
    INSERT INTO turn_deadlines (stream_id, due_at, expected_version, kind)
    SELECT %(dl_stream)s,
           now() + make_interval(secs => %(dl_secs)s * CASE WHEN %(dl_kind)s = 'cpu'
                                 THEN {factor} ELSE 1.0 END),
           %(dl_version)s, %(dl_kind)s
      {gate}
    ON CONFLICT (stream_id) DO UPDATE
        SET due_at = EXCLUDED.due_at,
            expected_version = EXCLUDED.expected_version,
            kind = EXCLUDED.kind
    RETURNING 1
"""
_DELETE = """
    DELETE FROM turn_deadlines
     WHERE stream_id = %(dl_stream)s {gate}
    RETURNING 1
"""
_FACTOR = match_rows.cpu_factor_sql("dl_stream", "dl_fast")
_UPSERT_WITH_APPEND = _UPSERT.format(gate="FROM appended", factor=_FACTOR)
_DELETE_WITH_APPEND = _DELETE.format(gate="AND EXISTS (SELECT 1 FROM appended)")
_UPSERT_ALONE = _UPSERT.format(gate="", factor=_FACTOR)
_DELETE_ALONE = _DELETE.format(gate="")
# Taken before the events go in: the scheduler holds this row while it fires a deadline
# and appends, so an append waits for it and then loses the race cleanly (409) instead of
# deadlocking with it. A player's leave or reclaim holds it too (`MatchCommands.leave`, `reclaim`).
_LOCK = "SELECT 1 FROM turn_deadlines WHERE stream_id = %(dl_stream)s FOR UPDATE"


class Deadlines:
    def __init__(self, engine: AsyncEngine, reads: MatchReads, settings: Settings) -> None:
        self.engine = engine
        self.reads = reads
        self.settings = settings

    def timing(self, state: MatchState, row: MatchRow) -> tuple[str, float] | None:
        """The kind and length of the match's next deadline; None: no deadline. A CPU's
        pause at the speed `row` says (what a state frame shows; the deadline row itself
        takes the speed from the database, `_UPSERT`)."""
        timing = self._base(state, row)
        if timing is not None and timing[0] == "cpu":
            return "cpu", timing[1] * CPU_SPEED_FACTOR.get(row.cpu_speed, 1.0)
        return timing

    def _base(self, state: MatchState, row: MatchRow) -> tuple[str, float] | None:
        """The kind of the next deadline and its length before the CPU speed's factor."""
        if state.status != "playing":
            return None
        if state.cpu_controls(state.turn):
            return "cpu", self.settings.cpu_delay
        limit = settings_of(state, row).turn_limit
        if limit:
            return "turn", float(limit)
        return None

    def side_write(self, stream: str, state: MatchState, row: MatchRow) -> SideWrite:
        """The deadline row for `state`, as a side write of the append that reaches it."""
        upsert, delete = _UPSERT_WITH_APPEND, _DELETE_WITH_APPEND
        return self._write(stream, state, row, upsert, delete)

    async def refresh(self, conn: AsyncConnection, stream: str) -> None:
        """Recompute a match's deadline from its current state (after a stale firing)."""
        state = await self.reads.state(match_id_of(stream))
        row = await self.reads.row(stream, conn)
        write = self._write(stream, state, row, _UPSERT_ALONE, _DELETE_ALONE)
        await conn.exec_driver_sql(write.sql, write.params)

    async def hold(self, conn: AsyncConnection, stream: str) -> None:
        """Lock the match's deadline row in `conn`'s transaction (as the scheduler does
        while it fires): no CPU or timer appends to the match meanwhile."""
        await conn.exec_driver_sql(_LOCK, {"dl_stream": stream})

    async def due(self, match_id: str) -> tuple[str, str] | None:
        """The match's deadline: (kind, due time in ISO 8601), or None."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.text("SELECT kind, due_at FROM turn_deadlines WHERE stream_id = :s"),
                    {"s": match_stream(match_id)},
                )
            ).one_or_none()
        return None if row is None else (row.kind, row.due_at.isoformat())

    def _write(
        self, stream: str, state: MatchState, row: MatchRow, upsert: str, delete: str
    ) -> SideWrite:
        timing = self._base(state, row)
        if timing is None:
            return SideWrite(delete, {"dl_stream": stream}, _LOCK)
        kind, secs = timing
        params = {
            "dl_stream": stream,
            "dl_secs": secs,
            "dl_version": state.version,
            "dl_kind": kind,
            "dl_fast": CPU_SPEED_FACTOR["fast"],
        }
        return SideWrite(upsert, params, _LOCK)
