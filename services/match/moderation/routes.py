"""A player's side of reputation and moderation: reporting another player of a
match (`POST /api/reports`), one's own standing (`GET /api/players/me/standing`: rating,
completion, whether and why ranked pools are closed to them, and recent warnings), and the
completion rates the pages show beside names (`GET /api/players/reputation?ids=`).

Filing goes through `services/shared/reports.py` (the report's events and its queue row in
one statement); the operator decides on the ranking service's dashboard. The standing is
`services/shared/standing.py`, read from the same database (no call to the ranking process).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, QueryParameter
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.callers import BEARER, CurrentPlayer, provide_player
from services.match.ids import check_id
from services.match.moderation.schemas import NewReport, RankedBlockOut, ReportFiledOut, StandingOut
from services.match.play.reads import MatchReads
from services.shared.errors import error_responses
from services.shared.reports import Reports
from services.shared.standing import (
    Reputations,
    completion_out,
    reputations,
    standing,
)

__all__ = ["MyStandingController", "ReportsController", "ReputationController"]


class ReportsController(Controller):
    path = "/api/reports"
    tags = ("reports",)

    @post(
        "/",
        operation_id="reportPlayer",
        summary="Report a player of a match you played (to the operators' queue)",
        description="`reason`: `left_on_purpose`, `abusive_stamps`, `collusion` or `other`. "
        "You must have sat in the match, and so must the player you report; not yourself. "
        "One report per player you report and match: a second is 409 `already_reported`. "
        "Refusals append nothing: 422 `self_report` / `stranger` (that player did not play "
        "in it) / invalid `reason`, 403 `not_in_match` (you did not), 404 no such match.",
        status_code=201,
        dependencies={"player": provide_player},
        security=BEARER,
        responses=error_responses(
            "not_found",
            "not_in_match",
            "already_reported",
            "self_report",
            "stranger",
        ),
    )
    async def report(
        self,
        data: JSONBody[NewReport],
        matches: NamedDependency[MatchReads],
        reports: NamedDependency[Reports],
        player: CurrentPlayer,
    ) -> ReportFiledOut:
        match_id = check_id(data.match_id, "match")  # not a UUID: 404, as any unknown id
        state = await matches.state(match_id)  # 404 if no such match
        seated = {s.player_id for s in state.seats if s.player_id is not None and s.cpu is None}
        rid = await reports.file(
            reporter=player.id,
            reported=data.player_id,
            match_id=match_id,
            reason=data.reason,
            seated=seated,
            now=dt.datetime.now(dt.UTC),
        )
        return ReportFiledOut(
            report_id=rid, match_id=match_id, player_id=data.player_id, reason=data.reason
        )


class MyStandingController(Controller):
    path = "/api/players/me/standing"
    tags = ("players",)

    @get(
        "/",
        operation_id="getMyStanding",
        summary="Your rating, completion rate, ranked-pool block and recent warnings",
        description="`ranked_block`: null, or why (`abandons`: three ranked matches left in "
        "24 hours, an hour's pause doubling for repeaters; `suspended`: by an operator) and "
        "until when you may not enter ranked pools. `warnings`: the operators' warnings of "
        "the last 30 days. `completion` is null before your first ended match.",
        dependencies={"player": provide_player},
        security=BEARER,
    )
    async def standing(
        self,
        engine: NamedDependency[AsyncEngine],
        reports: NamedDependency[Reports],
        player: CurrentPlayer,
    ) -> StandingOut:
        now = dt.datetime.now(dt.UTC)
        got = await standing(engine, player.id, now)
        completion = completion_out(got.completion)
        block = (
            None
            if got.ranked_block is None
            else RankedBlockOut(reason=got.ranked_block.reason, until=got.ranked_block.until)
        )
        return StandingOut(
            player_id=player.id,
            rating=round(got.rating),
            completion=completion,
            ranked_block=block,
            warnings=await reports.warnings(player.id, now),
        )


class ReputationController(Controller):
    path = "/api/players/reputation"
    tags = ("players",)

    @get(
        "/",
        operation_id="getReputations",
        summary="Completion rates and ratings of many players at once (the lobby's parties, "
        "the table)",
        description="`ids`: 1 to 100 player ids, comma-separated (422 otherwise). Each comes "
        "back once, in the order asked; `completion` is null for a player with no ended "
        "match; `rating` is the player rating, rounded (1500 before any rated match), shown "
        "beside the names at a ranked table. The same answer as the ranking service's "
        "`getPublicReputations`, read here from the same database, so the pages show it "
        "while the ranking service is away.",
    )
    async def reputation(
        self,
        engine: NamedDependency[AsyncEngine],
        ids: Annotated[
            str,
            QueryParameter(min_length=1, max_length=4_000, description="player ids: a,b,c"),
        ],
    ) -> Reputations:
        return await reputations(engine, ids)
