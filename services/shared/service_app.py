"""What both services' Litestar apps are made of besides their routes (`service_app`), and
how a serving process makes one from its environment (`serve_from_env`).

Both services answer the same way at the edge: request bodies checked and capped
(`MAX_BODY`, the 413 their operations declare), errors as the JSON of
`services.shared.errors`, per-client budgets (`Limits`), one log line per request, each
request timed into the Prometheus metrics and `GET /metrics` (`services.shared.metrics`),
the front-end files at `GET /static/{path}` (`services.shared.pages`), and no response
kept by a browser or proxy (the front-end files: none kept unchecked). Written once here
so the two cannot drift."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from litestar import Litestar
from litestar.datastructures import CacheControlHeader
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.types import ExceptionHandlersMap, LifespanHook

from services.shared.bodies import check_body
from services.shared.errors import count_database_error, exception_handlers
from services.shared.limits import Limits, limits_middleware
from services.shared.logging import configure_logging
from services.shared.metrics import AppMetrics, metrics_endpoint
from services.shared.openapi_docs import truthful_errors
from services.shared.pages import static_route
from services.shared.request_middleware import request_middleware
from services.shared.serving import settle_heap
from services.shared.settings import Settings

__all__ = ["MAX_BODY", "serve_from_env", "service_app"]

MAX_BODY = 16 * 1024  # bytes of a request body, at most (413 past it)


def service_app(
    settings: Settings,
    *,
    route_handlers: Sequence[Any],
    dependencies: Mapping[str, Any],
    lifespan: Sequence[Any],
    openapi: OpenAPIConfig,
    errors: ExceptionHandlersMap | None = None,
) -> Litestar:
    """A service's app: its routes, dependencies, lifespan and OpenAPI document, with the
    edge both services share (`errors`: handlers beside the shared ones)."""
    limits = Limits(settings)  # per-client budgets (services/shared/limits.py)
    app = Litestar(
        route_handlers=[*route_handlers, metrics_endpoint, static_route],
        dependencies=dict(dependencies),
        exception_handlers={**exception_handlers, **(errors or {})},
        lifespan=list(lifespan),
        openapi_config=openapi,
        request_max_body_size=MAX_BODY,
        before_request=check_body,
        # Responses are live state, and some carry secrets (a new guest's token, ratings
        # for operators): no browser or proxy may keep them. Pages set the same in their
        # own headers.
        cache_control=CacheControlHeader(no_store=True),
        middleware=[
            # One layer logs and times each request (services/shared/request_middleware.py).
            DefineMiddleware(request_middleware, slow_ms=settings.slow_request_ms),
            DefineMiddleware(limits_middleware, limits=limits),
        ],
        logging_config=None,
    )
    app.state.limits = limits
    app.state.metrics = AppMetrics(settings.operator_token, count_database_error)
    truthful_errors(app)
    return app


def serve_from_env(create_app: Callable[[Settings], Litestar]) -> Litestar:
    """The app of a serving process (uvicorn's `--factory`): settings from the
    environment, its logging configured, and its start-up heap settled for life."""
    settings = Settings.from_env()
    configure_logging(settings)
    app = create_app(settings)
    startup: LifespanHook = settle_heap
    app.on_startup.append(startup)
    return app
