"""The match service as a Litestar app: `create_app(settings, engine=None)`, its composition
root, the one module that imports every capability (docs/design.md#where-things-go).

Everything the handlers need is injected: the lifespan builds the engine (unless one is
given), the standby's read route (`LUDO_DATABASE_READ_URL`), the event store and the parts
(`MatchParts`: each built once, the live hub among them), and starts the background tasks
(the deadline scheduler when `LUDO_SCHEDULER` is on, the pairing and the arenas' runner
when `LUDO_PAIRING` is). A route or socket names the parts it needs as parameters, each a
Litestar dependency of the same name (`parties`, `matches`, `commands`, ...: `PARTS`),
never the whole. No module-level state. Run it with
`uvicorn --factory services.match.app:app_from_env`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog
from litestar import Litestar
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.openapi.spec import SecurityScheme
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.arenas.routes import TournamentsController
from services.match.arenas.socket import arena_socket
from services.match.live_hub import LiveHub
from services.match.lobby.socket import lobby_socket
from services.match.moderation.operator_routes import OperatorNowController
from services.match.moderation.routes import (
    MyStandingController,
    ReportsController,
    ReputationController,
)
from services.match.pages.routes import (
    arena_page,
    arenas_page,
    healthz,
    index,
    leaderboard_page,
    match_page,
    not_found,
    party_page,
    player_page,
    rules_page,
)
from services.match.parties.routes import PartiesController
from services.match.parties.socket import party_socket
from services.match.parts import MatchParts
from services.match.play.routes import MatchesController, RulesController
from services.match.play.socket import match_socket
from services.match.players.routes import PlayersController
from services.match.pools.routes import PoolsController
from services.match.ratings.routes import ratings_proxy, ratings_proxy_lifespan
from services.match.replays.routes import ReplaysController, dispute_report_page, replay_viewer_page
from services.shared.background import run_in_background
from services.shared.database import service_engine, service_read_route
from services.shared.errors import database_unavailable
from services.shared.eventstore import EventStore
from services.shared.instance_stats import InstanceBeat
from services.shared.metrics import app_metrics
from services.shared.openapi_docs import openapi_config
from services.shared.service_app import serve_from_env, service_app
from services.shared.settings import Settings

__all__ = ["app_from_env", "create_app"]

_log = structlog.get_logger("services.match")


# The parts a handler may name, each a dependency of the same name (`MatchParts`' attributes).
PARTS = (
    "engine",
    "store",
    "settings",
    "guests",
    "matches",
    "deadlines",
    "parties",
    "lobby",
    "pools",
    "arenas",
    "hub",
    "commands",
    "presence",
    "stamps",
    "replays",
    "reports",
    "site_now",
)


def _provide(name: str) -> Provide:
    """The dependency `name`: that part of the app's `MatchParts`."""

    def part(scope: Scope) -> Any:
        # From the ASGI scope, not as `state: State`: for that Litestar builds a new State,
        # a copy of the app's, on every request (a hundredth of a command's CPU).
        return getattr(Litestar.from_scope(scope).state.parts, name)

    return Provide(part, sync_to_thread=False)


def _watch(app: Litestar, engine: AsyncEngine, hub: LiveHub) -> None:
    """The match service's gauges read at each scrape: its pool, and the matches and
    parties it serves live (process-local: no query, so an idle database stays idle)."""
    metrics = app_metrics(app)
    metrics.pool(engine)

    def followed() -> dict[tuple[str, ...], float]:
        counts = hub.followed()
        return {(kind,): float(counts.get(kind, 0)) for kind in ("match", "party")}

    metrics.gauge(
        "ludo_live_streams",
        "Matches and parties this process feeds live sockets from (in progress here)",
        ("kind",),
        followed,
    )


def create_app(settings: Settings, engine: AsyncEngine | None = None) -> Litestar:
    """The match service. With `engine`, it is used (and not disposed); otherwise the
    lifespan opens the database of `settings` and closes it on shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            own = await service_engine(stack, settings, engine)
            app.state.limits.share_in(stack, own)  # the budgets shared by every instance
            counters = app_metrics(app).counters
            store = EventStore(
                own,
                group_commit=settings.group_commit,
                counters=counters,
                connect_patience=settings.db_connect_patience,
            )
            stack.push_async_callback(store.close)
            reads = service_read_route(stack, settings, own, database_unavailable)
            parts = MatchParts(own, store, settings, reads, counters)
            app.state.parts = parts
            await parts.hub.start()
            stack.push_async_callback(parts.hub.stop)
            _watch(app, own, parts.hub)
            if settings.scheduler:
                run_in_background(stack, parts.scheduler.run(), "ludo-scheduler")
            run_in_background(stack, parts.lobby.run(), "ludo-lobby-heartbeat")
            beat = InstanceBeat(own, "match", counters)
            run_in_background(stack, beat.run(), "ludo-instance-beat")
            if settings.pairing:
                run_in_background(stack, parts.pools.run(), "ludo-pairing")
                run_in_background(stack, parts.arenas.run(), "ludo-arenas")
            yield

    openapi = openapi_config(
        "Ludo match service",
        {
            "bearer": SecurityScheme(type="http", scheme="bearer", description="the guest token"),
            "operator": SecurityScheme(
                type="http", scheme="bearer", description="LUDO_OPERATOR_TOKEN"
            ),
        },
    )
    handlers: list[Any] = [
        PlayersController,
        PartiesController,
        PoolsController,
        TournamentsController,
        MatchesController,
        RulesController,
        ReplaysController,
        replay_viewer_page,
        dispute_report_page,
        match_socket,
        party_socket,
        lobby_socket,
        arena_socket,
        index,
        party_page,
        match_page,
        leaderboard_page,
        rules_page,
        player_page,
        arenas_page,
        arena_page,
        healthz,
        ratings_proxy,
        ReportsController,
        OperatorNowController,
        MyStandingController,
        ReputationController,
    ]
    return service_app(
        settings,
        route_handlers=handlers,
        dependencies={name: _provide(name) for name in PARTS},
        lifespan=[lifespan, ratings_proxy_lifespan(settings)],
        openapi=openapi,
        errors={NotFoundException: not_found},
    )


def app_from_env() -> Litestar:
    """`uvicorn --factory services.match.app:app_from_env`."""
    return serve_from_env(create_app)
