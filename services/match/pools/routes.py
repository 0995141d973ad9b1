"""Quick play (docs/pools.md): enter a pool, leave it, and how many wait in each."""

from __future__ import annotations

import time

import msgspec
from litestar import Controller, delete, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from domain import pool as pl
from services.match.callers import BEARER, CurrentPlayer, provide_player
from services.match.pools.schemas import EnterPool, PoolCountOut, PoolEntryOut, PoolsOut
from services.match.pools.service import KINDS, Pools, PoolsSnapshot, kind_named
from services.shared.errors import error_responses

__all__ = ["PoolsController", "entry_view", "pools_view"]


def pools_view(snapshot: PoolsSnapshot) -> PoolsOut:
    """`GET /api/pools`: the counts of a snapshot."""
    return PoolsOut(
        online=snapshot.online,
        pools=[
            PoolCountOut(
                pool=kind.name,  # type: ignore[arg-type]  # one of KINDS' names
                seats=kind.seats,
                ranked=kind.ranked,
                waiting=len(snapshot.waiting[kind.name]),
            )
            for kind in KINDS.values()
        ],
    )


def entry_view(kind: pl.PoolKind, entry: pl.Waiting, waiting: int, now: float) -> PoolEntryOut:
    """A player's wait as the API shows it, at `now`."""
    return PoolEntryOut(
        pool=kind.name,  # type: ignore[arg-type]  # one of KINDS' names
        seats=kind.seats,
        ranked=kind.ranked,
        entered_at=entry.entered_at,
        cpu_after=entry.cpu_after,
        rating=entry.rating,
        window=pl.rating_window(now - entry.entered_at) if kind.ranked else None,
        waiting=waiting,
    )


class PoolsController(Controller):
    path = "/api/pools"
    tags = ("pools",)
    dependencies = {"player": provide_player}  # noqa: RUF012 - Litestar's declaration style

    @get("/", operation_id="listPools", summary="Guests online and how many wait in each pool")
    async def counts(self, pools: NamedDependency[Pools]) -> PoolsOut:
        return pools_view(await pools.snapshot())

    @post(
        "/{pool:str}/entry",
        operation_id="enterPool",
        summary="Wait in a quick-play pool until a table forms",
        status_code=201,
        security=BEARER,
        responses=error_responses(
            "not_found", "ranked_paused", "already_waiting", "seated_elsewhere", "bad_wait"
        ),
    )
    async def enter(
        self,
        pool: FromPath[str],
        data: JSONBody[EnterPool],
        pools: NamedDependency[Pools],
        player: CurrentPlayer,
    ) -> PoolEntryOut:
        kind = kind_named(pool)
        cpu_after: int | None
        if isinstance(data.cpu_after, msgspec.UnsetType):
            cpu_after = None if kind.ranked else pl.CPU_WAITS[0]
        else:
            cpu_after = data.cpu_after
        entry, waiting = await pools.enter(player, pool, cpu_after, data.client_seed)
        return entry_view(kind, entry, waiting, time.time())

    @delete(
        "/{pool:str}/entry",
        operation_id="leavePool",
        summary="Stop waiting in a quick-play pool",
        security=BEARER,
        responses=error_responses("not_found", "not_waiting"),
    )
    async def leave(
        self, pool: FromPath[str], pools: NamedDependency[Pools], player: CurrentPlayer
    ) -> None:
        await pools.leave(player, pool)
