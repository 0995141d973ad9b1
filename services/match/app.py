"""The match service as a Litestar app: `create_app(settings, engine=None)`.

Everything the handlers need is injected: the lifespan builds the engine (unless one is
given), the event store, the `MatchService` and, when `LUDO_SCHEDULER` is on, the deadline
worker task; handlers receive the service through the `service` dependency. No module-level
state. Run it with `uvicorn --factory services.match.app:app_from_env`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog
from litestar import Litestar
from litestar.datastructures import CacheControlHeader
from litestar.di import Provide
from litestar.exceptions import NotFoundException
from litestar.middleware import DefineMiddleware
from litestar.openapi.spec import SecurityScheme
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.live_hub import LiveHub
from services.match.match_socket import match_socket
from services.match.matches import MatchesController, RulesController
from services.match.parties import PartiesController
from services.match.party_socket import lobby_socket, party_socket
from services.match.players import PlayersController
from services.match.ratings_proxy import ratings_proxy, ratings_proxy_lifespan
from services.match.replays_web import (
    ReplaysController,
    dispute_report_page,
    replay_viewer_page,
)
from services.match.scheduler import Scheduler
from services.match.service import MatchService
from services.match.site import (
    healthz,
    index,
    leaderboard_page,
    match_page,
    not_found,
    party_page,
    player_page,
    rules_page,
)
from services.shared.background import run_in_background
from services.shared.bodies import check_body
from services.shared.database import service_engine
from services.shared.errors import exception_handlers
from services.shared.eventstore import EventStore
from services.shared.limits import Limits, limits_middleware
from services.shared.logging import configure_logging, request_logging
from services.shared.openapi_docs import openapi_config, truthful_errors
from services.shared.serving import settle_heap
from services.shared.settings import Settings

__all__ = ["MAX_BODY", "app_from_env", "create_app"]

MAX_BODY = 16 * 1024

_log = structlog.get_logger("services.match")


def _service(scope: Scope) -> MatchService:
    # From the ASGI scope, not as `state: State`: for that Litestar builds a new State,
    # a copy of the app's, on every request (a hundredth of a command's CPU).
    service: MatchService = Litestar.from_scope(scope).state.service
    return service


def create_app(settings: Settings, engine: AsyncEngine | None = None) -> Litestar:
    """The match service. With `engine`, it is used (and not disposed); otherwise the
    lifespan opens the database of `settings` and closes it on shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            own = await service_engine(stack, settings, engine)
            store = EventStore(own, group_commit=settings.group_commit)
            stack.push_async_callback(store.close)
            service = MatchService(own, store, settings)
            app.state.service = service
            reads = service.matches
            hub = LiveHub(
                store,
                on_hint=lambda note: reads.heard(note.stream_id, note.version),
                on_listening=reads.listening,
            )
            service.commands.on_appended = hub.committed
            await hub.start()
            stack.push_async_callback(hub.stop)
            app.state.hub = hub
            app.state.scheduler = Scheduler(service, own, settings.scheduler_poll)
            if settings.scheduler:
                run_in_background(stack, app.state.scheduler.run(), "ludo-scheduler")
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
        MatchesController,
        RulesController,
        ReplaysController,
        replay_viewer_page,
        dispute_report_page,
        match_socket,
        party_socket,
        lobby_socket,
        index,
        party_page,
        match_page,
        leaderboard_page,
        rules_page,
        player_page,
        healthz,
        ratings_proxy,
    ]
    limits = Limits(settings)  # per-client budgets (services/shared/limits.py)
    app = Litestar(
        route_handlers=handlers,
        dependencies={"service": Provide(_service, sync_to_thread=False)},
        exception_handlers={**exception_handlers, NotFoundException: not_found},
        lifespan=[lifespan, ratings_proxy_lifespan(settings)],
        openapi_config=openapi,
        request_max_body_size=MAX_BODY,
        before_request=check_body,
        # Responses are live state, and some carry secrets (a new guest's token): no
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
    """`uvicorn --factory services.match.app:app_from_env`."""
    settings = Settings.from_env()
    configure_logging(settings)
    app = create_app(settings)
    app.on_startup.append(settle_heap)  # a serving process: its start-up heap is for life
    return app
