"""`ludo bench limits`: what a per-address budget shared by every instance costs a request.

The request path's budget check (`limits_middleware` of services/shared/limits.py around
an ASGI app that answers at once: what every request pays before its handler) is run
`--requests` times by `--tasks` concurrent tasks, from `--addresses` client addresses
(each under its budget: every check takes), against four stores in interleaved
`--rounds`, so that each sees the same machine:

- `memory`: the per-process token buckets (the baseline: a budget per instance);
- `postgres`: `RateStore` (services/shared/rate_store.py), one `INSERT … ON CONFLICT DO
  UPDATE` per check on the UNLOGGED `rate_buckets` of a scratch database;
- `postgres-logged`: the same with the table SET LOGGED (what the WAL would cost);
- `redis`: the same GCRA as a Lua script (`EVALSHA`) on the redis-server of `--redis`
  (redis-py's asyncio client, a pool as large as `--tasks`); skipped, and said so, when
  redis-py is not installed or the server does not answer.

Per store: checks a second (wall), this process's CPU per check, the store server's CPU
per check (PostgreSQL's process tree with psutil; Redis's `INFO cpu`), and for
PostgreSQL the statements (`xact_commit`), rows updated (HOT among them) and WAL bytes per
check. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any, Final, cast

from benchmarks.common import BenchError, loadavg, scratch_db
from benchmarks.harness import Bench, Figures, Say
from benchmarks.service_process import cpu_seconds, postgresql_pid
from ludo_cli.arguments import positive_int
from services.shared.limits import Limits, limits_middleware
from services.shared.rate_store import RateStore, Taken
from services.shared.settings import Settings

__all__ = ["BENCH", "RedisStore"]

STORES: Final = ("memory", "postgres", "postgres-logged", "redis")

# The GCRA of services/shared/rate_store.py, in Redis: the key holds `tat` (seconds,
# the server's clock); it expires when the bucket is full again (no sweep needed).
_LUA: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local step, per = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local auth = redis.call('GET', KEYS[2])
local new = math.max(tat, now) + step
if new <= now + per + 1e-6 then
  redis.call('SET', KEYS[1], tostring(new), 'PX', math.ceil((new - now) * 1000))
  return {'1', tostring(now), tostring(tat), auth or ''}
end
return {'0', tostring(now), tostring(tat), auth or ''}
"""


class RedisStore:
    """`RateStore.take` on Redis (the bench's candidate; the product uses PostgreSQL)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.script = client.register_script(_LUA)

    async def take(self, budget: str, client: str, count: int, per: float) -> Taken | None:
        step = per / count
        took, now, tat, auth = await self.script(
            keys=[f"rate:{budget}:{client}", f"rate:auth:{client}"], args=[step, per]
        )
        now_s, tat_s = float(now), float(tat)
        wait = 0.0 if took == b"1" else max(step, max(tat_s, now_s) + step - now_s - per)
        return Taken(wait, float(auth) if auth else None, now_s)

    def background(self, work: Any) -> None:
        asyncio.get_running_loop().create_task(work)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=positive_int, default=20_000, help="checks per store")
    parser.add_argument("--tasks", type=positive_int, default=16, help="concurrent requests")
    parser.add_argument("--addresses", type=positive_int, default=2_000, help="client addresses")
    parser.add_argument("--rounds", type=positive_int, default=4, help="interleaved rounds")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15", help="redis URL")


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _drive(limits: Limits, requests: int, tasks: int, addresses: int) -> int:
    """Run `requests` checks; how many were refused (0 when every address is under its
    budget, as the bench intends)."""
    app = limits_middleware(_ok, limits)
    refused = 0

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def worker(first: int) -> None:
        nonlocal refused
        for n in range(first, requests, tasks):
            scope: Any = {
                "type": "http",
                "method": "GET",
                "path": "/api/parties",
                "client": (f"10.{n % addresses // 250}.{n % 250}.1", 1),
            }
            status: list[int] = []

            async def send(message: Any, status: list[int] = status) -> None:
                if message["type"] == "http.response.start":
                    status.append(message["status"])

            await app(scope, receive, send)
            refused += status == [429]

    await asyncio.gather(*(worker(i) for i in range(tasks)))
    return refused


async def _pg_counters(engine: Any) -> dict[str, float]:
    import sqlalchemy as sa

    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT (SELECT xact_commit FROM pg_stat_database"
                    "        WHERE datname = current_database()),"
                    " (SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'rate_buckets'),"
                    " (SELECT n_tup_hot_upd FROM pg_stat_user_tables"
                    "        WHERE relname = 'rate_buckets'),"
                    " pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
                )
            )
        ).one()
        await conn.execute(sa.text("SELECT pg_stat_force_next_flush()"))
    return dict(zip(("statements", "updated", "hot", "wal"), map(float, row), strict=True))


async def _backends_gone(engine: Any) -> None:
    import sqlalchemy as sa

    for _ in range(200):
        async with engine.connect() as conn:
            others = await conn.scalar(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        await engine.dispose()
        if not others:
            return
        await asyncio.sleep(0.05)  # a bench: polling the server until its backends exit


async def _redis_cpu(client: Any) -> float:
    info = await client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


async def _measure(args: argparse.Namespace, url: str, say: Say) -> Figures:
    import sqlalchemy as sa

    from services.shared.database import create_engine

    settings = Settings(data_dir=Settings.from_env().data_dir, rate_limit=1_000_000)
    engine = create_engine(url, settings)
    redis_client = await _redis(args.redis, args.tasks, say)
    pg_pid = postgresql_pid(url)
    stores = [s for s in STORES if s != "redis" or redis_client is not None]
    totals: dict[str, dict[str, float]] = {s: {} for s in stores}
    try:
        for round_ in range(args.rounds):
            for store in stores:
                limits = Limits(settings)
                if store.startswith("postgres"):
                    logged = "LOGGED" if store == "postgres-logged" else "UNLOGGED"
                    async with engine.begin() as conn:
                        await conn.execute(sa.text("TRUNCATE rate_buckets"))
                        await conn.execute(sa.text(f"ALTER TABLE rate_buckets SET {logged}"))
                    limits.store = RateStore(engine)
                elif store == "redis":
                    await redis_client.flushdb()
                    limits.store = cast(RateStore, RedisStore(redis_client))
                before_pg = await _pg_counters(engine)
                before_redis = await _redis_cpu(redis_client) if redis_client else 0.0
                server = {"pg": [pg_pid]} if pg_pid else {}
                before_cpu = cpu_seconds(server)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                refused = await _drive(limits, args.requests, args.tasks, args.addresses)
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                # The backends write their statistics when they exit: counted whole.
                await engine.dispose()
                await _backends_gone(engine)
                after_cpu = cpu_seconds(server)
                after_pg = await _pg_counters(engine)
                sums = totals[store]
                for key, value in (
                    ("wall", wall),
                    ("cpu", cpu),
                    ("refused", refused),
                    ("pg_cpu", after_cpu.get("pg", 0.0) - before_cpu.get("pg", 0.0)),
                    *((f"pg_{k}", after_pg[k] - before_pg[k]) for k in after_pg),
                ):
                    sums[key] = sums.get(key, 0.0) + value
                if redis_client is not None:
                    after_redis = await _redis_cpu(redis_client)
                    sums["redis_cpu"] = sums.get("redis_cpu", 0.0) + after_redis - before_redis
                say(f"round {round_ + 1}: {store} {args.requests / wall:,.0f} checks/s")
    finally:
        await engine.dispose()
        if redis_client is not None:
            await redis_client.aclose()
    return _figures(args, totals)


def _figures(args: argparse.Namespace, totals: dict[str, dict[str, float]]) -> Figures:
    n = args.requests * args.rounds
    base = totals["memory"]
    result: dict[str, Any] = {}
    for store, sums in totals.items():
        us = 1e6 / n
        figures = {
            "checks_per_s": n / sums["wall"],
            "app_cpu_us": sums["cpu"] * us,
            "app_cpu_vs_memory": sums["cpu"] / base["cpu"],
            "refused": int(sums["refused"]),
        }
        if store.startswith("postgres"):
            figures |= {
                "server_cpu_us": sums["pg_cpu"] * us,
                "statements_per_check": sums["pg_statements"] / n,
                "updates_per_check": sums["pg_updated"] / n,
                "hot_share": sums["pg_hot"] / max(1.0, sums["pg_updated"]),
                "wal_bytes_per_check": sums["pg_wal"] / n,
            }
        elif store == "redis":
            figures["server_cpu_us"] = sums["redis_cpu"] * us
        result[store] = figures
    return {
        "config": {k: getattr(args, k) for k in ("requests", "tasks", "addresses", "rounds")},
        "cpus": os.cpu_count(),
        "loadavg": loadavg(),
        "stores": result,
    }


async def _redis(url: str, tasks: int, say: Say) -> Any:
    try:
        import redis.asyncio as aioredis
    except ImportError:
        say("redis: skipped (redis-py is not installed: pip install redis)")
        return None
    client = aioredis.Redis.from_url(url, max_connections=tasks)
    try:
        await client.ping()
    except (OSError, aioredis.RedisError) as exc:
        say(f"redis: skipped ({type(exc).__name__}: is redis-server running at {url}?)")
        await client.aclose()
        return None
    return client


@contextlib.contextmanager
def _database(say: Say) -> Iterator[str]:
    from services.shared.database import database_url
    from services.shared.settings import SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    with database_url(settings) as server, scratch_db(server, "ludo_bench_limits", say=say) as url:
        yield url


def measure(args: argparse.Namespace, say: Say) -> Figures:
    with _database(say) as url:
        return asyncio.run(_measure(args, url, say))


def print_table(r: Figures) -> None:
    cfg = r["config"]
    print(
        f"ludo bench limits — {cfg['requests']:,} checks x {cfg['rounds']} rounds per store, "
        f"{cfg['tasks']} tasks, {cfg['addresses']:,} addresses; {r['cpus']} CPUs, "
        f"load average {r['loadavg']}"
    )
    print(
        f"{'store':<17}{'checks/s':>10}{'app µs':>9}{'vs memory':>11}{'server µs':>11}"
        f"{'stmts':>7}{'HOT':>6}{'WAL B':>7}{'refused':>9}"
    )
    for store, f in r["stores"].items():
        server = f.get("server_cpu_us")
        stmts, hot, wal = (
            f.get("statements_per_check"),
            f.get("hot_share"),
            f.get("wal_bytes_per_check"),
        )
        print(
            f"{store:<17}{f['checks_per_s']:>10,.0f}{f['app_cpu_us']:>9.1f}"
            f"{f['app_cpu_vs_memory']:>10.1f}x{_or(server, '.1f'):>11}"
            f"{_or(stmts, '.2f'):>7}{_or(hot, '.0%'):>6}{_or(wal, '.0f'):>7}{f['refused']:>9}"
        )


def _or(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


BENCH = Bench(
    name="limits",
    help="the per-address budget check: in memory vs PostgreSQL vs Redis (shared counts)",
    options=_options,
    measure=measure,
    table=print_table,
)
