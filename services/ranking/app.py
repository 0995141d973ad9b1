"""The ranking service as a Litestar app: `create_app(settings, engine=None)`.

The lifespan opens the database (unless an engine is given) and the standby's read route
(`LUDO_DATABASE_READ_URL`: the public, analysis and dashboard reads go there; docs/
scaling.md, Reads from a standby), and runs the
`RankingConsumer` as a background task (`consume=False` leaves it off, for tests that
drive it themselves). Several instances may run: the consumer's advisory lock lets one
consume while the others stand by; all of them serve reads.

Run it with `uvicorn --factory services.ranking.app:app_from_env`.

API (`/api/ranking`, OpenAPI at `/schema`), operator only (`Authorization: Bearer
$LUDO_OPERATOR_TOKEN`): leaderboard, a player's ratings and history, rating distribution,
matches per day, largest swings, consumer lag, and `POST /api/ranking/recompute`.
Public, no token: `/api/ratings/*` (services/ranking/public.py), the player ratings that
people see. Every handler reads through the injected `ranking` dependency
(`RankingService`, services/ranking/service.py: its `queries` hold the SQL), as the
match service's handlers do. `GET /dashboard` is the operator dashboard (web/pages/dashboard.html:
SVG charts drawn by its module, web/js/dashboard.js, from these endpoints; it asks for the
token).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import Annotated, Any

import msgspec
from litestar import Controller, Litestar, MediaType, Response, get, post
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi.spec import SecurityScheme
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Conflict, Invalid, NotFound, Unauthenticated, Unavailable
from services.ranking.analysis_routes import AnalysisController
from services.ranking.analysis_stats import analysis_handlers
from services.ranking.consumer import (
    RecomputeBusy,
    RecomputeNotPermitted,
    ratings_hash,
    recompute,
)
from services.ranking.live_view import live_handlers
from services.ranking.moderation import OperatorReportsController
from services.ranking.public import PublicRatingsController
from services.ranking.queries import (
    Bucket,
    ChangeOut,
    DayCount,
    Lag,
    RatingOut,
    RatingQueries,
    Swing,
)
from services.ranking.ratings import DEFAULT_MODEL, MODELS, model_named
from services.ranking.service import Ranking, RankingService, provide_ranking
from services.shared.background import run_in_background
from services.shared.database import reachable, service_engine, service_read_route
from services.shared.errors import (
    HEALTH_RESPONSES,
    database_unavailable,
    error_responses,
)
from services.shared.eventstore import Backlog
from services.shared.instance_stats import InstanceBeat
from services.shared.metrics import app_metrics
from services.shared.openapi_docs import openapi_config
from services.shared.operator import is_operator
from services.shared.pages import page_response
from services.shared.service_app import serve_from_env, service_app
from services.shared.settings import Settings

__all__ = ["app_from_env", "create_app"]


# --------------------------------------------------------------------------- responses


class LeaderboardEntry(RatingOut, kw_only=True):
    """A player on the operator's leaderboard: `rating` is the operator rating (openskill:
    the conservative ordinal, the list's order); `player_rating` the figure the site shows
    players (on mu, rounded: the public leaderboard's `rating`)."""

    rank: int
    player_rating: int


class Leaderboard(msgspec.Struct, kw_only=True):
    model: str
    entries: list[LeaderboardEntry]


class PlayerRatings(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    ratings: list[RatingOut]
    history: list[ChangeOut]


class Distribution(msgspec.Struct, kw_only=True):
    model: str
    bucket: float
    buckets: list[Bucket]


class RecomputeOut(msgspec.Struct, kw_only=True):
    hash: str
    ratings: int


# ---------------------------------------------------------------------------- handlers

Model = Annotated[
    str,
    QueryParameter(description=f"rating model: {', '.join(MODELS)}"),
]


# Bounds of query values that go into SQL: beyond them PostgreSQL's interval or bigint
# arithmetic overflows (a 500), and no real question needs them.
MAX_DAYS = 36_500  # a century
MAX_OFFSET = 1_000_000_000


def _operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Every `/api/ranking` route is the operator's: it needs the operator token."""
    ranking: RankingService = connection.app.state.ranking
    _require_operator(connection, ranking.settings)


class RankingController(Controller):
    path = "/api/ranking"
    tags = ("ranking",)
    guards = [_operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/leaderboard",
        operation_id="getLeaderboard",
        summary="Players by operator rating, with the player rating the site shows",
    )
    async def leaderboard(
        self,
        ranking: Ranking,
        model: Model = DEFAULT_MODEL,
        min_matches: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
        active_days: Annotated[
            int | None,
            QueryParameter(ge=1, le=MAX_DAYS, description="played within the last N days"),
        ] = None,
        include_provisional: FromQuery[bool] = True,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        offset: Annotated[int, QueryParameter(ge=0, le=MAX_OFFSET)] = 0,
    ) -> Leaderboard:
        m = model_named(model)
        rows = await ranking.lagging(
            lambda q: q.leaderboard(
                model,
                by="rating",
                min_matches=min_matches,
                active_days=active_days,
                include_provisional=include_provisional,
                limit=limit,
                offset=offset,
            )
        )
        entries = [
            LeaderboardEntry(
                rank=offset + i + 1, player_rating=m.shown_rating(r.mu), **msgspec.structs.asdict(r)
            )
            for i, r in enumerate(rows)
        ]
        return Leaderboard(model=model, entries=entries)

    @get(
        "/players/{player_id:str}",
        operation_id="getPlayerRating",
        summary="A player's ratings in every model and their history in one",
        responses=error_responses("not_found"),
    )
    async def player(
        self,
        ranking: Ranking,
        player_id: FromPath[str],
        model: Model = DEFAULT_MODEL,
        limit: Annotated[
            int, QueryParameter(ge=1, le=5000, description="the newest N rated matches")
        ] = 500,
    ) -> PlayerRatings:
        model_named(model)
        if "\x00" in player_id:  # PostgreSQL text cannot hold NUL: no such player
            raise NotFound("no rating for this player")

        async def read(q: RatingQueries) -> tuple[list[RatingOut], list[ChangeOut]]:
            rows = await q.ratings(player_id)
            return rows, (await q.history(player_id, model, limit) if rows else [])

        # A player rated a moment ago may not be on the standby yet: ask the primary.
        rows, history = await ranking.lagging(read, complete=lambda got: bool(got[0]))
        if not rows:
            raise NotFound("no rating for this player")
        return PlayerRatings(
            player_id=player_id,
            name=rows[0].name,
            ratings=rows,
            history=history[::-1],  # oldest first: a chart's order
        )

    @get(
        "/distribution",
        operation_id="getRatingDistribution",
        summary="How many players fall in each rating bucket",
    )
    async def distribution(
        self,
        ranking: Ranking,
        model: Model = DEFAULT_MODEL,
        # At least 0.01: a tiny bucket made `rating / bucket` overflow in SQL (500). Every
        # rating model's values lie well within ±10⁶, so 0.01 keeps the quotient small.
        bucket: Annotated[float, QueryParameter(ge=0.01, le=10_000)] = 50.0,
        min_matches: Annotated[int, QueryParameter(ge=0)] = 0,
    ) -> Distribution:
        model_named(model)
        if not math.isfinite(bucket):  # NaN passes the bounds (every comparison is false)
            raise Invalid("bucket: must be a number from 0.01 to 10000", field="bucket")
        buckets = await ranking.lagging(lambda q: q.distribution(model, bucket, min_matches))
        return Distribution(model=model, bucket=bucket, buckets=buckets)

    @get(
        "/matches-per-day",
        operation_id="getMatchesPerDay",
        summary="Rated matches per day (UTC)",
    )
    async def matches_per_day(
        self, ranking: Ranking, days: Annotated[int, QueryParameter(ge=1, le=3650)] = 30
    ) -> list[DayCount]:
        return await ranking.lagging(lambda q: q.matches_per_day(days))

    @get(
        "/swings",
        operation_id="getLargestSwings",
        summary="The largest rating changes of single matches",
    )
    async def swings(
        self,
        ranking: Ranking,
        model: Model = DEFAULT_MODEL,
        days: Annotated[int | None, QueryParameter(ge=1, le=MAX_DAYS)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 20,
    ) -> list[Swing]:
        model_named(model)
        return await ranking.lagging(lambda q: q.swings(model, days, limit))

    @get(
        "/lag",
        operation_id="getConsumerLag",
        summary="How far the consumer is behind the log",
    )
    async def lag(self, ranking: Ranking) -> Lag:
        return await ranking.queries.lag(ranking.consumer.active)

    @post(
        "/recompute",
        operation_id="recomputeRatings",
        summary="Rebuild all ratings from the event log (operator)",
        description="Builds new tables from scratch and swaps them in; the live tables "
        "serve until then. Returns the hash of all ratings (equal for equal logs).",
        status_code=200,
        responses=error_responses("conflict", "recompute_not_permitted"),
    )
    async def recompute(self, ranking: Ranking) -> RecomputeOut:
        if ranking.recompute_lock.locked():
            raise Conflict("a recompute is already running")
        async with ranking.recompute_lock:
            try:
                digest = await recompute(ranking.engine)
            except RecomputeBusy as exc:
                raise Conflict(str(exc)) from exc
            except RecomputeNotPermitted as exc:
                raise Unavailable(str(exc), code="recompute_not_permitted") from exc
        _, rows = await ratings_hash(ranking.engine)
        return RecomputeOut(hash=digest, ratings=rows)


def _require_operator(request: ASGIConnection[Any, Any, Any, Any], settings: Settings) -> None:
    if not is_operator(request.headers.get("authorization", ""), settings.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")


@get("/", include_in_schema=False, sync_to_thread=False)
def index() -> Redirect:
    """The ranking service has one page: `/` leads to it."""
    return Redirect("/dashboard")


@get("/dashboard", tags=["service"], include_in_schema=False, media_type=MediaType.HTML)
async def dashboard() -> Response[str]:
    """The operator dashboard: public HTML; its data calls carry the operator token."""
    return page_response("dashboard.html")


@get(
    "/healthz",
    operation_id="rankingHealth",
    tags=["service"],
    summary="Liveness and database",
    responses=HEALTH_RESPONSES,
)
async def healthz(ranking: Ranking) -> Response[dict[str, str]]:
    if not await reachable(ranking.engine):
        return Response({"status": "database unreachable"}, status_code=503)
    return Response({"status": "ok"})


# --------------------------------------------------------------------------------- app


def _watch(app: Litestar, ranking: RankingService) -> None:
    """The ranking service's gauges read at each scrape: its pool, which consumers this
    instance leads, and how far each consumer's checkpoint is behind the log (two
    queries per consumer, only when scraped; NaN until a read succeeds)."""
    metrics = app_metrics(app)
    metrics.pool(ranking.engine)
    followers = {"ranking": ranking.consumer, "analysis": ranking.analysis}
    lags = {name: Backlog(0, -1, math.nan) for name in followers}

    async def refresh() -> None:
        for name, follower in followers.items():
            lags[name] = Backlog(0, -1, math.nan)
            lags[name] = await follower.backlog()

    metrics.before_scrape(refresh)
    metrics.gauge(
        "ludo_consumer_leader",
        "1 when this instance holds the consumer's lock and consumes, else 0",
        ("consumer",),
        lambda: {(name,): float(f.active) for name, f in followers.items()},
    )
    metrics.gauge(
        "ludo_consumer_events_behind",
        "Events after the consumer's checkpoint (counted up to 100,000)",
        ("consumer",),
        lambda: {
            (name,): math.nan if lag.events < 0 else float(lag.events) for name, lag in lags.items()
        },
    )
    metrics.gauge(
        "ludo_consumer_matches_behind",
        "Match ends (MatchFinished) among those events: matches waiting for the consumer",
        ("consumer",),
        lambda: {
            (name,): math.nan if lag.events < 0 else float(lag.of_type)
            for name, lag in lags.items()
        },
    )
    metrics.gauge(
        "ludo_consumer_seconds_behind",
        "Age of the oldest event after the consumer's checkpoint (0 when caught up)",
        ("consumer",),
        lambda: {(name,): lag.seconds for name, lag in lags.items()},
    )


def create_app(
    settings: Settings, engine: AsyncEngine | None = None, *, consume: bool = True
) -> Litestar:
    """The ranking service. With `engine`, it is used (and not disposed)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            own = await service_engine(stack, settings, engine)
            app.state.limits.share_in(stack, own)  # the budgets shared by every instance
            reads = service_read_route(stack, settings, own, database_unavailable)
            counters = app_metrics(app).counters
            ranking = RankingService(own, settings, reads, counters)
            app.state.ranking = ranking
            stack.push_async_callback(ranking.live.close)
            beat = InstanceBeat(own, "ranking", counters)
            run_in_background(stack, beat.run(), "ludo-instance-beat")
            _watch(app, ranking)
            if consume:
                run_in_background(stack, ranking.consumer.run(), "ludo-ranking-consumer")
                stack.callback(ranking.analysis.close)
                run_in_background(stack, ranking.analysis.run(), "ludo-analysis-consumer")
            yield

    openapi = openapi_config(
        "Ludo ranking service",
        {
            "operator": SecurityScheme(
                type="http", scheme="bearer", description="LUDO_OPERATOR_TOKEN"
            )
        },
    )
    return service_app(
        settings,
        route_handlers=[
            RankingController,
            PublicRatingsController,
            AnalysisController,
            OperatorReportsController,
            *analysis_handlers(_operator_guard),
            *live_handlers(_operator_guard),
            healthz,
            dashboard,
            index,
        ],
        dependencies={"ranking": provide_ranking},
        lifespan=[lifespan],
        openapi=openapi,
    )


def app_from_env() -> Litestar:
    """`uvicorn --factory services.ranking.app:app_from_env`."""
    return serve_from_env(create_app)
