"""The ranking service as a Litestar app: `create_app(settings, engine=None)`, its
composition root.

The lifespan opens the database (unless an engine is given) and the standby's read route
(`LUDO_DATABASE_READ_URL`: the public, analysis and dashboard reads go there; docs/
scaling.md, Reads from a standby), builds the service's parts over them (`RankingParts`),
and runs the `RankingConsumer` and the `AnalysisConsumer` as background tasks
(`consume=False` leaves them off, for tests that drive them themselves). Several instances
may run: each consumer's lease lets one consume while the others stand by; all of them
serve reads.

Run it with `uvicorn --factory services.ranking.app:app_from_env`.

One folder per capability, each with its routes
(docs/design.md#where-things-go-in-the-ranking-service): `ratings/` (the operator API under
`/api/ranking`: leaderboard, a player's ratings and history, distribution, matches per day,
swings, consumer lag, `POST /api/ranking/recompute`; and the public `/api/ratings/*`, the
player ratings people see), `analysis/`, `moderation/` (the report queue) and `dashboard/`
(`GET /dashboard`, the operator's page, and its live view). Operator routes need
`Authorization: Bearer $LUDO_OPERATOR_TOKEN` (services/ranking/guards.py). OpenAPI at
`/schema`. Each handler takes only the parts it uses, as dependencies named after them
(`DEPENDENCIES`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, Response, get
from litestar.di import NamedDependency, Provide
from litestar.openapi.spec import SecurityScheme
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.analysis.consumer import AnalysisConsumer
from services.ranking.analysis.routes import AnalysisController, analysis_handlers
from services.ranking.dashboard.routes import LiveController, dashboard, index
from services.ranking.dashboard.service import LiveView
from services.ranking.moderation.routes import OperatorReportsController
from services.ranking.ratings.consumer import CHECKPOINT, RankingConsumer
from services.ranking.ratings.queries import RatingQueries
from services.ranking.ratings.routes import PublicRatingsController, RankingController
from services.ranking.ratings.service import Recomputer
from services.shared.background import run_in_background
from services.shared.database import (
    ReadRoute,
    RoutedReads,
    reachable,
    service_engine,
    service_read_route,
)
from services.shared.errors import HEALTH_RESPONSES, database_unavailable
from services.shared.eventstore import Backlog, EventStore
from services.shared.instance_stats import InstanceBeat
from services.shared.metrics import UNCOUNTED, Counters, app_metrics
from services.shared.openapi_docs import openapi_config
from services.shared.reports import Reports
from services.shared.service_app import serve_from_env, service_app
from services.shared.settings import Settings

__all__ = ["DEPENDENCIES", "RankingParts", "app_from_env", "create_app"]


class RankingParts:
    """The ranking service's parts over one engine and one event store, built once by the
    lifespan (`app.state.ranking`):

    - `consumer`: follows the log and keeps the ratings (services/ranking/ratings/
      consumer.py); `analysis`: analyses every finished match (services/ranking/analysis/
      consumer.py);
    - `queries`: the ratings reads on the primary (services/ranking/ratings/queries.py);
    - `reads` / `lagging`: where the reads that tolerate lag go (the standby of
      `LUDO_DATABASE_READ_URL` while it answers, else the primary: services/shared/
      database.py `ReadRoute`), and `queries` built over each of its engines;
    - `reports`: the operator's queue of reports and its decisions (services/shared/
      reports.py);
    - `recomputer`: one recompute at a time in this process (services/ranking/ratings/
      service.py);
    - `live`: the operator's live view (services/ranking/dashboard/service.py).

    No handler sees this object: each takes the parts it uses (`DEPENDENCIES`)."""

    def __init__(
        self,
        engine: AsyncEngine,
        settings: Settings,
        reads: ReadRoute | None = None,
        counters: Counters = UNCOUNTED,
    ) -> None:
        self.engine = engine
        # `counters`: the app's, where its consumers count their failures.
        self.store = EventStore(engine, counters=counters)
        self.consumer = RankingConsumer(engine, self.store, poll=settings.ranking_poll)
        self.analysis = AnalysisConsumer(engine, self.store, poll=settings.ranking_poll)
        self.queries = RatingQueries(engine, self.store, CHECKPOINT)
        self.reads = reads or ReadRoute(engine)
        self.lagging: RoutedReads[RatingQueries] = self.reads.parts(
            lambda e: RatingQueries(e, EventStore(e), CHECKPOINT), primary=self.queries
        )
        self.reports = Reports(engine, self.store)
        self.recomputer = Recomputer(engine)
        self.live = LiveView(
            engine, self.store, settings, (self.consumer, self.analysis), self.queries
        )


def _part(name: str) -> Provide:
    """The dependency `name`: that part of the app's `RankingParts`."""

    def provide(scope: Scope) -> Any:
        # From the ASGI scope, not as `state: State`: for that Litestar builds a new State,
        # a copy of the app's, on every request (a hundredth of a command's CPU).
        return getattr(Litestar.from_scope(scope).state.ranking, name)

    return Provide(provide, sync_to_thread=False)


# The dependencies the routes take, each one part.
PARTS = ("engine", "queries", "lagging", "reads", "consumer", "recomputer", "reports", "live")
DEPENDENCIES = {name: _part(name) for name in PARTS}


@get(
    "/healthz",
    operation_id="rankingHealth",
    tags=["service"],
    summary="Liveness and database",
    responses=HEALTH_RESPONSES,
)
async def healthz(engine: NamedDependency[AsyncEngine]) -> Response[dict[str, str]]:
    if not await reachable(engine):
        return Response({"status": "database unreachable"}, status_code=503)
    return Response({"status": "ok"})


# --------------------------------------------------------------------------------- app


def _watch(app: Litestar, ranking: RankingParts) -> None:
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
            ranking = RankingParts(own, settings, reads, counters)
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
    app = service_app(
        settings,
        route_handlers=[
            RankingController,
            PublicRatingsController,
            AnalysisController,
            OperatorReportsController,
            *analysis_handlers(),
            LiveController,
            healthz,
            dashboard,
            index,
        ],
        dependencies=DEPENDENCIES,
        lifespan=[lifespan],
        openapi=openapi,
    )
    app.state.settings = settings  # the operator guard's token (services/ranking/guards.py)
    return app


def app_from_env() -> Litestar:
    """`uvicorn --factory services.ranking.app:app_from_env`."""
    return serve_from_env(create_app)
