"""Quick play's request bodies and responses: entering a pool, the pools' counts, a
guest's wait."""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.settings import CpuWait
from services.match.schemas import Body, ClientSeed

PoolName = Literal["2-casual", "2-ranked", "4-casual", "4-ranked"]


class EnterPool(Body):
    """Wait in a quick-play pool. `cpu_after`: casual pools only, the seconds you accept
    to wait before CPUs fill the table (10 or 30; null: people only; unset: 10); ranked
    pools are people only (unset or null)."""

    cpu_after: CpuWait | msgspec.UnsetType | None = msgspec.UNSET
    client_seed: ClientSeed = ""


class PoolEntryOut(msgspec.Struct, kw_only=True):
    """A player's wait in a pool. `entered_at`: seconds since the epoch; `window`: ranked
    only, the rating range accepted now either side of `rating` (it widens with the wait);
    `waiting`: how many wait in this pool."""

    pool: PoolName
    seats: int
    ranked: bool
    entered_at: float
    cpu_after: int | None
    rating: float
    window: float | None
    waiting: int


class PoolCountOut(msgspec.Struct, kw_only=True):
    """How many wait in one pool."""

    pool: PoolName
    seats: int
    ranked: bool
    waiting: int


class PoolsOut(msgspec.Struct, kw_only=True):
    """Quick play now: guests online (a lobby or a table open) and each pool's queue."""

    online: int
    pools: list[PoolCountOut]
