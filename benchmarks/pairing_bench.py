"""`ludo bench pairing`: quick play under a rush, through two instances behind HAProxy.

What runs: a private embedded PostgreSQL, two match instances and one ranking instance
behind HAProxy (ludo_cli/cluster.py), and N guests (`--clients`, 400) who each open a lobby
socket through the balancer, say hello, and enter a pool at a moment drawn uniformly over
`--spread` seconds (3): 30% the 2-player casual pool, 30% the 4-player casual one (casual
guests accept CPUs after 10 s, so nobody is left over), 25% the 2-player ranked pool, 15%
the 4-player ranked one (ranked counts rounded to whole tables). Ranked guests are given
ratings first (rows of the bench's own scratch database, drawn from N(1500, 100) clipped to
1300-1700, so every pair fits once the windows are widest).

Measured: each guest's wait from the entry's acknowledgement to its `seated` frame, per
pool (p50, p99), split into tables of people and tables CPUs filled; the entry's own
latency (request to acknowledgement); the rating spread of
each ranked table (highest minus lowest). Checked: everyone seated, every table full, no
guest at two tables (the pools' `TableFormed` events and the parties' seats agree with
the frames). The baseline, in the same run through the same balancer: two guests seated
by hand (create a party, join it, start it), the fastest a table can be had without the
pools; the pairing wait is printed as a multiple of it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx
import msgspec
import websockets

from benchmarks.common import BenchError, scratch_cluster
from benchmarks.harness import Bench, Figures, Say, to_stderr
from ludo_cli.arguments import positive_float, positive_int

__all__ = ["BENCH", "Guest", "PoolGuest", "bench", "measure"]

SHARES = {"2-casual": 0.30, "4-casual": 0.30, "2-ranked": 0.25, "4-ranked": 0.15}
SEATED_WITHIN = 120.0  # s: at most, for the last guest to be seated
MANUAL_TABLES = 20  # tables seated by hand for the baseline


class Guest:
    """A guest of the public API (`become`: `POST /api/players`), its bearer header, and
    the socket it holds with the task that reads it (`close` ends both)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.player_id = ""
        self.token = ""
        self._socket: Any = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def become(self, http: httpx.AsyncClient) -> None:
        r = await http.post("/api/players", json={"name": self.name})
        if r.status_code != 201:
            raise BenchError(f"a guest was refused ({r.status_code}): {r.text[:200]}")
        body = r.json()
        self.player_id, self.token = body["id"], body["token"]

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)


class PoolGuest(Guest):
    """A guest with a lobby socket open (said hello), who may enter a pool and waits for
    the `seated` frame; `wait` is from the entry's acknowledgement to that frame."""

    def __init__(self, base: str, name: str) -> None:
        super().__init__(name)
        self.base = base
        self.pool = ""
        self.entered = 0.0
        self.seated: dict[str, Any] | None = None
        self.wait = float("nan")
        self.entry = float("nan")  # the entry's own latency: request to acknowledgement
        self.served_by: dict[str, str] = {}  # the instance of the socket and of the entry
        self._frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def connect(self, http: httpx.AsyncClient) -> None:
        """Become a guest, open the lobby socket and say hello."""
        await self.become(http)
        url = self.base.replace("http://", "ws://") + "/ws/lobby"
        self._socket = await websockets.connect(url, max_size=None)
        self.served_by["socket"] = self._socket.response.headers.get("X-Served-By", "?")
        self._reader = asyncio.create_task(self._read())
        await self._socket.send(msgspec.json.encode({"type": "hello", "token": self.token}))
        await self.frame(lambda f: f["type"] == "hello")

    async def _read(self) -> None:
        async for raw in self._socket:
            frame = msgspec.json.decode(raw)
            if frame["type"] == "seated" and self.seated is None:
                self.seated = frame
                self.wait = time.monotonic() - self.entered
            await self._frames.put(frame)

    async def frame(self, done: Any, seconds: float = SEATED_WITHIN) -> dict[str, Any]:
        """The next frame that satisfies `done` (earlier ones are dropped)."""
        async with asyncio.timeout(seconds):
            while True:
                frame = await self._frames.get()
                if done(frame):
                    return frame

    async def enter(self, http: httpx.AsyncClient, pool: str, **body: Any) -> None:
        """Enter `pool` (201 expected)."""
        self.pool = pool
        self.entered = time.monotonic()
        url = f"/api/pools/{pool}/entry"
        try:
            r = await http.post(url, json=body, headers=self.auth)
        except httpx.TransportError:
            # A kept-alive connection the server closed as it was reused: once more; an
            # entry the lost answer had made is `already_waiting`, which is as good.
            r = await http.post(url, json=body, headers=self.auth)
            if r.status_code == 409 and r.json()["error"] == "already_waiting":
                r.status_code = 201
        if r.status_code != 201:
            raise BenchError(f"an entry was refused ({r.status_code}): {r.text[:200]}")
        acknowledged = time.monotonic()
        self.entry, self.entered = acknowledged - self.entered, acknowledged
        self.served_by["entry"] = r.headers.get("X-Served-By", "?")

    async def until_seated(self, seconds: float = SEATED_WITHIN) -> dict[str, Any]:
        if self.seated is None:
            await self.frame(lambda f: f["type"] == "seated", seconds)
        assert self.seated is not None
        return self.seated


def plan(clients: int, rng: random.Random) -> list[str]:
    """Each guest's pool, shuffled: ranked counts rounded down to whole tables."""
    pools: list[str] = []
    for pool, share in SHARES.items():
        n = int(clients * share)
        seats = int(pool[0])
        if pool.endswith("ranked"):
            n -= n % seats
        pools += [pool] * n
    pools += ["2-casual"] * (clients - len(pools))
    rng.shuffle(pools)
    return pools


def _quantiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"n": len(ordered), "p50": statistics.median(ordered), "p99": p99, "max": ordered[-1]}


# A rating row as the ranking service writes one (openskill, the default model): the
# player-facing rating is 1500 + 30 (mu - 25) (domain/ratings.py).
_RATING = """
    INSERT INTO ratings (model, player_id, mu, sigma, volatility, rating, provisional,
                         matches, last_match_at, name)
    VALUES ('openskill', :player_id, :mu, 25.0 / 3, 0, :rating, true, 1, now(), 'bench')
"""


async def _give_ratings(database_url: str, ratings: dict[str, float]) -> None:
    """The bench's ranked guests' ratings, written where the ranking service keeps them
    (the scratch database is the bench's own)."""
    import sqlalchemy as sa

    from services.shared.database import create_engine

    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            rows = [
                {"player_id": p, "mu": 25.0 + (r - 1500.0) / 30.0, "rating": r}
                for p, r in ratings.items()
            ]
            if rows:
                await conn.execute(sa.text(_RATING), rows)
    finally:
        await engine.dispose()


async def _manual_seatings(http: httpx.AsyncClient, tables: int) -> list[float]:
    """The baseline: seconds for two guests to sit at a started table by hand."""
    times = []
    for i in range(tables):
        a = (await http.post("/api/players", json={"name": f"host{i}"})).json()
        b = (await http.post("/api/players", json={"name": f"join{i}"})).json()
        ha = {"Authorization": f"Bearer {a['token']}"}
        hb = {"Authorization": f"Bearer {b['token']}"}
        started = time.monotonic()
        party = (await http.post("/api/parties", json={"seats": 2}, headers=ha)).json()
        await http.post(f"/api/parties/{party['id']}/join", json={}, headers=hb)
        r = await http.post(f"/api/parties/{party['id']}/start", headers=ha)
        if r.status_code != 201:
            raise BenchError(f"a manual start failed ({r.status_code}): {r.text[:200]}")
        times.append(time.monotonic() - started)
    return times


async def _rush(
    base: str, database_url: str, clients: int, spread: float, seed: int, say: Say
) -> Figures:
    rng = random.Random(seed)
    pools = plan(clients, rng)
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as http:
        say(f"baseline: two guests seated by hand, {MANUAL_TABLES} tables ...")
        manual = await _manual_seatings(http, MANUAL_TABLES)
        say(f"{clients} guests: lobby sockets through the balancer ...")
        guests = [PoolGuest(base, f"g{i}") for i in range(clients)]
        batch = 50
        for start in range(0, clients, batch):
            await asyncio.gather(*(g.connect(http) for g in guests[start : start + batch]))
        ratings = {
            g.player_id: min(1700.0, max(1300.0, rng.gauss(1500.0, 100.0)))
            for g, pool in zip(guests, pools, strict=True)
            if pool.endswith("ranked")
        }
        await _give_ratings(database_url, ratings)
        say(f"entering within {spread:.0f} s ...")
        try:

            async def one(guest: PoolGuest, pool: str, delay: float) -> None:
                await asyncio.sleep(delay)  # the rush's arrival time, not a synchronisation
                body = {} if pool.endswith("ranked") else {"cpu_after": 10}
                await guest.enter(http, pool, **body)
                await guest.until_seated()

            await asyncio.gather(
                *(
                    one(g, pool, rng.uniform(0.0, spread))
                    for g, pool in zip(guests, pools, strict=True)
                )
            )
        finally:
            await asyncio.gather(*(g.close() for g in guests))
        say("checking every seating ...")
        parties: dict[str, list[str]] = {}
        for guest in guests:
            assert guest.seated is not None
            parties.setdefault(guest.seated["party_id"], []).append(guest.player_id)
        problems = await _check(http, guests, parties, ratings)
    return _figures(guests, parties, ratings, manual, problems)


async def _check(
    http: httpx.AsyncClient,
    guests: list[PoolGuest],
    parties: dict[str, list[str]],
    ratings: dict[str, float],
) -> list[str]:
    problems = []
    seats_of: Counter[str] = Counter()
    for party_id, players in parties.items():
        party = (await http.get(f"/api/parties/{party_id}")).json()
        seated = [s["player_id"] for s in party["seats"] if s["player_id"] is not None]
        seats_of.update(seated)
        if sorted(seated) != sorted(players):
            problems.append(f"party {party_id}: seats {seated} but frames {players}")
        if any(s["player_id"] is None and s["cpu"] is None for s in party["seats"]):
            problems.append(f"party {party_id} has an empty seat")
        if party["status"] != "playing":
            problems.append(f"party {party_id} is {party['status']}, not playing")
    twice = [p for p, n in seats_of.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} guests seated at two tables")
    missing = [g.player_id for g in guests if seats_of[g.player_id] != 1]
    if missing:
        problems.append(f"{len(missing)} guests not seated exactly once")
    return problems


def _people(guest: PoolGuest, parties: dict[str, list[str]]) -> int:
    """How many people sit at `guest`'s table."""
    return 0 if guest.seated is None else len(parties[guest.seated["party_id"]])


def _figures(
    guests: list[PoolGuest],
    parties: dict[str, list[str]],
    ratings: dict[str, float],
    manual: list[float],
    problems: list[str],
) -> Figures:
    by_pool: dict[str, Any] = {}
    for pool in SHARES:
        seats = int(pool[0])
        mine = [g for g in guests if g.pool == pool]
        people = [g.wait for g in mine if g.seated and len(parties[g.seated["party_id"]]) == seats]
        cpus = [g.wait for g in mine if g.seated and len(parties[g.seated["party_id"]]) < seats]
        by_pool[pool] = {
            "guests": len(mine),
            "people": _quantiles(people),
            "cpus": _quantiles(cpus),
        }
    spreads = [
        max(ratings[p] for p in players) - min(ratings[p] for p in players)
        for players in parties.values()
        if all(p in ratings for p in players)
    ]
    baseline = statistics.median(manual)
    people_waits = [
        g.wait for g in guests if g.seated and len(parties[g.seated["party_id"]]) == int(g.pool[0])
    ]
    return {
        "guests": len(guests),
        "tables": len(parties),
        "pools": by_pool,
        "ranked_spread": _quantiles(spreads),
        "entry": _quantiles([g.entry for g in guests]),
        "manual_seating": _quantiles(manual),
        "people_wait_over_manual_p50": statistics.median(people_waits) / baseline,
        "slowest": [
            {"pool": g.pool, "wait": round(g.wait, 2), **g.served_by}
            for g in sorted(guests, key=lambda g: -g.wait)[:12]
        ],
        "problems": problems,
    }


def bench(
    *, clients: int = 400, spread: float = 3.0, seed: int = 1, say: Say = to_stderr
) -> Figures:
    """Runs the whole bench; returns the figures (see the module docstring)."""
    with scratch_cluster("ludo-pairing-", env={"LUDO_CPU_DELAY": "0.5"}, say=say) as (cluster, pg):
        return asyncio.run(_rush(cluster.url, pg.url, clients, spread, seed, say))


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=positive_int, default=400, help="guests (N)")
    parser.add_argument(
        "--spread", type=positive_float, default=3.0, help="seconds over which they enter"
    )
    parser.add_argument("--seed", type=int, default=1, help="the rush's random seed")


def measure(args: argparse.Namespace, say: Say) -> Figures:
    return bench(clients=args.clients, spread=args.spread, seed=args.seed, say=say)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:6.2f}"


def print_table(figures: Figures) -> None:
    print(f"{figures['guests']} guests, {figures['tables']} tables")
    head = ("pool", "guests", "people p50", "p99", "CPUs n", "p50", "p99")
    print("{:10} {:>6}  {:>10} {:>6}  {:>6} {:>6} {:>6}".format(*head))
    for pool, row in figures["pools"].items():
        people, cpus = row["people"], row["cpus"]
        print(
            f"{pool:10} {row['guests']:6}  {_seconds(people['p50']):>10} "
            f"{_seconds(people['p99']):>6}  {cpus['n']:6} {_seconds(cpus['p50']):>6} "
            f"{_seconds(cpus['p99']):>6}"
        )
    spread = figures["ranked_spread"]
    print(
        f"ranked tables' rating spread: p50 {_seconds(spread['p50'])}, "
        f"p99 {_seconds(spread['p99'])}, max {_seconds(spread['max'])}"
    )
    entry = figures["entry"]
    print(f"an entry's own latency: p50 {_seconds(entry['p50'])} s, p99 {_seconds(entry['p99'])} s")
    manual = figures["manual_seating"]
    print(f"baseline, two guests seated by hand: p50 {_seconds(manual['p50'])} s")
    print(f"people tables' wait p50 / manual p50: {figures['people_wait_over_manual_p50']:.1f}x")
    for problem in figures["problems"]:
        print(f"PROBLEM: {problem}")


BENCH = Bench(
    name="pairing",
    help="quick play: N guests rush the pools through two instances; waits, spreads, checks",
    options=_options,
    measure=measure,
    table=print_table,
    failed=lambda figures: bool(figures["problems"]),
)
