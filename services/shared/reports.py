"""Reports of a player and the operator's decisions, over the event store.

Both services use this: the match service files (`Reports.file`: the reporter and the
reported must have sat in the match, read from its events there), the ranking service's
operator decides (`Reports.decide`) and reads the queue (`Reports.queue`). Each command is
`domain.reports`' Decider on the report's stream (`report-<id>`, the id derived from match,
reporter and reported), appended with the read model row (`reports`) as its side write: in
the one statement that appends the events, so the queue, the suspensions and the warnings
never disagree with the log. Every report and decision is an event: the history is the
log's, auditable, and the table could be rebuilt from the `report-` streams.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Final

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from domain import reports as rd
from domain.chain import GENESIS
from domain.errors import rejection_error
from domain.streams import match_stream, report_stream
from services.shared.eventstore import ConcurrencyError, EventStore, SideWrite

__all__ = ["QUEUE_LIMIT", "WARNING_DAYS", "PlayerWarning", "ReportOut", "Reports"]

QUEUE_LIMIT: Final = 200
WARNING_DAYS: Final = 30  # a warning shows on the player's standing this long

_FILED = """
    INSERT INTO reports (report_id, match_id, reporter_id, reported_id, reason, filed_at)
    SELECT %(rp_id)s, %(rp_match)s, %(rp_reporter)s, %(rp_reported)s, %(rp_reason)s,
        to_timestamp(%(rp_at)s) FROM appended
    RETURNING 1
"""
_DECIDED = """
    UPDATE reports SET decision = %(rp_decision)s, decided_at = to_timestamp(%(rp_at)s),
        hours = %(rp_hours)s, until = to_timestamp(%(rp_until)s), note = %(rp_note)s
    FROM appended WHERE report_id = %(rp_id)s
    RETURNING 1
"""
_LOCK = "SELECT 1 FROM reports WHERE report_id = %(rp_id)s FOR UPDATE"

_COLUMNS = (
    "report_id, match_id, reporter_id, reported_id, reason, filed_at, decision, decided_at,"
    " hours, until, note"
)


class ReportOut(msgspec.Struct, kw_only=True):
    """A report as the operator's queue shows it (`decision` None: open)."""

    report_id: str
    match_id: str
    reporter_id: str
    reported_id: str
    reason: str
    filed_at: dt.datetime
    decision: str | None = None
    decided_at: dt.datetime | None = None
    hours: int | None = None
    until: dt.datetime | None = None
    note: str | None = None


class PlayerWarning(msgspec.Struct, kw_only=True):
    """A warning the operator gave the player, on a report about `match_id`."""

    report_id: str
    match_id: str
    reason: str
    at: dt.datetime
    note: str | None = None


def _row(row: Any) -> ReportOut:
    return ReportOut(**dict(row._mapping))


class Reports:
    """Filing, deciding and reading reports (see the module docstring)."""

    def __init__(self, engine: AsyncEngine, store: EventStore) -> None:
        self.engine = engine
        self.store = store

    async def _state(self, report_id: str) -> tuple[rd.ReportState, bytes]:
        stored = await self.store.read_stream(report_stream(report_id))
        state = rd.ReportState()
        for event in stored:
            rd.apply(state, rd.decode_report_event(event.data))
        return state, stored[-1].hash if stored else GENESIS

    async def file(
        self,
        *,
        reporter: str,
        reported: str,
        match_id: str,
        reason: str,
        seated: set[str],
        now: dt.datetime,
    ) -> str:
        """File a report of `reported` by `reporter` about `match_id`, whose human players
        are `seated`; returns the report id. Refused (nothing appended): the Decider's
        rejections, as `AppError`s."""
        rid = rd.report_id(match_id, reporter, reported)
        state, head = await self._state(rid)
        command = rd.FileReport(
            reporter=reporter,
            reported=reported,
            match_id=match_id,
            reason=reason,
            reporter_seated=reporter in seated,
            reported_seated=reported in seated,
            now=now.timestamp(),
        )
        decided = rd.decide(command, state)
        if isinstance(decided, rd.ReportRejection):
            raise rejection_error(decided.code, decided.reason, decided.field)
        filed = decided[0]
        assert isinstance(filed, rd.ReportFiled)
        params = {
            "rp_id": rid,
            "rp_match": match_id,
            "rp_reporter": reporter,
            "rp_reported": reported,
            "rp_reason": reason,
            "rp_at": filed.at,
        }
        try:
            await self.store.append(
                report_stream(rid),
                state.version,
                decided,
                metadata={"actor": reporter},
                prev_hash=head,
                side=[SideWrite(_FILED, params)],
            )
        except ConcurrencyError:  # the same report, sent twice at once: one goes in
            raise rejection_error(
                "already_reported", "you already reported this player for this match"
            ) from None
        return rid

    async def decide(
        self,
        report_id: str,
        *,
        operator: str,
        decision: str,
        hours: int | None,
        note: str | None,
        now: dt.datetime,
    ) -> ReportOut:
        """The operator's decision on the report; refused as the Decider says (a report
        never filed: 404)."""
        state, head = await self._state(report_id)
        command = rd.DecideReport(
            operator=operator, decision=decision, hours=hours, note=note, now=now.timestamp()
        )
        decided = rd.decide(command, state)
        if isinstance(decided, rd.ReportRejection):
            raise rejection_error(decided.code, decided.reason, decided.field)
        event = decided[0]
        assert isinstance(event, rd.ReportDecided)
        params = {
            "rp_id": report_id,
            "rp_decision": event.decision,
            "rp_at": event.at,
            "rp_hours": event.hours,
            "rp_until": event.until,
            "rp_note": event.note,
        }
        try:
            await self.store.append(
                report_stream(report_id),
                state.version,
                decided,
                metadata={"actor": operator},
                prev_hash=head,
                side=[SideWrite(_DECIDED, params, _LOCK)],
            )
        except ConcurrencyError:  # another operator decided it meanwhile
            raise rejection_error("already_decided", "this report was already decided") from None
        found = await self.get(report_id)
        assert found is not None
        return found

    async def get(self, report_id: str) -> ReportOut | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.text(f"SELECT {_COLUMNS} FROM reports WHERE report_id = :r"),
                    {"r": report_id},
                )
            ).first()
        return None if row is None else _row(row)

    async def queue(self, limit: int = QUEUE_LIMIT) -> list[ReportOut]:
        """The operator's queue: open reports first, oldest first; then decided ones,
        newest decision first."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    f"SELECT {_COLUMNS} FROM reports ORDER BY (decision IS NOT NULL),"
                    " CASE WHEN decision IS NULL THEN filed_at END,"
                    " decided_at DESC, report_id LIMIT :n"
                ),
                {"n": limit},
            )
            return [_row(r) for r in rows]

    async def seat_names(self, match_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """The name each player sat under in each match (its `MatchCreated`'s seats):
        match id -> player id -> name, in one read; a match without that event is absent.
        The names the players saw at the table, so the operator reads a report as they
        wrote it (the match service's `players` table is not read: the ranking service
        names no table of it)."""
        streams = [match_stream(m) for m in dict.fromkeys(match_ids)]
        events = await self.store.read_streams(streams, types=["MatchCreated"])
        names: dict[str, dict[str, str]] = {}
        for match_id in dict.fromkeys(match_ids):
            for data in events.get(match_stream(match_id), ()):
                created = data.event
                if isinstance(created, ev.MatchCreated):
                    names[match_id] = {
                        s.player_id: s.name for s in created.seats if s.player_id is not None
                    }
        return names

    async def warnings(self, player_id: str, now: dt.datetime) -> list[PlayerWarning]:
        """The warnings `player_id` was given in the last `WARNING_DAYS` days, newest first."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT report_id, match_id, reason, decided_at AS at, note FROM reports"
                    " WHERE reported_id = :p AND decision = 'warn' AND decided_at > :since"
                    " ORDER BY decided_at DESC"
                ),
                {"p": player_id, "since": now - dt.timedelta(days=WARNING_DAYS)},
            )
            return [PlayerWarning(**dict(r._mapping)) for r in rows]
