"""Prometheus metrics of both services: the metric objects, the request middleware, the
pool that times its checkouts, and `GET /metrics` (docs/operations.md, Metrics).

Two kinds of metric:

- the process's own counters and histograms (requests, commands, appends, group-commit
  batches, pool checkouts, database errors), module-level objects in `REGISTRY`: a
  service process is one uvicorn process, so no multiprocess registry is needed;
- gauges read when scraped (`AppMetrics`, one per app on `app.state.metrics`): the pool's
  connections in use, the streams the live hub follows, the consumers' leadership and
  lag. They cost nothing between scrapes: the idle database sees no query for them
  unless Prometheus asks (the ranking lag is two queries per consumer per scrape).

Labels are bounded: a request is labelled by its route's template
(`/api/matches/{match_id}/moves`), never its path; a status by its class (`2xx`); a stream
by its kind (`match`, `party`, ...), an event by its type.

`/metrics` is the operator's: it answers only `Authorization: Bearer
$LUDO_OPERATOR_TOKEN` (Prometheus's `authorization` scrape option), like the rest of the
operator API; the figures say how busy the site is and which routes fail, nothing a
player needs. It is left out of the OpenAPI document (docs/api.md says so)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from litestar import Request, Response, get
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.pool import AsyncAdaptedQueuePool, Pool

from domain.errors import Unauthenticated
from domain.streams import (
    MATCH_PREFIX,
    PARTY_PREFIX,
    POOL_PREFIX,
    REPORT_PREFIX,
    STAMPS_PREFIX,
    TOURNAMENT_PREFIX,
)
from services.shared.operator import is_operator

__all__ = [
    "APPENDS",
    "BATCH_SIZE",
    "COMMANDS",
    "CONSUMER_ERRORS",
    "DB_ERROR_KINDS",
    "EVENTS",
    "GROUP_FALLBACKS",
    "LISTENER_RECONNECTS",
    "LIVE_SOCKETS",
    "POOL_CHECKOUT",
    "REGISTRY",
    "AppMetrics",
    "TimedPool",
    "app_metrics",
    "count_appended",
    "count_command",
    "count_db_error",
    "instance_figures",
    "metrics_endpoint",
    "metrics_middleware",
    "socket_kind",
    "stream_kind",
]

REGISTRY: Final = CollectorRegistry()

# Seconds: from a few hundred microseconds (a cached read) to the slow-request line's
# order and past it.
_LATENCY_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
REQUESTS: Final = Histogram(
    "ludo_http_request_duration_seconds",
    "HTTP requests by route template, method and status class, start to last byte",
    ("route", "method", "status"),
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
SOCKET_KINDS: Final = ("matches", "parties", "lobby", "tournament")
LIVE_SOCKETS: Final = Gauge(
    "ludo_live_sockets",
    "Live WebSockets open on this process, by socket (matches, parties, lobby, tournament)",
    ("kind",),
    registry=REGISTRY,
)
COMMANDS: Final = Counter(
    "ludo_match_commands",
    "Match commands carried out or refused, by who sent them and what came of them",
    ("source", "outcome"),
    registry=REGISTRY,
)
APPENDS: Final = Counter(
    "ludo_appends",
    "Appends committed to the event log by this process, by stream kind",
    ("stream",),
    registry=REGISTRY,
)
EVENTS: Final = Counter(
    "ludo_events_appended",
    "Events committed to the event log by this process, by event type",
    ("type",),
    registry=REGISTRY,
)
BATCH_SIZE: Final = Histogram(
    "ludo_group_commit_batch_size",
    "Appends per group-commit transaction (committed batches)",
    buckets=(1, 2, 4, 8, 16, 32, 64),
    registry=REGISTRY,
)
GROUP_FALLBACKS: Final = Counter(
    "ludo_group_commit_fallbacks",
    "Group-commit batches rolled back, whose appends were then made one by one",
    registry=REGISTRY,
)
POOL_CHECKOUT: Final = Histogram(
    "ludo_db_pool_checkout_seconds",
    "Time to get a connection from the pool (waiting for a free one, or opening one)",
    buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0),
    registry=REGISTRY,
)
DB_ERROR_KINDS: Final = (
    "unavailable",
    "pool_timeout",
    "timeout",
    "serialization",
    "deadlock",
    "other",
)
DB_ERRORS: Final = Counter(
    "ludo_db_errors",
    "Database errors that failed a request, a socket message or a background task, by kind",
    ("kind",),
    registry=REGISTRY,
)
LISTENER_RECONNECTS: Final = Counter(
    "ludo_live_listener_reconnects",
    "Times the live hub's LISTEN connection failed and was opened again",
    registry=REGISTRY,
)
CONSUMER_ERRORS: Final = Counter(
    "ludo_consumer_errors",
    "Batches of a log consumer (ranking, analysis) that failed and rolled back",
    ("consumer",),
    registry=REGISTRY,
)
# Every series that an alert or a rate reads exists from the start, at 0.
for _kind in ("ranking", "analysis"):
    CONSUMER_ERRORS.labels(_kind)
for _kind in DB_ERROR_KINDS:
    DB_ERRORS.labels(_kind)
for _kind in SOCKET_KINDS:
    LIVE_SOCKETS.labels(_kind)


# ------------------------------------------------------------------------- counting


_STREAM_KINDS: Final = frozenset(
    prefix.rstrip("-")
    for prefix in (
        MATCH_PREFIX,
        PARTY_PREFIX,
        POOL_PREFIX,
        REPORT_PREFIX,
        STAMPS_PREFIX,
        TOURNAMENT_PREFIX,
    )
)


def stream_kind(stream_id: str) -> str:
    """`match` for `match-…` and so on; `other` for a spelling `domain.streams` lacks."""
    kind = stream_id.partition("-")[0]
    return kind if kind in _STREAM_KINDS else "other"


# Children by label values: `labels()` checks and locks on every call, a per-command cost.
_children: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *values: str) -> Any:
    key = (id(metric), *values)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*values)
    return child


def count_appended(stream_id: str, event_types: Iterable[str]) -> None:
    """One append committed to `stream_id`, with events of `event_types`."""
    _child(APPENDS, stream_kind(stream_id)).inc()
    for event_type in event_types:
        _child(EVENTS, event_type).inc()


def count_command(actor: str, outcome: str) -> None:
    """A match command from `actor` (a player id, `scheduler:…`, `arena`) ended in
    `outcome`: `appended`, `duplicate`, `rejected`, `conflict` or `failed`."""
    source = "scheduler" if actor.startswith("scheduler:") else "player"
    if actor == "arena":
        source = "arena"
    _child(COMMANDS, source, outcome).inc()


def count_db_error(kind: str) -> None:
    """One database error of `kind` (one of `DB_ERROR_KINDS`)."""
    _child(DB_ERRORS, kind).inc()


def socket_kind(path_template: str) -> str:
    """The kind of a socket from its route (`/ws/matches/{match_id}` -> `matches`)."""
    parts = path_template.split("/")
    kind = parts[2] if len(parts) > 2 and parts[1] == "ws" else ""
    return kind if kind in SOCKET_KINDS else "other"


# ------------------------------------------------------------------------ middleware


def _status_class(status: int) -> str:
    return f"{status // 100}xx"


def metrics_middleware(app: ASGIApp) -> ASGIApp:
    """Each HTTP request observed in `ludo_http_request_duration_seconds` under its
    route's template (Litestar's `path_template`: the middleware runs after routing, so a
    request that matches no route never reaches it)."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            route = scope.get("path_template") or "unrouted"
            method = str(scope.get("method", ""))
            child = _child(REQUESTS, route, method, _status_class(status))
            child.observe(time.perf_counter() - started)

    return middleware


# ------------------------------------------------------------------------------ pool


# A checkout slower than this waited (for a free connection, or for a new one to open):
# what the operator's live view counts as a pool wait.
POOL_WAIT: Final = 0.01


def instance_figures() -> dict[str, Any]:
    """This process's figures for the operator's live view (services/shared/instance_stats.py),
    read from the metrics above: its pool's checkouts, those that waited and the seconds
    waited in all, and its live sockets."""
    checkouts = waited = 0.0
    seconds = 0.0
    for family in POOL_CHECKOUT.collect():
        for sample in family.samples:
            if sample.name.endswith("_count"):
                checkouts = sample.value
            elif sample.name.endswith("_sum"):
                seconds = sample.value
            elif sample.name.endswith("_bucket") and float(sample.labels["le"]) == POOL_WAIT:
                waited = sample.value
    sockets = sum(sample.value for family in LIVE_SOCKETS.collect() for sample in family.samples)
    return {
        "pool": {
            "checkouts": int(checkouts),
            "waits": int(checkouts - waited),
            "wait_seconds": round(seconds, 3),
        },
        "sockets": int(sockets),
    }


class TimedPool(AsyncAdaptedQueuePool):
    """The async engines' pool, timing each checkout into `ludo_db_pool_checkout_seconds`:
    the wait for a free connection is what a too-small pool costs a request."""

    def connect(self) -> Any:
        started = time.perf_counter()
        try:
            return super().connect()
        finally:
            POOL_CHECKOUT.observe(time.perf_counter() - started)


# --------------------------------------------------------------------- sampled gauges


Sample = Callable[[], Mapping[tuple[str, ...], float]]


class _Sampled(Collector):
    """A gauge family whose values are read when scraped."""

    def __init__(
        self, name: str, documentation: str, labels: tuple[str, ...], sample: Sample
    ) -> None:
        self._family = (name, documentation, labels)
        self._sample = sample

    def collect(self) -> Iterable[Metric]:
        name, documentation, labels = self._family
        family = GaugeMetricFamily(name, documentation, labels=list(labels))
        for values, value in self._sample().items():
            family.add_metric(list(values), value)
        yield family


class AppMetrics:
    """What one app adds to the process's metrics when scraped: gauges sampled from its
    parts (`gauge`) and refreshes run before each scrape (`before_scrape`, e.g. the
    consumers' lag, read from the database)."""

    def __init__(
        self, operator_token: str | None, on_error: Callable[[BaseException], None]
    ) -> None:
        self.operator_token = operator_token
        self.registry = CollectorRegistry()
        self._refreshes: list[Callable[[], Awaitable[None]]] = []
        self._on_error = on_error  # counts a failed refresh (services.shared.errors)

    def gauge(self, name: str, documentation: str, labels: tuple[str, ...], sample: Sample) -> None:
        self.registry.register(_Sampled(name, documentation, labels, sample))

    def before_scrape(self, refresh: Callable[[], Awaitable[None]]) -> None:
        self._refreshes.append(refresh)

    def pool(self, pool: Pool) -> None:
        """The pool's connections in use and its size, read when scraped."""

        def sample() -> dict[tuple[str, ...], float]:
            checked_out = getattr(pool, "checkedout", None)
            size = getattr(pool, "size", None)
            values: dict[tuple[str, ...], float] = {}
            values["in_use",] = float(checked_out() if checked_out else 0)
            if size is not None:
                values["size",] = float(size())
            return values

        self.gauge(
            "ludo_db_pool_connections",
            "The SQLAlchemy pool's connections: checked out (in_use) and its size",
            ("state",),
            sample,
        )

    async def render(self, timeout: float) -> bytes:
        for refresh in self._refreshes:
            # A refresh that cannot finish in time leaves its gauges as they were set
            # to (NaN until it succeeds): the scrape itself still answers.
            try:
                await asyncio.wait_for(refresh(), timeout)
            except Exception as exc:
                self._on_error(exc)
        return generate_latest(REGISTRY) + generate_latest(self.registry)


def app_metrics(app: Any) -> AppMetrics:
    """The `AppMetrics` of a Litestar app (`service_app` puts one on its state)."""
    metrics: AppMetrics = app.state.metrics
    return metrics


_SCRAPE_REFRESH_SECONDS: Final = 3.0  # under Prometheus's default scrape timeout (10 s)


_TEXT_FORMAT: Final = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus's


@get("/metrics", include_in_schema=False, media_type=_TEXT_FORMAT)
async def metrics_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The process's metrics in Prometheus's text format (operator token)."""
    metrics = app_metrics(request.app)
    if not is_operator(request.headers.get("authorization", ""), metrics.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")
    body = await metrics.render(_SCRAPE_REFRESH_SECONDS)
    return Response(body, media_type=_TEXT_FORMAT)
