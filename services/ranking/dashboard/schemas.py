"""What the operator's live view answers with (`GET /api/ranking/live`, services/ranking/
dashboard/routes.py; read by services/ranking/dashboard/service.py)."""

from __future__ import annotations

from typing import Any

import msgspec

from services.ranking.ratings.schemas import Lag

__all__ = [
    "AbandonmentHour",
    "DatabaseOut",
    "Failover",
    "InstanceOut",
    "LagsOut",
    "LiveViewOut",
    "Manager",
    "Member",
    "Standby",
]


class InstanceOut(msgspec.Struct, kw_only=True):
    name: str
    service: str
    pid: int
    started_at: str
    seen_seconds_ago: float
    figures: dict[str, Any]


class AbandonmentHour(msgspec.Struct, kw_only=True):
    """One hour (UTC, its start): human seats of ranked and casual matches ended in it."""

    hour: str
    seats: int
    left: int
    rate: float


class Standby(msgspec.Struct, kw_only=True):
    name: str
    state: str
    sync_state: str
    replay_lag_seconds: float | None
    lag_bytes: int | None


class Member(msgspec.Struct, kw_only=True):
    """A node as Patroni sees it (`/cluster`)."""

    name: str
    role: str
    state: str
    timeline: int | None
    lag_bytes: int | None


class Failover(msgspec.Struct, kw_only=True):
    """The last change of primary (Patroni's `/history`): when the old `timeline` ended,
    why, and the new leader; `new_timeline` is the one the leader is on now (its member's
    in `/cluster`), null when no leader reports one after the timeline that ended."""

    at: str | None
    timeline: int
    reason: str
    new_leader: str | None
    new_timeline: int | None = None


class Manager(msgspec.Struct, kw_only=True):
    """The failover manager's view; `unavailable` says why there is none to show."""

    kind: str
    members: list[Member] = msgspec.field(default_factory=list)
    last_failover: Failover | None = None
    unavailable: str | None = None


class DatabaseOut(msgspec.Struct, kw_only=True):
    """The server this service writes to; `unavailable` says why it could not be read."""

    in_recovery: bool | None = None
    timeline: int | None = None
    standbys: list[Standby] = msgspec.field(default_factory=list)
    manager: Manager | None = None
    unavailable: str | None = None


class LagsOut(msgspec.Struct, kw_only=True):
    ranking: Lag
    analysis: Lag


class LiveViewOut(msgspec.Struct, kw_only=True):
    at: str
    # The match service's `getSiteNow` answer, or {"unavailable": why}.
    play: dict[str, Any]
    instances: list[InstanceOut]
    abandonment: list[AbandonmentHour]
    lag: LagsOut
    database: DatabaseOut
