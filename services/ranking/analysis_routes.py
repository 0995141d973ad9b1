"""The public read of one match's analysis (`GET /api/ratings/analysis/{match_id}`): the
bytes the analysis consumer stored (services/ranking/analysis_consumer.py), exactly as
`ludo replay analyse` prints them for the match's replay file (docs/analysis.md). The
match service forwards `/api/ratings/*` to here for its pages."""

from __future__ import annotations

import uuid
from typing import Any

from litestar import Controller, MediaType, Response, get
from litestar.datastructures import CacheControlHeader
from litestar.params import FromPath

from domain.errors import Invalid, NotFound
from domain.streams import match_stream
from services.ranking.analysis_stats import AnalysisQueries
from services.ranking.service import Ranking
from services.shared.errors import error_responses

__all__ = ["AnalysisController"]


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
    async def analysis(self, ranking: Ranking, match_id: FromPath[str]) -> Response[Any]:
        try:
            bare = str(uuid.UUID(match_id))
        except ValueError:
            raise Invalid("match_id: not a UUID", field="match_id") from None
        # From the standby; an analysis not there yet (written a moment ago, or not at
        # all) is asked of the primary.
        row = await ranking.reads.read(
            lambda engine: AnalysisQueries(engine).stored(bare), complete=lambda r: r is not None
        )
        if row is None:
            if not await ranking.queries.match_exists(match_stream(bare)):
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
