"""The ranking service as a Litestar app: `create_app(settings, engine=None)`.

The lifespan opens the database (unless an engine is given), and runs the
`RankingConsumer` as a background task (`consume=False` leaves it off, for tests that
drive it themselves). Several instances may run: the consumer's advisory lock lets one
consume while the others stand by; all of them serve reads.

Run it with `uvicorn --factory services.ranking.app:app_from_env`.

API (`/api/ranking`, OpenAPI at `/schema`), operator only (`Authorization: Bearer
$LUDO_OPERATOR_TOKEN`): leaderboard, a player's ratings and history, rating distribution,
matches per day, largest swings, consumer lag, and `POST /api/ranking/recompute`.
Public, no token: `/api/ratings/*` (services/ranking/public.py), the player ratings that
people see. `GET /dashboard` is the operator dashboard (`dashboard.html`: one
self-contained page, SVG charts drawn by its inline script from these endpoints; it asks
for the token).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from datetime import date, datetime
from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, Litestar, MediaType, Response, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import CacheControlHeader
from litestar.di import NamedDependency, Provide
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware import DefineMiddleware
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import SecurityScheme
from litestar.params import FromPath, FromQuery, QueryParameter
from litestar.response import Redirect
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Conflict, Invalid, NotFound, Unauthenticated, Unavailable
from domain.streams import match_id_of
from services.ranking.consumer import (
    CHECKPOINT,
    RankingConsumer,
    RecomputeBusy,
    RecomputeNotPermitted,
    ratings_hash,
    read_checkpoint,
    recompute,
)
from services.ranking.public import PublicRatingsController
from services.ranking.ratings import DEFAULT_MODEL, MODELS
from services.shared.background import run_in_background
from services.shared.bodies import check_body
from services.shared.database import service_engine
from services.shared.errors import (
    HEALTH_RESPONSES,
    ErrorBody,
    error_responses,
    exception_handlers,
)
from services.shared.eventstore import EventStore
from services.shared.limits import Limits, limits_middleware
from services.shared.logging import configure_logging, request_logging
from services.shared.openapi_docs import openapi_config, truthful_errors
from services.shared.operator import is_operator
from services.shared.pages import PAGE_HEADERS, inline_page
from services.shared.serving import settle_heap
from services.shared.settings import Settings

__all__ = ["RankingApi", "app_from_env", "create_app"]


class RankingApi:
    """What the handlers need: the engine, the store, the consumer, the settings."""

    def __init__(self, engine: AsyncEngine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.store = EventStore(engine)
        self.consumer = RankingConsumer(engine, self.store, poll=settings.ranking_poll)
        self.recompute_lock = asyncio.Lock()


Api = NamedDependency[RankingApi]


def _api(scope: Scope) -> RankingApi:
    # From the ASGI scope, not as `state: State`: for that Litestar builds a new State,
    # a copy of the app's, on every request (a hundredth of a command's CPU).
    api: RankingApi = Litestar.from_scope(scope).state.ranking
    return api


# --------------------------------------------------------------------------- responses


class RatingOut(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    model: str
    rating: float
    mu: float
    sigma: float
    provisional: bool
    matches: int
    last_match_at: datetime


class LeaderboardEntry(RatingOut, kw_only=True):
    rank: int


class Leaderboard(msgspec.Struct, kw_only=True):
    model: str
    entries: list[LeaderboardEntry]


class ChangeOut(msgspec.Struct, kw_only=True):
    match_id: str
    model: str
    place: int
    players: int
    left_match: bool
    rating_before: float
    rating_after: float
    delta: float
    mu_before: float
    mu_after: float
    sigma_before: float
    sigma_after: float
    finished_at: datetime
    library: str
    params: dict[str, Any]


class PlayerRatings(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    ratings: list[RatingOut]
    history: list[ChangeOut]


class Bucket(msgspec.Struct, kw_only=True):
    low: float
    high: float
    players: int


class Distribution(msgspec.Struct, kw_only=True):
    model: str
    bucket: float
    buckets: list[Bucket]


class DayCount(msgspec.Struct, kw_only=True):
    day: date
    matches: int


class Swing(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    match_id: str
    model: str
    rating_before: float
    rating_after: float
    delta: float
    finished_at: datetime


class Lag(msgspec.Struct, kw_only=True):
    checkpoint_tx: int
    checkpoint_position: int
    head_position: int
    events_behind: int
    seconds_behind: float
    consuming_here: bool


class RecomputeOut(msgspec.Struct, kw_only=True):
    hash: str
    ratings: int


# ---------------------------------------------------------------------------- handlers

Model = Annotated[
    str,
    QueryParameter(description=f"rating model: {', '.join(MODELS)}"),
]


def _model(model: str) -> str:
    if model not in MODELS:
        raise Invalid(f"model: one of {', '.join(MODELS)}", field="model")
    return model


# Bounds of query values that go into SQL: beyond them PostgreSQL's interval or bigint
# arithmetic overflows (a 500), and no real question needs them.
MAX_DAYS = 36_500  # a century
MAX_OFFSET = 1_000_000_000

_RATING_COLUMNS = (
    "r.player_id, r.name, r.model, r.rating, r.mu, r.sigma, r.provisional, r.matches, "
    "r.last_match_at"
)


def _rating(row: Any) -> RatingOut:
    return RatingOut(
        player_id=row.player_id,
        name=row.name,
        model=row.model,
        rating=row.rating,
        mu=row.mu,
        sigma=row.sigma,
        provisional=row.provisional,
        matches=row.matches,
        last_match_at=row.last_match_at,
    )


def _operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """Every `/api/ranking` route is the operator's: it needs the operator token."""
    api: RankingApi = connection.app.state.ranking
    _require_operator(connection, api.settings)


_NOT_PERMITTED = ResponseSpec(
    data_container=ErrorBody,
    description="The service's database role may not create or rename the rating tables "
    "(`recompute_not_permitted`): run `ludo ranking recompute` as the migration owner",
    generate_examples=False,
)


class RankingController(Controller):
    path = "/api/ranking"
    tags = ("ranking",)
    guards = [_operator_guard]  # noqa: RUF012 - Litestar's class attribute
    security = [{"operator": []}]  # noqa: RUF012 - Litestar's class attribute

    @get(
        "/leaderboard",
        operation_id="getLeaderboard",
        summary="Players by displayed rating",
        responses=error_responses(401, 422),
    )
    async def leaderboard(
        self,
        api: Api,
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
        model = _model(model)
        query = (
            f"SELECT {_RATING_COLUMNS} FROM ratings r "
            "WHERE r.model = :m AND r.matches >= :min "
            "AND (CAST(:days AS integer) IS NULL OR "
            "r.last_match_at >= now() - make_interval(days => CAST(:days AS integer))) "
            "AND (:prov OR NOT r.provisional) "
            "ORDER BY r.rating DESC, r.player_id LIMIT :limit OFFSET :offset"
        )
        params = {
            "m": model,
            "min": min_matches,
            "days": active_days,
            "prov": include_provisional,
            "limit": limit,
            "offset": offset,
        }
        async with api.engine.connect() as conn:
            rows = (await conn.execute(sa.text(query), params)).all()
        entries = [
            LeaderboardEntry(rank=offset + i + 1, **msgspec.structs.asdict(_rating(r)))
            for i, r in enumerate(rows)
        ]
        return Leaderboard(model=model, entries=entries)

    @get(
        "/players/{player_id:str}",
        operation_id="getPlayerRating",
        summary="A player's ratings in every model and their history in one",
        responses=error_responses(401, 404, 422),
    )
    async def player(
        self,
        api: Api,
        player_id: FromPath[str],
        model: Model = DEFAULT_MODEL,
        limit: Annotated[
            int, QueryParameter(ge=1, le=5000, description="the newest N rated matches")
        ] = 500,
    ) -> PlayerRatings:
        model = _model(model)
        if "\x00" in player_id:  # PostgreSQL text cannot hold NUL: no such player
            raise NotFound("no rating for this player")
        async with api.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        f"SELECT {_RATING_COLUMNS} FROM ratings r "
                        "WHERE r.player_id = :p ORDER BY r.model"
                    ),
                    {"p": player_id},
                )
            ).all()
            history = (
                await conn.execute(
                    sa.text(
                        # The newest `limit`, returned oldest first (a chart's order).
                        "SELECT * FROM (SELECT * FROM rating_changes WHERE player_id = :p "
                        "AND model = :m ORDER BY position DESC LIMIT :limit) newest "
                        "ORDER BY position"
                    ),
                    {"p": player_id, "m": model, "limit": limit},
                )
            ).all()
        if not rows:
            raise NotFound("no rating for this player")
        return PlayerRatings(
            player_id=player_id,
            name=rows[0].name,
            ratings=[_rating(r) for r in rows],
            history=[
                ChangeOut(
                    match_id=match_id_of(h.match_stream),
                    model=h.model,
                    place=h.place,
                    players=h.players,
                    left_match=h.left_match,
                    rating_before=h.rating_before,
                    rating_after=h.rating_after,
                    delta=h.rating_after - h.rating_before,
                    mu_before=h.mu_before,
                    mu_after=h.mu_after,
                    sigma_before=h.sigma_before,
                    sigma_after=h.sigma_after,
                    finished_at=h.finished_at,
                    library=h.library,
                    params=h.params,
                )
                for h in history
            ],
        )

    @get(
        "/distribution",
        operation_id="getRatingDistribution",
        summary="How many players fall in each rating bucket",
        responses=error_responses(401, 422),
    )
    async def distribution(
        self,
        api: Api,
        model: Model = DEFAULT_MODEL,
        # At least 0.01: a tiny bucket made `rating / bucket` overflow in SQL (500). Every
        # rating model's values lie well within ±10⁶, so 0.01 keeps the quotient small.
        bucket: Annotated[float, QueryParameter(ge=0.01, le=10_000)] = 50.0,
        min_matches: Annotated[int, QueryParameter(ge=0)] = 0,
    ) -> Distribution:
        model = _model(model)
        if not math.isfinite(bucket):  # NaN passes the bounds (every comparison is false)
            raise Invalid("bucket: must be a number from 0.01 to 10000", field="bucket")
        async with api.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT floor(rating / :b) AS k, count(*) AS n FROM ratings "
                        "WHERE model = :m AND matches >= :min GROUP BY k ORDER BY k"
                    ),
                    {"b": bucket, "m": model, "min": min_matches},
                )
            ).all()
        return Distribution(
            model=model,
            bucket=bucket,
            buckets=[Bucket(low=r.k * bucket, high=(r.k + 1) * bucket, players=r.n) for r in rows],
        )

    @get(
        "/matches-per-day",
        operation_id="getMatchesPerDay",
        summary="Rated matches per day (UTC)",
        responses=error_responses(401, 422),
    )
    async def matches_per_day(
        self, api: Api, days: Annotated[int, QueryParameter(ge=1, le=3650)] = 30
    ) -> list[DayCount]:
        async with api.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT (finished_at AT TIME ZONE 'UTC')::date AS day, "
                        "count(DISTINCT match_stream) AS n FROM rating_changes "
                        "WHERE model = :m AND finished_at >= "
                        "(now() AT TIME ZONE 'UTC')::date - :days + 1 "
                        "GROUP BY day ORDER BY day"
                    ),
                    {"m": DEFAULT_MODEL, "days": days},
                )
            ).all()
        return [DayCount(day=r.day, matches=r.n) for r in rows]

    @get(
        "/swings",
        operation_id="getLargestSwings",
        summary="The largest rating changes of single matches",
        responses=error_responses(401, 422),
    )
    async def swings(
        self,
        api: Api,
        model: Model = DEFAULT_MODEL,
        days: Annotated[int | None, QueryParameter(ge=1, le=MAX_DAYS)] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 20,
    ) -> list[Swing]:
        model = _model(model)
        async with api.engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT c.*, r.name FROM rating_changes c JOIN ratings r "
                        "ON r.model = c.model AND r.player_id = c.player_id "
                        "WHERE c.model = :m AND (CAST(:days AS integer) IS NULL OR "
                        "c.finished_at >= now() - make_interval(days => CAST(:days AS integer))) "
                        "ORDER BY abs(c.rating_after - c.rating_before) "
                        "DESC, c.position, c.player_id LIMIT :limit"
                    ),
                    {"m": model, "days": days, "limit": limit},
                )
            ).all()
        return [
            Swing(
                player_id=r.player_id,
                name=r.name,
                match_id=match_id_of(r.match_stream),
                model=r.model,
                rating_before=r.rating_before,
                rating_after=r.rating_after,
                delta=r.rating_after - r.rating_before,
                finished_at=r.finished_at,
            )
            for r in rows
        ]

    @get(
        "/lag",
        operation_id="getConsumerLag",
        summary="How far the consumer is behind the log",
        responses=error_responses(401),
    )
    async def lag(self, api: Api) -> Lag:
        async with api.engine.connect() as conn:
            cursor = await read_checkpoint(conn, CHECKPOINT)
            await conn.commit()
            head = await conn.scalar(
                sa.text("SELECT coalesce(max(global_position), 0) FROM events")
            )
            behind = (
                await conn.execute(
                    sa.text(
                        "SELECT count(*) AS n, min(recorded_at) AS oldest, "
                        "extract(epoch FROM now() - min(recorded_at)) AS secs FROM ("
                        "SELECT recorded_at FROM events WHERE (tx, global_position) > "
                        "(CAST(CAST(:tx AS text) AS xid8), :p) LIMIT 100000) AS pending"
                    ),
                    {"tx": cursor.tx, "p": cursor.position},
                )
            ).one()
        return Lag(
            checkpoint_tx=cursor.tx,
            checkpoint_position=cursor.position,
            head_position=int(head or 0),
            events_behind=int(behind.n),
            seconds_behind=float(behind.secs or 0.0),
            consuming_here=api.consumer.active,
        )

    @post(
        "/recompute",
        operation_id="recomputeRatings",
        summary="Rebuild all ratings from the event log (operator)",
        description="Builds new tables from scratch and swaps them in; the live tables "
        "serve until then. Returns the hash of all ratings (equal for equal logs).",
        status_code=200,
        responses={**error_responses(400, 401, 409, 413, 415, 422), 503: _NOT_PERMITTED},
    )
    async def recompute(self, api: Api) -> RecomputeOut:
        if api.recompute_lock.locked():
            raise Conflict("a recompute is already running")
        async with api.recompute_lock:
            try:
                digest = await recompute(api.engine)
            except RecomputeBusy as exc:
                raise Conflict(str(exc)) from exc
            except RecomputeNotPermitted as exc:
                raise Unavailable(str(exc), code="recompute_not_permitted") from exc
        _, rows = await ratings_hash(api.engine)
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
    html, csp = inline_page("services.ranking", "dashboard.html")
    return Response(
        html,
        media_type=MediaType.HTML,
        headers={"Content-Security-Policy": csp, **PAGE_HEADERS},
    )


@get(
    "/healthz",
    operation_id="rankingHealth",
    tags=["service"],
    summary="Liveness and database",
    responses=HEALTH_RESPONSES,
)
async def healthz(api: Api) -> Response[dict[str, str]]:
    try:
        async with api.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except Exception:
        return Response({"status": "database unreachable"}, status_code=503)
    return Response({"status": "ok"})


# --------------------------------------------------------------------------------- app


def create_app(
    settings: Settings, engine: AsyncEngine | None = None, *, consume: bool = True
) -> Litestar:
    """The ranking service. With `engine`, it is used (and not disposed)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            own = await service_engine(stack, settings, engine)
            api = RankingApi(own, settings)
            app.state.ranking = api
            if consume:
                run_in_background(stack, api.consumer.run(), "ludo-ranking-consumer")
            yield

    openapi = openapi_config(
        "Ludo ranking service",
        {
            "operator": SecurityScheme(
                type="http", scheme="bearer", description="LUDO_OPERATOR_TOKEN"
            )
        },
    )
    limits = Limits(settings)  # per-client budgets (services/shared/limits.py)
    app = Litestar(
        route_handlers=[RankingController, PublicRatingsController, healthz, dashboard, index],
        dependencies={"api": Provide(_api, sync_to_thread=False)},
        exception_handlers=exception_handlers,
        before_request=check_body,
        # The 413 its operations declare (as the match service's `MAX_BODY`).
        request_max_body_size=16 * 1024,
        lifespan=[lifespan],
        openapi_config=openapi,
        # Responses are live state, and some carry secrets (tokens, ratings for operators): no
        # browser or proxy may keep them. Pages set the same in their own headers.
        cache_control=CacheControlHeader(no_store=True),
        middleware=[
            DefineMiddleware(request_logging, slow_ms=settings.slow_request_ms),
            DefineMiddleware(limits_middleware, limits=limits),
        ],
        logging_config=None,
    )
    app.state.limits = limits
    truthful_errors(app)
    return app


def app_from_env() -> Litestar:
    """`uvicorn --factory services.ranking.app:app_from_env`."""
    settings = Settings.from_env()
    configure_logging(settings)
    app = create_app(settings)
    app.on_startup.append(settle_heap)  # a serving process: its start-up heap is for life
    return app
