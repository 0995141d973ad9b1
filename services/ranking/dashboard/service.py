"""The operator's live view, the reads behind `GET /api/ranking/live` (services/ranking/
dashboard/routes.py), which the dashboard asks every few seconds while it is open.

One answer gathers what an operator watches on a live site, each part from where it is known:

- `play`: matches and players now, the arenas running: the match service's
  `GET /api/operator/now` (services/match/moderation/site_now.py), asked through
  `LUDO_MATCH_URL` with the operator token (the ranking service names no table of the
  match service);
- `instances`: every instance of either service seen lately, with its pool (size, in use,
  waits) and sockets: the rows they write themselves (services/shared/instance_stats.py);
- `abandonment`: per hour of the last 24, the ended matches' human seats and how many of
  them left their match (`reputation_matches`, the ranking consumer's fold);
- `lag`: the ranking and the analysis consumers' distance behind the log;
- `database`: the server this service writes to (primary or standby, its timeline), its
  standbys with their state and lag (`pg_stat_replication`: the lag columns need a role
  with `pg_monitor`, else they are null), and, with `LUDO_PATRONI_URL`, Patroni's view:
  the members and their roles, and the last failover or switchover (its `/history`).

A part that cannot be read says why (`unavailable`) and the others are still answered: the
view is most needed when something is broken.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, Final

import httpx
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.analysis.consumer import CHECKPOINT as ANALYSIS_CHECKPOINT
from services.ranking.dashboard.schemas import (
    AbandonmentHour,
    DatabaseOut,
    Failover,
    InstanceOut,
    LagsOut,
    LiveViewOut,
    Manager,
    Member,
    Standby,
)
from services.ranking.leadership import LeasedFollower
from services.ranking.ratings.queries import RatingQueries
from services.shared.eventstore import EventStore
from services.shared.instance_stats import SEEN_WITHIN
from services.shared.logging import describe_exception
from services.shared.settings import Settings

__all__ = ["LiveView", "patroni_manager"]

_log = structlog.get_logger(__name__)

TIMEOUT: Final = 2.0  # seconds for the match service's and Patroni's answers
# The roles Patroni's `/cluster` gives the node that leads (by version, and in a standby
# cluster).
LEADER_ROLES: Final = ("leader", "primary", "master", "standby_leader")
HOURS: Final = 24


_INSTANCES: Final = sa.text(
    """
    SELECT name, service, pid,
           to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started_at,
           extract(epoch FROM now() - seen_at) AS age, figures
    FROM instance_stats WHERE seen_at > now() - make_interval(secs => :within)
    ORDER BY service, name
    """
)
# Every hour of the window, empty ones too, so the chart's axis is the clock's.
_ABANDONMENT: Final = sa.text(
    """
    SELECT to_char(h.hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') AS hour,
           count(r.player_id) AS seats, count(r.player_id) FILTER (WHERE r.left_match) AS left
    FROM generate_series(date_trunc('hour', now()) - make_interval(hours => :hours - 1),
                         date_trunc('hour', now()), interval '1 hour') AS h(hour)
    LEFT JOIN reputation_matches r
           ON r.ended_at >= h.hour AND r.ended_at < h.hour + interval '1 hour'
    GROUP BY h.hour ORDER BY h.hour
    """
)
_RECOVERY: Final = sa.text("SELECT pg_is_in_recovery()")
_TIMELINE: Final = sa.text("SELECT timeline_id FROM pg_control_checkpoint()")
_STANDBYS: Final = sa.text(
    """
    SELECT application_name AS name, coalesce(state, '') AS state,
           coalesce(sync_state, '') AS sync_state,
           extract(epoch FROM replay_lag) AS replay_lag,
           pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint AS lag_bytes
    FROM pg_stat_replication ORDER BY application_name
    """
)


class LiveView:
    """The reads behind `GET /api/ranking/live` (the module's docstring), over the ranking
        service's engine, store and consumers (the `live` dependency, built by services/ranking/
    app.py). `close()` releases its
        HTTP client."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        settings: Settings,
        consumers: tuple[LeasedFollower, LeasedFollower],
        ranking_lag: RatingQueries,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._consumers = consumers
        self._ranking_lag = ranking_lag
        self._analysis_lag = RatingQueries(engine, store, ANALYSIS_CHECKPOINT)
        self._client = (
            None
            if settings.match_url is None
            else httpx.AsyncClient(
                base_url=settings.match_url.rstrip("/"),
                timeout=httpx.Timeout(TIMEOUT),
                follow_redirects=False,
            )
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def read(self) -> LiveViewOut:
        ranking, analysis = self._consumers
        play, database, rows, hours, ranking_lag, analysis_lag = await asyncio.gather(
            self._play(),
            self._database(),
            self._instances(),
            self._abandonment(),
            self._ranking_lag.lag(ranking.active),
            self._analysis_lag.lag(analysis.active),
        )
        return LiveViewOut(
            at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            play=play,
            instances=rows,
            abandonment=hours,
            lag=LagsOut(ranking=ranking_lag, analysis=analysis_lag),
            database=database,
        )

    async def _instances(self) -> list[InstanceOut]:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(_INSTANCES, {"within": SEEN_WITHIN})).all()
        return [
            InstanceOut(
                name=row.name,
                service=row.service,
                pid=row.pid,
                started_at=row.started_at,
                seen_seconds_ago=round(float(row.age), 1),
                figures=row.figures,
            )
            for row in rows
        ]

    async def _abandonment(self) -> list[AbandonmentHour]:
        async with self._engine.connect() as conn:
            rows = (await conn.execute(_ABANDONMENT, {"hours": HOURS})).all()
        return [
            AbandonmentHour(
                hour=row.hour,
                seats=int(row.seats),
                left=int(row.left),
                rate=round(row.left / row.seats, 4) if row.seats else 0.0,
            )
            for row in rows
        ]

    async def _play(self) -> dict[str, Any]:
        settings = self._settings
        if self._client is None:
            return {"unavailable": "LUDO_MATCH_URL is not set"}
        try:
            answer = await self._client.get(
                "/api/operator/now",
                headers={"Authorization": f"Bearer {settings.operator_token}"},
            )
        except httpx.HTTPError as error:
            _log.warning("match_service_unreachable", error_type=type(error).__name__)
            return {"unavailable": "the match service does not answer"}
        if answer.status_code != 200:
            return {"unavailable": f"the match service answered {answer.status_code}"}
        figures: dict[str, Any] = answer.json()
        return figures

    async def _database(self) -> DatabaseOut:
        try:
            async with self._engine.connect() as conn:
                in_recovery = bool(await conn.scalar(_RECOVERY))
                timeline = await _timeline(conn)
                standbys = [] if in_recovery else await _standbys(conn)
        except Exception as error:
            _log.warning("live_view_database_failed", **describe_exception(error))
            return DatabaseOut(unavailable="the database does not answer")
        return DatabaseOut(
            in_recovery=in_recovery,
            timeline=timeline,
            standbys=standbys,
            manager=await self._manager(),
        )

    async def _manager(self) -> Manager | None:
        urls = self._settings.patroni_urls
        if not urls:
            return None
        for url in urls:  # the first node that answers: any of them knows the cluster
            try:
                async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as client:
                    cluster, history = await asyncio.gather(
                        client.get("/cluster"), client.get("/history")
                    )
                cluster.raise_for_status()
                history.raise_for_status()
                return patroni_manager(cluster.json(), history.json())
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                continue
        return Manager(kind="patroni", unavailable="no Patroni node answers (LUDO_PATRONI_URL)")


async def _timeline(conn: Any) -> int | None:
    # pg_control_checkpoint() is for superusers and pg_monitor: another role sees no
    # timeline (a savepoint keeps the connection usable after the refusal).
    try:
        async with conn.begin_nested():
            value = await conn.scalar(_TIMELINE)
    except sa.exc.DBAPIError:
        return None
    return None if value is None else int(value)


async def _standbys(conn: Any) -> list[Standby]:
    rows = (await conn.execute(_STANDBYS)).all()
    return [
        Standby(
            name=row.name,
            state=row.state,
            sync_state=row.sync_state,
            replay_lag_seconds=None if row.replay_lag is None else float(row.replay_lag),
            lag_bytes=None if row.lag_bytes is None else int(row.lag_bytes),
        )
        for row in rows
    ]


def patroni_manager(cluster: dict[str, Any], history: list[Any]) -> Manager:
    """Patroni's `/cluster` and `/history` answers as the view's `Manager`."""
    members = [
        Member(
            name=str(m["name"]),
            role=str(m.get("role", "")),
            state=str(m.get("state", "")),
            timeline=m.get("timeline"),
            lag_bytes=m["lag"] if isinstance(m.get("lag"), int) else None,
        )
        for m in cluster.get("members", [])
    ]
    last = None
    if history:
        # [timeline, lsn, reason, timestamp, new_leader]: the timeline that ended, why, when.
        entry = list(history[-1]) + [None] * 5
        ended = int(entry[0])
        # The timeline the leader is on now. Not `ended + 1`: a promotion takes the highest
        # timeline any node has seen plus one, so a timeline may be skipped (a promotion
        # that did not last, a restore from the archive).
        leaders = [m.timeline for m in members if m.role in LEADER_ROLES]
        on = leaders[0] if leaders and isinstance(leaders[0], int) else None
        last = Failover(
            timeline=ended,
            reason=str(entry[2] or ""),
            at=entry[3],
            new_leader=entry[4],
            new_timeline=on if on is not None and on > ended else None,
        )
    return Manager(kind="patroni", members=members, last_failover=last)
