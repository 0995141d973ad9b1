"""The analysis routes: the public read of one match's analysis (`GET /api/ratings/
analysis/{match_id}`: the bytes the analysis consumer stored, services/ranking/analysis/
consumer.py, exactly as `ludo replay analyse` prints them for the match's replay file;
docs/analysis.md), a player's averages and dice (`GET /api/ratings/players/{player_id}/
analysis`), and the operator's site dice and luck gaps under `/api/ranking` behind the
operator guard (`analysis_handlers()`: the last two). The match
service forwards `/api/ratings/*` to here for its pages.

Handlers take the parts they use as dependencies from the composition root
(services/ranking/app.py): `reads` (the standby's route, services/shared/database.py) and
`queries` (the ratings queries on the primary: whether a match exists).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Final

from litestar import Controller, MediaType, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.types import ControllerRouterHandler
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Invalid, NotFound
from domain.streams import match_stream
from services.ranking.analysis.schemas import LuckGap, PlayerAnalysis, SiteDice
from services.ranking.analysis.stats import WINDOW, AnalysisQueries
from services.ranking.guards import operator_guard
from services.ranking.ratings.queries import RatingQueries
from services.shared.database import ReadRoute
from services.shared.errors import error_responses

__all__ = ["AnalysisController", "analysis_handlers"]

MAX_DAYS: Final = 3650  # as /matches-per-day: ten years of days is the longest question
MAX_ID: Final = 200  # as the public ratings: no player id is longer

Reads = NamedDependency[ReadRoute]


class AnalysisController(Controller):
    path = "/api/ratings"
    tags = ("ratings",)

    @get(
        "/analysis/{match_id:str}",
        operation_id="getMatchAnalysis",
        summary="A finished match's analysis: each seat's luck and errors (docs/analysis.md)",
        description="The analysis exactly as stored (and as `ludo replay analyse` prints it "
        "for the match's replay file); the header `X-Ludo-Evaluator` repeats the evaluator. "
        '404 `{"error": "not_analysed"}` while the match runs or until the analysis consumer '
        'has reached its end (seconds); 404 `{"error": "not_found"}` for an unknown match.',
        responses=error_responses("invalid", "not_found", "not_analysed"),
        media_type=MediaType.JSON,
        # An analysis is written once and never rewritten, so a cache may keep it. Set on
        # the route, it replaces the services' `no-store` (a header on the Response would
        # be sent beside it: two Cache-Control headers, and no cache keeps the answer).
        # Errors (`not_analysed` while the match runs) stay `no-store`: their handlers set it.
        cache_control=CacheControlHeader(public=True, max_age=300),
    )
    async def analysis(
        self, reads: Reads, queries: NamedDependency[RatingQueries], match_id: FromPath[str]
    ) -> Response[Any]:
        try:
            bare = str(uuid.UUID(match_id))
        except ValueError:
            raise Invalid("match_id: not a UUID", field="match_id") from None
        # From the standby; an analysis not there yet (written a moment ago, or not at
        # all) is asked of the primary.
        row = await reads.read(
            lambda engine: AnalysisQueries(engine).stored(bare), complete=lambda r: r is not None
        )
        if row is None:
            if not await queries.match_exists(match_stream(bare)):
                raise NotFound("no such match")
            raise NotFound(
                "this match has no analysis yet: it is written within seconds of the match's"
                " end; try again shortly",
                code="not_analysed",
            )
        evaluator, body = row
        return Response(
            content=body,
            media_type=MediaType.JSON,
            headers={"X-Ludo-Evaluator": evaluator},
        )


Days = Annotated[int, QueryParameter(ge=1, le=MAX_DAYS, description="the last N days (UTC)")]


class PlayerAnalysisController(Controller):
    path = "/api/ratings"
    tags = ("ratings",)

    @get(
        "/players/{player_id:str}/analysis",
        operation_id="getPlayerAnalysis",
        summary="A player's luck, errors and dice from the analyses of their matches",
        description=f"Averages over the player's last {WINDOW} analysed matches (`luck`: "
        "the mean luck per match, in chances to place first; `error_rate`: Σ own_error / "
        "Σ choices; `best_share`), and their dice over all their analysed rolls: each "
        "face's count and share with a 95% Wilson interval against 1/6, sixes per 100 "
        "rolls, chi-square and p-value. A known player with no analysed match yet: zeros. "
        "A player the ranking service has never seen: 404.",
        responses=error_responses("not_found"),
    )
    async def player(self, reads: Reads, player_id: FromPath[str]) -> PlayerAnalysis:
        if "\x00" in player_id or len(player_id) > MAX_ID:  # no such player id can exist
            raise NotFound("no such player")

        async def read(engine: AsyncEngine) -> tuple[PlayerAnalysis, bool]:
            queries = AnalysisQueries(engine)
            analysis = await queries.player(player_id)
            return analysis, analysis.dice.matches > 0 or await queries.known(player_id)

        # From the standby; a player it does not know yet is asked of the primary.
        analysis, known = await reads.read(read, complete=lambda got: got[1])
        if not known:
            raise NotFound("no such player")
        return analysis


class SiteAnalysisController(Controller):
    path = "/"
    tags = ("ranking",)
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/dice",
        operation_id="getSiteDice",
        summary="The site's rolls per face per UTC day, with a chi-square test of each",
        description="Every analysed seat's rolls (CPUs too), by the day its match ended. "
        "Pearson's chi-square against a fair die (5 degrees of freedom) and its p-value, "
        "per day and over the window (`total`). Days without a roll are left out.",
    )
    async def dice(self, reads: Reads, days: Days = 14) -> SiteDice:
        return await reads.read(lambda engine: AnalysisQueries(engine).site_dice(days))

    @get(
        "/luck-gaps",
        operation_id="getLuckGaps",
        summary="Analysed matches with the largest differences of luck between two seats",
    )
    async def luck_gaps(
        self,
        reads: Reads,
        days: Days = 7,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 20,
    ) -> list[LuckGap]:
        return await reads.read(lambda engine: AnalysisQueries(engine).luck_gaps(days, limit))


def analysis_handlers() -> list[ControllerRouterHandler]:
    """The public player analysis, and the operator's reads under `/api/ranking` behind the
    operator guard (as every `/api/ranking` route); a new router for each app."""
    return [
        PlayerAnalysisController,
        Router("/api/ranking", route_handlers=[SiteAnalysisController], guards=[operator_guard]),
    ]
