"""Service configuration, read once from environment variables (docs/design.md#public-contracts).

- `DATABASE_URL`: the PostgreSQL URL, e.g. `postgresql+psycopg://user:pw@host:5432/ludo`
  (`postgresql://` and `postgres://` are accepted too). Unset: an embedded PostgreSQL is
  started, with its data in `LUDO_DATA_DIR/pg`.
- `LUDO_DATABASE_READ_URL`: a read-only URL (a streaming standby) for the reads that
  tolerate lag: replays, public ratings and leaderboards, the analysis pages, the
  dashboard (docs/scaling.md, Reads from a standby). When it does not answer, those reads
  go to `DATABASE_URL` for a few seconds before it is tried again. Unset: every read on
  `DATABASE_URL`. `LUDO_DATABASE_READ_MAX_LAG` (10): seconds the standby may be behind
  before those reads go to the primary until it catches up (checked at most once a
  second; 0: not checked).
- `LUDO_DATA_DIR`: where local state lives (the embedded PostgreSQL's `pg/`). Default: the
  user data directory, `platformdirs.user_data_dir("ludo")` (`~/.local/share/ludo` on Linux).
- `LUDO_DB_POOL_SIZE` (32) and `LUDO_DB_MAX_OVERFLOW` (10): connections each process keeps
  in its SQLAlchemy pool, and the extra ones it may open under load.
- `LUDO_STATEMENT_TIMEOUT` (15): seconds the services' sessions let one statement run, or
  a transaction sit idle, before PostgreSQL ends it (0: never); the request answers 503
  `database_busy`. Migrations and the `ludo` commands have none (docs/reliability.md).
- `LUDO_GROUP_COMMIT` (true): the match service commits the appends that arrive together
  in one transaction, on one more connection of its own (docs/event-store.md).
- `LUDO_DB_APP_ROLE`: the database role the services run as (not the schema's owner).
  When set, `ludo db upgrade`, run as the owner, grants it what the services need and no
  more (migrations/grants.py, docs/event-store.md: Roles). A service connected as a role
  that does not own the schema does not migrate; it checks the schema is at head.
- `LUDO_CPU_DELAY` (0.5): seconds a CPU seat or stand-in waits before each action, so
  people can follow; `LUDO_SCHEDULER` (true): run the deadline worker in this process;
  `LUDO_SCHEDULER_POLL` (0.25): its idle poll interval in seconds.
- `LUDO_OPERATOR_TOKEN`: the operator's token for the ranking service's API
  (`/api/ranking/*`, read by its `/dashboard`) and the match service's dispute report
  (`/api/matches/{id}/report`, `/report/{id}`); unset, they are refused. `LUDO_RANKING_POLL` (1.0):
  seconds the ranking consumer waits for a NOTIFY hint before polling the log.
- `LUDO_RANKING_URL`: the ranking service's base URL (e.g. `http://127.0.0.1:8001`), to
  which the match service forwards the public `GET /api/ratings/*` reads; `ludo up` sets
  it. Unset: those reads answer 503 `ranking_unavailable`.
- `LUDO_MATCH_URL`: the match service's base URL, which the ranking service asks what the
  site does now for the operator's live view (`ludo up` sets it); `LUDO_PATRONI_URL`: the
  REST APIs of the Patroni nodes (comma-separated), for the live view's members and last
  failover. Unset: those parts of the view say so.
- `LUDO_LOG_LEVEL` (info), `LUDO_LOG_FORMAT` (auto: JSON unless stdout is a TTY; json;
  console), `LUDO_SLOW_REQUEST_MS` (500: a request slower than this is logged at warning;
  the others at debug).
- Limits per client address (services/shared/limits.py; 0: off):
  `LUDO_RATE_LIMIT` (1200 requests a minute), `LUDO_GUEST_LIMIT` (20 new guests an hour),
  `LUDO_AUTH_FAIL_LIMIT` (20 unknown tokens a minute), `LUDO_REQUEST_TIMEOUT` (10 s for a
  request body), `LUDO_WS_MESSAGE_RATE` (20 socket messages a second, per socket).
  `LUDO_SHARED_LIMITS` (true): the first three are counted in PostgreSQL, shared by every
  instance (services/shared/rate_store.py); false: in memory, per process.

`Settings.from_env()` reads them; `ENV_VARS` lists them (docs/operations.md#configuration).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec
import platformdirs

from services.shared.arena_schedule import ScheduleError
from services.shared.arena_schedule import parse as parse_schedule

__all__ = ["ENV_VARS", "Settings", "SettingsError", "default_data_dir"]


_POSTGRES_URL = re.compile(r"(postgres|postgresql|postgresql\+psycopg)://")


class SettingsError(ValueError):
    """An environment variable holds a value the services cannot use."""


def default_data_dir() -> Path:
    """The user data directory for `ludo` (platform-specific, via platformdirs)."""
    return Path(platformdirs.user_data_dir("ludo", appauthor=False))


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Configuration of a service process. Build it with `Settings.from_env()`."""

    data_dir: Path
    database_url: str | None = None
    database_read_url: str | None = None
    database_read_max_lag: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    # Beyond the pool, a connection is opened for one use and closed after it: under load
    # that churn cost PostgreSQL twice the CPU per command (docs/benchmarks.md). A pool
    # opens its connections only as they are needed, up to this size, and keeps them.
    db_pool_size: Annotated[int, msgspec.Meta(ge=1)] = 32
    db_max_overflow: Annotated[int, msgspec.Meta(ge=0)] = 10
    # Under HAProxy's 30 s server timeout and SQLAlchemy's 30 s pool timeout: a stuck
    # statement frees its connection (and locks) before the balancer gives up on it.
    statement_timeout: Annotated[float, msgspec.Meta(ge=0)] = 15.0
    # Seconds a new connection is tried again while the database does not take it (a
    # failover: services/shared/reconnect.py) before the request fails with a 503.
    db_connect_patience: Annotated[float, msgspec.Meta(ge=0)] = 5.0
    # The match service's appends in batches, one transaction each (eventstore/_group.py).
    group_commit: bool = True
    db_app_role: str | None = None
    cpu_delay: Annotated[float, msgspec.Meta(ge=0)] = 0.5
    scheduler: bool = True
    reconnect_grace: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    scheduler_poll: Annotated[float, msgspec.Meta(gt=0)] = 0.25
    pairing: bool = True
    pool_grace: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    # The operator's recurring arenas (JSON, services/match/arena_schedule.py); None: the
    # default schedule, "[]": none.
    arena_schedule: str | None = None
    log_level: str = "info"
    log_format: str = "auto"
    slow_request_ms: Annotated[float, msgspec.Meta(ge=0)] = 500.0
    operator_token: str | None = None
    ranking_poll: Annotated[float, msgspec.Meta(gt=0)] = 1.0
    ranking_url: str | None = None
    # The operator's live view (services/ranking/dashboard/service.py): where the ranking service
    # asks the match service what the site does now, and the Patroni nodes' REST APIs.
    match_url: str | None = None
    patroni_url: str | None = None
    # Limits (services/shared/limits.py); 0 switches one off.
    rate_limit: Annotated[int, msgspec.Meta(ge=0)] = 1200
    guest_limit: Annotated[int, msgspec.Meta(ge=0)] = 20
    auth_fail_limit: Annotated[int, msgspec.Meta(ge=0)] = 20
    request_timeout: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    ws_message_rate: Annotated[float, msgspec.Meta(ge=0)] = 20.0
    shared_limits: bool = True

    @property
    def embedded_pgdata(self) -> Path:
        """The embedded PostgreSQL's data directory (used when `database_url` is None)."""
        return self.data_dir / "pg"

    @property
    def patroni_urls(self) -> list[str]:
        """`LUDO_PATRONI_URL`'s nodes (comma-separated), in order."""
        return [u.strip().rstrip("/") for u in (self.patroni_url or "").split(",") if u.strip()]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the variables of `ENV_VARS` from `environ` (default: `os.environ`).

        Empty values count as unset.
        """
        env = os.environ if environ is None else environ
        raw: dict[str, Any] = {}
        for field, (var, _doc) in ENV_VARS.items():
            value = env.get(var, "").strip()
            if value:
                raw[field] = value
        raw.setdefault("data_dir", str(default_data_dir()))
        for field in ("database_url", "database_read_url"):
            url = raw.get(field)
            if url is not None and not _POSTGRES_URL.match(url):
                raise SettingsError(
                    f"{ENV_VARS[field][0]} must be a PostgreSQL URL (postgresql+psycopg://, "
                    "postgresql:// or postgres://)"
                )
        for field in ("ranking_url", "match_url"):
            url = raw.get(field)
            if url is not None and not re.match(r"https?://[^/]", url):
                raise SettingsError(f"{ENV_VARS[field][0]} must be an http:// or https:// URL")
        for node in (raw.get("patroni_url") or "").split(","):
            if node.strip() and not re.match(r"https?://[^/]", node.strip()):
                raise SettingsError(
                    "LUDO_PATRONI_URL must be http:// or https:// URLs, separated by commas"
                )
        try:
            settings = msgspec.convert(raw, cls, strict=False, dec_hook=_dec_hook)
        except msgspec.ValidationError as exc:
            raise SettingsError(_explain(exc)) from exc
        try:
            parse_schedule(settings.arena_schedule)
        except ScheduleError as exc:
            raise SettingsError(str(exc)) from exc
        return settings


# field -> (environment variable, one-line meaning)
ENV_VARS: dict[str, tuple[str, str]] = {
    "database_url": ("DATABASE_URL", "PostgreSQL URL; unset: embedded PostgreSQL"),
    "database_read_url": (
        "LUDO_DATABASE_READ_URL",
        "read-only URL (a standby) for the reads that tolerate lag; unset: DATABASE_URL",
    ),
    "database_read_max_lag": (
        "LUDO_DATABASE_READ_MAX_LAG",
        "seconds the standby may lag before its reads go to the primary; 0: not checked",
    ),
    "data_dir": ("LUDO_DATA_DIR", "local state (embedded PostgreSQL data in pg/)"),
    "db_pool_size": ("LUDO_DB_POOL_SIZE", "connections kept per process"),
    "db_max_overflow": ("LUDO_DB_MAX_OVERFLOW", "extra connections under load"),
    "statement_timeout": (
        "LUDO_STATEMENT_TIMEOUT",
        "seconds a service's statement (or idle transaction) may last; 0: no limit",
    ),
    "db_connect_patience": (
        "LUDO_DB_CONNECT_PATIENCE",
        "seconds a new database connection is tried again (a failover) before a 503; 0: no",
    ),
    "group_commit": (
        "LUDO_GROUP_COMMIT",
        "commit the match service's appends in batches (true/false)",
    ),
    "db_app_role": ("LUDO_DB_APP_ROLE", "role the services connect as; ludo db upgrade grants it"),
    "cpu_delay": ("LUDO_CPU_DELAY", "seconds a CPU (or stand-in) waits before each action"),
    "scheduler": ("LUDO_SCHEDULER", "run the deadline worker in this process (true/false)"),
    "reconnect_grace": (
        "LUDO_RECONNECT_GRACE",
        "seconds a disconnected player has to come back before a CPU stands in",
    ),
    "scheduler_poll": ("LUDO_SCHEDULER_POLL", "seconds between deadline polls when idle"),
    "pairing": ("LUDO_PAIRING", "run quick play's pairing passes in this process (true/false)"),
    "pool_grace": (
        "LUDO_POOL_GRACE",
        "seconds a quick-play entry outlives its holder's last lobby socket (a reload)",
    ),
    "arena_schedule": (
        "LUDO_ARENA_SCHEDULE",
        "the recurring arenas (JSON list, docs/arenas.md); unset: hourly 2-player, daily 4-player",
    ),
    "log_level": ("LUDO_LOG_LEVEL", "debug, info, warning or error"),
    "log_format": ("LUDO_LOG_FORMAT", "auto (JSON unless stdout is a TTY), json or console"),
    "slow_request_ms": (
        "LUDO_SLOW_REQUEST_MS",
        "milliseconds over which a request is logged as slow (warning); others at debug",
    ),
    "operator_token": (
        "LUDO_OPERATOR_TOKEN",
        "operator token (ranking API and dashboard, dispute report); unset: refused",
    ),
    "ranking_poll": ("LUDO_RANKING_POLL", "seconds the ranking consumer waits between polls"),
    "ranking_url": (
        "LUDO_RANKING_URL",
        "ranking service base URL the match service forwards /api/ratings/* to; ludo up sets it",
    ),
    "match_url": (
        "LUDO_MATCH_URL",
        "match service base URL the ranking service asks for the live view; ludo up sets it",
    ),
    "patroni_url": (
        "LUDO_PATRONI_URL",
        "Patroni REST API URLs (comma-separated) for the live view's failover figures",
    ),
    "rate_limit": (
        "LUDO_RATE_LIMIT",
        "requests a minute per client address (burst as many); 0: off",
    ),
    "guest_limit": (
        "LUDO_GUEST_LIMIT",
        "new guests (POST /api/players) an hour per address; 0: off",
    ),
    "auth_fail_limit": (
        "LUDO_AUTH_FAIL_LIMIT",
        "unknown tokens a minute per address before 429 without a lookup; 0: off",
    ),
    "request_timeout": ("LUDO_REQUEST_TIMEOUT", "seconds a request body may take to arrive (408)"),
    "ws_message_rate": (
        "LUDO_WS_MESSAGE_RATE",
        "WebSocket client messages a second per socket (burst twice that); 0: off",
    ),
    "shared_limits": (
        "LUDO_SHARED_LIMITS",
        "count the per-address budgets in PostgreSQL, for every instance (true/false)",
    ),
}


def _dec_hook(type_: type, value: Any) -> Any:
    if type_ is Path and isinstance(value, str):
        return Path(value).expanduser()
    raise NotImplementedError(f"cannot read {type_}")


def _explain(exc: msgspec.ValidationError) -> str:
    message = str(exc)
    for field, (var, _doc) in ENV_VARS.items():
        if f"`$.{field}`" in message:
            return message.replace(f"`$.{field}`", var)
    return message
