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
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, get, post
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.params import FromPath, JSONBody

from domain.errors import NotFound, Unauthenticated
from services.ranking.service import Ranking, RankingService
from services.shared.errors import error_responses
from services.shared.operator import is_operator
from services.shared.reports import ReportOut, Reports

__all__ = ["OperatorReportsController"]

OPERATOR = "operator"  # who decided, in the event: the one operator token's holder


class QueuedReport(ReportOut, kw_only=True):
    """A report in the queue, with the names the reported player and the reporter sat
    under in its match (its `MatchCreated`; null when the match has none) and the path of
    the match's dispute report on the match service (`/report/{match_id}`, the operator's
    page there)."""

    reported_name: str | None
    reporter_name: str | None
    dispute_report: str


class ReportQueue(msgspec.Struct, kw_only=True):
    open: int
    reports: list[QueuedReport]


class Decision(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """`dismiss`, `warn`, or `suspend` for `hours` (1 to 8760); an optional `note`."""

    decision: Literal["dismiss", "warn", "suspend"]
    hours: int | None = None
    note: Annotated[str, msgspec.Meta(max_length=500)] | None = None


def _guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    ranking: RankingService = connection.app.state.ranking
    header = connection.headers.get("authorization", "")
    if not is_operator(header, ranking.settings.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")


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
    guards = [_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/",
        operation_id="getReportQueue",
        summary="Reports of players: open ones first (oldest first), then decided ones",
    )
    async def queue(self, ranking: Ranking) -> ReportQueue:
        reports = await ranking.reports.queue()
        return ReportQueue(
            open=sum(r.decision is None for r in reports),
            reports=await _queued(ranking.reports, reports),
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
        self, ranking: Ranking, report_id: FromPath[str], data: JSONBody[Decision]
    ) -> QueuedReport:
        if len(report_id) > 100 or "\x00" in report_id:
            raise NotFound("no such report")
        decided = await ranking.reports.decide(
            report_id,
            operator=OPERATOR,
            decision=data.decision,
            hours=data.hours,
            note=data.note,
            now=dt.datetime.now(dt.UTC),
        )
        return (await _queued(ranking.reports, [decided]))[0]
