"""Prometheus metrics of both services: the metric objects, each request's observation (for
the one request middleware, `services.shared.request_middleware`), the pool that times its
checkouts, and `GET /metrics` (docs/operations.md, Metrics).

Every figure is an app's own, in its `AppMetrics` (`app.state.metrics`), never the
process's: a serving process is one uvicorn process with one app, so they are the same
there (no multiprocess registry is needed), but a process holding several apps or engines
(a test run) must not mix one's figures into another's. Two kinds of metric:

- counters and histograms counted as things happen (`Counters`: requests, commands,
  appends, group-commit batches, database errors, live sockets), given to the app's parts
  that count; the pool's checkout times are its engine's pool's own (`TimedPool`);
- gauges read when scraped: the pool's connections in use, the streams the live hub
  follows, the consumers' leadership and lag. They cost nothing between scrapes: the idle
  database sees no query for them unless Prometheus asks (the ranking lag is two queries
  per consumer per scrape).

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
from litestar.types import Scope
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import AsyncAdaptedQueuePool

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
    "DB_ERROR_KINDS",
    "POOL_WAIT",
    "SOCKET_KINDS",
    "UNCOUNTED",
    "AppMetrics",
    "Counters",
    "TimedPool",
    "app_metrics",
    "metrics_endpoint",
    "observe_request",
    "socket_kind",
    "stream_kind",
]

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
SOCKET_KINDS: Final = ("matches", "parties", "lobby", "tournament")
DB_ERROR_KINDS: Final = (
    "unavailable",
    "pool_timeout",
    "timeout",
    "serialization",
    "deadlock",
    "other",
)
_CHECKOUT_BUCKETS: Final = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)


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


class Counters:
    """One app's counters and histograms, in a registry of its own (`registry`): what that
    app's `/metrics` exports, and nothing that another app (or engine) alive in the same
    process did. A serving process holds one app, so its figures are the process's; a test
    process holds many, each exact.

    The parts that count are given the `Counters` of their app (`AppMetrics.counters`); one
    made outside an app (a test's store, a bench's service, the CLI) counts into
    `UNCOUNTED`, which nothing exports."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = Histogram(
            "ludo_http_request_duration_seconds",
            "HTTP requests by route template, method and status class, start to last byte",
            ("route", "method", "status"),
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.live_sockets = Gauge(
            "ludo_live_sockets",
            "Live WebSockets open on this instance, by socket (matches, parties, lobby, "
            "tournament)",
            ("kind",),
            registry=registry,
        )
        self.commands = Counter(
            "ludo_match_commands",
            "Match commands carried out or refused, by who sent them and what came of them",
            ("source", "outcome"),
            registry=registry,
        )
        self.appends = Counter(
            "ludo_appends",
            "Appends committed to the event log by this instance, by stream kind",
            ("stream",),
            registry=registry,
        )
        self.events = Counter(
            "ludo_events_appended",
            "Events committed to the event log by this instance, by event type",
            ("type",),
            registry=registry,
        )
        self.batch_size = Histogram(
            "ludo_group_commit_batch_size",
            "Appends per group-commit transaction (committed batches)",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=registry,
        )
        self.group_fallbacks = Counter(
            "ludo_group_commit_fallbacks",
            "Group-commit batches rolled back, whose appends were then made one by one",
            registry=registry,
        )
        self.db_errors = Counter(
            "ludo_db_errors",
            "Database errors that failed a request, a socket message or a background task, by kind",
            ("kind",),
            registry=registry,
        )
        self.listener_reconnects = Counter(
            "ludo_live_listener_reconnects",
            "Times the live hub's LISTEN connection failed and was opened again",
            registry=registry,
        )
        self.consumer_errors = Counter(
            "ludo_consumer_errors",
            "Batches of a log consumer (ranking, analysis) that failed and rolled back",
            ("consumer",),
            registry=registry,
        )
        # Children by label values: `labels()` checks and locks on every call, a
        # per-command cost.
        self._children: dict[tuple[Any, ...], Any] = {}
        # Every series that an alert or a rate reads exists from the start, at 0.
        for kind in ("ranking", "analysis"):
            self.consumer_errors.labels(kind)
        for kind in DB_ERROR_KINDS:
            self.db_errors.labels(kind)
        for kind in SOCKET_KINDS:
            self.live_sockets.labels(kind)

    def child(self, metric: Any, *values: str) -> Any:
        """`metric.labels(*values)`, kept."""
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def appended(self, stream_id: str, event_types: Iterable[str]) -> None:
        """One append committed to `stream_id`, with events of `event_types`."""
        self.child(self.appends, stream_kind(stream_id)).inc()
        for event_type in event_types:
            self.child(self.events, event_type).inc()

    def command(self, actor: str, outcome: str) -> None:
        """A match command from `actor` (a player id, `scheduler:…`, `arena`) ended in
        `outcome`: `appended`, `duplicate`, `rejected`, `conflict` or `failed`."""
        source = "scheduler" if actor.startswith("scheduler:") else "player"
        if actor == "arena":
            source = "arena"
        self.child(self.commands, source, outcome).inc()

    def db_error(self, kind: str) -> None:
        """One database error of `kind` (one of `DB_ERROR_KINDS`)."""
        self.child(self.db_errors, kind).inc()

    def socket(self, path_template: str) -> Any:
        """The live-sockets gauge of a socket on route `path_template` (inc when it opens,
        dec when it closes)."""
        return self.child(self.live_sockets, socket_kind(path_template))

    def sockets(self) -> int:
        """The live sockets open now, of every kind."""
        return int(
            sum(sample.value for family in self.live_sockets.collect() for sample in family.samples)
        )


# Where the parts made outside an app count (see `Counters`): exported by nothing.
UNCOUNTED: Final = Counters()


def socket_kind(path_template: str) -> str:
    """The kind of a socket from its route (`/ws/matches/{match_id}` -> `matches`)."""
    parts = path_template.split("/")
    kind = parts[2] if len(parts) > 2 and parts[1] == "ws" else ""
    return kind if kind in SOCKET_KINDS else "other"


# -------------------------------------------------------------------------- requests


def _status_class(status: int) -> str:
    return f"{status // 100}xx"


def observe_request(scope: Scope, status: int, seconds: float) -> None:
    """The HTTP request observed in its app's `ludo_http_request_duration_seconds` under
    its route's template (Litestar's `path_template`: the request middleware runs after
    routing, so a request that matches no route never reaches it)."""
    route = scope.get("path_template") or "unrouted"
    method = str(scope.get("method", ""))
    counters = app_metrics(scope["app"]).counters
    counters.child(counters.requests, route, method, _status_class(status)).observe(seconds)


# ------------------------------------------------------------------------------ pool


# A checkout slower than this waited (for a free connection, or for a new one to open):
# what the operator's live view counts as a pool wait.
POOL_WAIT: Final = 0.01


def _checkout_histogram() -> Histogram:
    return Histogram(
        "ludo_db_pool_checkout_seconds",
        "Time to get a connection from the pool (waiting for a free one, or opening one)",
        buckets=_CHECKOUT_BUCKETS,
        registry=None,  # the pool's own: its app exports it (`AppMetrics.pool`)
    )


class TimedPool(AsyncAdaptedQueuePool):
    """The async engines' pool, timing each checkout into a histogram of its own
    (`checkouts`, `ludo_db_pool_checkout_seconds`): the wait for a free connection is what a
    too-small pool costs a request. Its own, not the process's: an instance's figures are
    those of its engine, whatever other engines the process holds. It carries over to the
    pool that replaces this one when the engine is disposed (`recreate`)."""

    # SQLAlchemy names a pool's logger after its class: under `services.` it would log
    # its chatter ("Pool disposed", "Invalidate connection") at the services' INFO level;
    # under SQLAlchemy's own name it stays at SQLAlchemy's WARNING, as the stock pool does.
    _sqla_logger_namespace = "sqlalchemy.pool.impl.AsyncAdaptedQueuePool"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checkouts = _checkout_histogram()

    def recreate(self) -> TimedPool:
        pool = super().recreate()
        assert isinstance(pool, TimedPool)
        pool.checkouts = self.checkouts
        return pool

    def connect(self) -> Any:
        started = time.perf_counter()
        try:
            return super().connect()
        finally:
            self.checkouts.observe(time.perf_counter() - started)

    def waits(self) -> dict[str, Any]:
        """Its checkouts so far, those that waited over `POOL_WAIT` and the seconds waited
        in all (every checkout's time), for the operator's live view."""
        checkouts = quick = seconds = 0.0
        for family in self.checkouts.collect():
            for sample in family.samples:
                if sample.name.endswith("_count"):
                    checkouts = sample.value
                elif sample.name.endswith("_sum"):
                    seconds = sample.value
                elif sample.name.endswith("_bucket") and float(sample.labels["le"]) == POOL_WAIT:
                    quick = sample.value
        return {
            "checkouts": int(checkouts),
            "waits": int(checkouts - quick),
            "wait_seconds": round(seconds, 3),
        }


class _PoolCheckouts(Collector):
    """The checkout histogram of an engine's pool as it is when scraped (a disposed
    engine's new pool carries the same histogram)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    def collect(self) -> Iterable[Metric]:
        pool = self._engine.sync_engine.pool
        if isinstance(pool, TimedPool):
            yield from pool.checkouts.collect()


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
        self,
        operator_token: str | None,
        on_error: Callable[[BaseException, Counters], None],
    ) -> None:
        self.operator_token = operator_token
        self.counters = Counters()  # what the app's parts count as it happens
        self.registry = self.counters.registry
        self._refreshes: list[Callable[[], Awaitable[None]]] = []
        # Counts a failed refresh (services.shared.errors.count_database_error).
        self._on_error = on_error

    def gauge(self, name: str, documentation: str, labels: tuple[str, ...], sample: Sample) -> None:
        self.registry.register(_Sampled(name, documentation, labels, sample))

    def before_scrape(self, refresh: Callable[[], Awaitable[None]]) -> None:
        self._refreshes.append(refresh)

    def pool(self, engine: AsyncEngine) -> None:
        """The app's engine's pool, read when scraped: its checkouts' times, its
        connections in use and its size."""
        self.registry.register(_PoolCheckouts(engine))

        def sample() -> dict[tuple[str, ...], float]:
            pool = engine.sync_engine.pool
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
                self._on_error(exc, self.counters)
        return generate_latest(self.registry)


def app_metrics(app: Any) -> AppMetrics:
    """The `AppMetrics` of a Litestar app (`service_app` puts one on its state)."""
    metrics: AppMetrics = app.state.metrics
    return metrics


_SCRAPE_REFRESH_SECONDS: Final = 3.0  # under Prometheus's default scrape timeout (10 s)


_TEXT_FORMAT: Final = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus's


@get("/metrics", include_in_schema=False, media_type=_TEXT_FORMAT)
async def metrics_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The app's metrics in Prometheus's text format (operator token)."""
    metrics = app_metrics(request.app)
    if not is_operator(request.headers.get("authorization", ""), metrics.operator_token):
        raise Unauthenticated("send Authorization: Bearer <operator token>")
    body = await metrics.render(_SCRAPE_REFRESH_SECONDS)
    return Response(body, media_type=_TEXT_FORMAT)
