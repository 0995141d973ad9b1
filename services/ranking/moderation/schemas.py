"""What the operator's report queue answers with and takes (services/ranking/moderation/
routes.py): the queued reports with the players' names, and a decision."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from services.shared.reports import ReportOut

__all__ = ["Decision", "QueuedReport", "ReportQueue"]


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
