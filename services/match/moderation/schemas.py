"""Moderation's request bodies and responses: a report, my standing, what the site is
doing now (the operator's view)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

import msgspec

from services.shared.reports import PlayerWarning
from services.shared.standing import (
    CompletionOut,
)

Reason = Literal["left_on_purpose", "abusive_stamps", "collusion", "other"]


Id = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class NewReport(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Report `player_id` about the match `match_id`, for `reason`."""

    match_id: Id
    player_id: Id
    reason: Reason


class ReportFiledOut(msgspec.Struct, kw_only=True):
    """The report went to the operators' queue (`report_id`: its stream is `report-<id>`)."""

    report_id: str
    match_id: str
    player_id: str
    reason: str


class RankedBlockOut(msgspec.Struct, kw_only=True):
    """Ranked pools are closed to the player until `until`: after three ranked matches
    abandoned in 24 hours (`abandons`), or by an operator (`suspended`)."""

    reason: Literal["abandons", "suspended"]
    until: dt.datetime


class StandingOut(msgspec.Struct, kw_only=True):
    player_id: str
    rating: int
    completion: CompletionOut | None
    ranked_block: RankedBlockOut | None
    warnings: list[PlayerWarning]


class ArenaNow(msgspec.Struct, kw_only=True):
    """An arena running now."""

    tournament_id: str
    name: str
    seats: int
    players: int
    private: bool
    ends_at: str


class SiteNowOut(msgspec.Struct, kw_only=True):
    """What the site is doing now (the module's docstring says what each figure counts)."""

    at: str
    matches_now: int
    matches_cpu_only: int
    players_at_tables: int
    players_in_lobby: int
    arenas: list[ArenaNow]
