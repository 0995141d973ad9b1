"""The operator's queue of reports: `GET /api/operator/reports` and
`POST /api/operator/reports/{report_id}/decision`, with the operator token, shown on the
dashboard.

Reports are filed in the match service (`POST /api/reports`); each is a `report-<id>`
stream (domain/reports.py) with its queue row written in the same statement
(services/shared/reports.py). A decision is one more event on that stream: `dismiss`,
`warn` (shown to the player on their standing for 30 days) or `suspend` for `hours` (no
ranked pools until then: `services/shared/standing.py`, reason `suspended`).
"""

from __future__ import annotations

import datetime as dt

import msgspec
from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from domain.errors import NotFound
from services.ranking.guards import operator_guard
from services.ranking.moderation.schemas import Decision, QueuedReport, ReportQueue
from services.shared.errors import error_responses
from services.shared.reports import ReportOut, Reports

__all__ = ["OperatorReportsController"]

OPERATOR = "operator"  # who decided, in the event: the one operator token's holder


async def _queued(reports: Reports, rows: list[ReportOut]) -> list[QueuedReport]:
    """The rows as the queue shows them: with the players' names in the match, read in
    one go for all of them."""
    names = await reports.seat_names([r.match_id for r in rows])
    return [
        QueuedReport(
            **msgspec.structs.asdict(r),
            reported_name=names.get(r.match_id, {}).get(r.reported_id),
            reporter_name=names.get(r.match_id, {}).get(r.reporter_id),
            dispute_report=f"/report/{r.match_id}",
        )
        for r in rows
    ]


class OperatorReportsController(Controller):
    path = "/api/operator/reports"
    tags = ("moderation",)
    guards = [operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/",
        operation_id="getReportQueue",
        summary="Reports of players: open ones first (oldest first), then decided ones",
    )
    async def queue(self, reports: NamedDependency[Reports]) -> ReportQueue:
        rows = await reports.queue()
        return ReportQueue(
            open=sum(r.decision is None for r in rows),
            reports=await _queued(reports, rows),
        )

    @post(
        "/{report_id:str}/decision",
        operation_id="decideReport",
        summary="Dismiss, warn or suspend (no ranked pools for `hours`)",
        description="One decision per report (409 `already_decided`); `hours` only and "
        "always for `suspend` (422 `bad_hours`); a report never filed is 404.",
        status_code=200,
        responses=error_responses("not_found", "already_decided", "bad_hours"),
    )
    async def decide(
        self, reports: NamedDependency[Reports], report_id: FromPath[str], data: JSONBody[Decision]
    ) -> QueuedReport:
        if len(report_id) > 100 or "\x00" in report_id:
            raise NotFound("no such report")
        decided = await reports.decide(
            report_id,
            operator=OPERATOR,
            decision=data.decision,
            hours=data.hours,
            note=data.note,
            now=dt.datetime.now(dt.UTC),
        )
        return (await _queued(reports, [decided]))[0]
