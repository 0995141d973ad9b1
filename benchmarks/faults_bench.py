"""`ludo bench faults`: the site under load while its parts fail, then every book checked.

What runs: a private embedded PostgreSQL (in a scratch folder: the bench stops and starts
it), two match and two ranking instances behind HAProxy (ludo_cli/cluster.py), and K
ranked two-guest matches played at once by the fault-tolerant clients of
benchmarks/resilient.py, each match followed by a socket through the balancer; a new
match starts whenever one ends. After a warm-up, the faults come one by one, with
`--settle` seconds of load after each:

- `kill-match`: kill -9 of a match instance (started again 5 s later, as a supervisor does);
- `pg-fast`, `pg-immediate`: PostgreSQL restarted (`pg_ctl stop -m fast|immediate`, start);
- `pg-outage`: PostgreSQL stopped for `--outage` seconds (10), then started;
- `kill-consumer`: kill -9 of the consuming ranking instance while it is inside a batch
  (its session in a transaction), started again 5 s later.

With `--ha`, PostgreSQL runs under Patroni instead (ludo_cli/ha.py: etcd, three nodes with
synchronous replication, HAProxy asking Patroni who is primary), and the faults are the
primary's, each `--repeat` times, the cluster whole again (three nodes streaming) before
the next:

- `kill-postmaster`: kill -9 of the primary's postmaster (Patroni lives on): the
  synchronous standby is promoted, the old primary rejoins as a standby (rewound);
- `stop-node`: kill -9 of the primary's Patroni and postmaster (a machine lost): the
  standby is promoted once the leader key expires (Patroni's `ttl`), the node is started
  again and rejoins;
- `switchover`: a planned switchover to the synchronous standby (Patroni's REST API).

Under `--ha` the clients honour `Retry-After`: after a 503 they wait the seconds it says
before sending the command again (with its key), as the site's pages do. For each fault:
the moment the database could take writes again (`writable`: a probe commits an INSERT
every 20 ms on each other node's own PostgreSQL port, not through HAProxy; the first
commit), the time from the fault to the first command acknowledged after the longest
stretch without one, their ratio (target ≤ `TARGET_ACK_RATIO`: the clients' first
acknowledgement within a fifth more than the database's own recovery), p50/p99 over the
repeats, that stretch, what the clients were answered meanwhile (503s; 500s must be none)
and the time until the old primary streams again.

Then the load stops and the books are checked (`check_matches`): no acknowledged command
lost, none applied twice, no event without a command (but the scheduler's), every socket
saw each version once and in order and caught up with its stream (none left silent), every
match's audit holds (hash chain, dice, rules), and every finished ranked match is rated
exactly once. Printed: commands/s before, during and after each fault, the seconds until
the first command after it was acknowledged, and the problems (exit status 1 if any).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import BenchError, percentile, scratch_cluster
from benchmarks.harness import Bench, Figures, Say, print_problems, to_stderr
from benchmarks.resilient import Ack, Books, Follower, MatchPlay, call, check_matches
from benchmarks.service_process import cpu_seconds
from domain.streams import match_id_of
from ludo_cli.arguments import positive_float, positive_int
from ludo_cli.cluster import Cluster, free_port
from ludo_cli.ha import NODES, HaCluster

__all__ = ["BENCH", "FAULTS", "HA_FAULTS", "TARGET_ACK_RATIO", "bench", "first_write", "measure"]

FAULTS = ("kill-match", "pg-fast", "pg-immediate", "pg-outage", "kill-consumer")
HA_FAULTS = ("kill-postmaster", "stop-node", "switchover")
RESTART_AFTER = 5.0  # s: a killed instance is started again after this
# Under --ha: the first acknowledged command at most this many times the moment the new
# primary first commits a write (both from the fault).
TARGET_ACK_RATIO = 1.2
PROBE_EVERY = 0.02  # s between two write attempts of the probe on one node
PROBE_TABLE = "ludo_write_probe"  # in the `postgres` database, not the site's
CATCH_UP = 120.0  # s: at most, for the sockets and the ranking to catch up at the end


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=8, help="concurrent matches (K)")
    parser.add_argument(
        "--faults",
        default=None,
        help=f"comma-separated, in order (default all: {','.join(FAULTS)}; with --ha: "
        f"{','.join(HA_FAULTS)})",
    )
    parser.add_argument(
        "--ha",
        action="store_true",
        help="PostgreSQL under Patroni (three nodes, synchronous replication): "
        "the primary's faults",
    )
    parser.add_argument(
        "--repeat", type=positive_int, default=3, help="with --ha: runs of each fault"
    )
    parser.add_argument("--warmup", type=positive_float, default=10.0, help="seconds before")
    parser.add_argument(
        "--settle", type=positive_float, default=15.0, help="seconds of load after each fault"
    )
    parser.add_argument(
        "--outage", type=positive_float, default=10.0, help="seconds pg-outage keeps it down"
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    known = HA_FAULTS if args.ha else FAULTS
    faults = [f.strip() for f in (args.faults or ",".join(known)).split(",") if f.strip()]
    unknown = sorted(set(faults) - set(known))
    if unknown:
        raise BenchError(f"unknown fault(s) {unknown}; known: {known}")
    if args.ha:
        faults = [fault for fault in faults for _ in range(args.repeat)]
    return bench(
        matches=args.matches,
        faults=faults,
        warmup=args.warmup,
        settle=args.settle,
        outage=args.outage,
        ha=args.ha,
        say=say,
    )


def bench(
    *,
    matches: int = 8,
    faults: list[str] | None = None,
    warmup: float = 10.0,
    settle: float = 15.0,
    outage: float = 10.0,
    ha: bool = False,
    say: Say = to_stderr,
) -> dict[str, Any]:
    """Runs the whole bench; returns the figures (see the module docstring)."""
    if ha:
        with _ha_stack(say) as (cluster, db):
            report = asyncio.run(
                _run(cluster, db, matches, faults or list(HA_FAULTS), warmup, settle, outage, say)
            )
        report["ha"] = _ha_summary(report["faults"])
        return report
    with scratch_cluster(
        "ludo-faults-", env={"LUDO_CPU_DELAY": "0"}, ranking_instances=2, say=say
    ) as (cluster, pg):
        return asyncio.run(
            _run(cluster, pg, matches, faults or list(FAULTS), warmup, settle, outage, say)
        )


@contextlib.contextmanager
def _ha_stack(say: Say) -> Iterator[tuple[Cluster, HaCluster]]:
    """Patroni's three nodes in a scratch folder, migrated, and two match and two ranking
    instances on its read-write port behind HAProxy, with the environment of
    `scratch_cluster` (no per-client budgets: one address is every client here)."""
    from services.shared.database import migrate

    with HaCluster.scratch("ludo-faults-ha-", say=say) as db:
        migrate(db.url)
        _create_probe_table(db)
        env = {
            "LUDO_LOG_FORMAT": "json",
            "LUDO_DATA_DIR": str(db.home),
            "LUDO_RATE_LIMIT": "0",
            "LUDO_GUEST_LIMIT": "0",
            "LUDO_AUTH_FAIL_LIMIT": "0",
            "LUDO_CPU_DELAY": "0",
            "LUDO_DATABASE_READ_URL": db.read_url,
        }
        with Cluster(
            db.url,
            port=free_port(),
            ranking_port=free_port(),
            match_instances=2,
            ranking_instances=2,
            env=env,
            logs=db.home / "logs",
            say=say,
        ) as cluster:
            yield cluster, db


def _ha_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per fault kind over its runs: p50/p99 of the moment the database could take writes,
    of the time to the first acknowledged command, of their ratio and of the stretch
    without an acknowledgement; the answers the clients got meanwhile, summed."""
    summary: dict[str, Any] = {}
    for kind in dict.fromkeys(row["fault"] for row in rows):
        runs = [row for row in rows if row["fault"] == kind]
        first = sorted(r["first_ack_after_fault_s"] for r in runs if r["first_ack_after_fault_s"])
        gaps = sorted(r["no_ack_s"] for r in runs)
        writable = sorted(r["writable_after_s"] for r in runs if r["writable_after_s"])
        ratios = sorted(r["ack_over_writable"] for r in runs if r["ack_over_writable"])
        summary[kind] = {
            "runs": len(runs),
            "writable_p50_s": _round(percentile(writable, 0.5)) if writable else None,
            "writable_p99_s": _round(percentile(writable, 0.99)) if writable else None,
            "first_ack_p50_s": _round(percentile(first, 0.5)) if first else None,
            "first_ack_p99_s": _round(percentile(first, 0.99)) if first else None,
            "ack_over_writable_p50": _round(percentile(ratios, 0.5)) if ratios else None,
            "ack_over_writable_max": ratios[-1] if ratios else None,
            "target_ratio": TARGET_ACK_RATIO,
            "no_ack_p50_s": _round(percentile(gaps, 0.5)),
            "no_ack_p99_s": _round(percentile(gaps, 0.99)),
            "answers": {
                status: sum(r["answers"].get(status, 0) for r in runs)
                for status in sorted({status for r in runs for status in r["answers"]} | {"500"})
            },
            "rejoined_p50_s": _round(percentile(sorted(r["rejoined_s"] for r in runs), 0.5)),
        }
    return summary


def _create_probe_table(db: HaCluster) -> None:
    import psycopg

    dsn = f"host={db.host} port={db.ports['rw']} user=postgres dbname=postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {PROBE_TABLE} (at timestamptz NOT NULL)")


async def first_write(db: HaCluster, nodes: list[str], began: float) -> tuple[str, float]:
    """The first of `nodes` to commit an INSERT, asked directly on each one's PostgreSQL
    port every `PROBE_EVERY` s once it is out of recovery (promoted; a commit waits for
    the synchronous standby, as the site's do), and when: seconds from `began`. Cancel it
    to give up."""

    async def probe(node: str) -> tuple[str, float]:
        import psycopg

        dsn = (
            f"host={db.host} port={db.ports[f'{node}_pg']} user=postgres dbname=postgres"
            " connect_timeout=2"
        )
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                try:
                    if conn is None or conn.closed:
                        conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
                    # Asked first, so that a standby's refusals do not fill its log.
                    standby = await (await conn.execute("SELECT pg_is_in_recovery()")).fetchone()
                    if standby is not None and not standby[0]:
                        await conn.execute(f"INSERT INTO {PROBE_TABLE} (at) VALUES (now())")
                        return node, time.monotonic() - began
                except psycopg.Error:
                    if conn is not None and conn.broken:
                        await conn.close()
                        conn = None
                await asyncio.sleep(PROBE_EVERY)
        finally:
            if conn is not None:
                await conn.close()

    tasks = [asyncio.create_task(probe(node)) for node in nodes]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        return next(iter(done)).result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class _Load:
    """K match slots, each playing ranked matches one after another until `stop`."""

    def __init__(
        self, http: httpx.AsyncClient, ws_base: str, slots: int, honour_retry_after: bool
    ) -> None:
        self.http = http
        self.ws_base = ws_base
        self.books = Books(honour_retry_after=honour_retry_after)
        self.followers: list[Follower] = []
        self.stop = asyncio.Event()
        self.errors: list[str] = []
        self.tasks = [asyncio.create_task(self._slot()) for _ in range(slots)]

    async def _slot(self) -> None:
        while not self.stop.is_set():
            try:
                play = await MatchPlay(self.http, self.books, ranked=True).open()
                self.followers.append(Follower(self.ws_base, play.match_id).start())
                await play.play(self.stop)
            except (AssertionError, httpx.HTTPError) as error:
                # A command that no retry got through (the clients retry for 90 s).
                self.errors.append(f"{type(error).__name__}: {str(error)[:200]}")
                await asyncio.sleep(0.5)

    def acked_between(self, start: float, end: float) -> int:
        return sum(1 for a in self.books.acks if start <= a.at < end)

    def first_ack_after(self, moment: float) -> float | None:
        later = [a.at for a in self.books.acks if a.at >= moment]
        return min(later) - moment if later else None

    def recovered(self, fault: float, until: float) -> tuple[Ack | None, float]:
        """The first acknowledgement after the longest stretch without one that began
        after `fault` (a command in flight at the fault may still be acknowledged just
        after it); and that stretch's length in seconds."""
        acks = sorted((a for a in self.books.acks if fault <= a.at < until), key=lambda a: a.at)
        times = [fault, *(a.at for a in acks)]
        if len(times) < 2:
            return None, until - fault
        gap, end = max(
            (later - earlier, i) for i, (earlier, later) in enumerate(itertools.pairwise(times))
        )
        return acks[end], gap

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)


async def _run(
    cluster: Cluster,
    pg: Any,
    matches: int,
    faults: list[str],
    warmup: float,
    settle: float,
    outage: float,
    say: Callable[[str], None],
) -> dict[str, Any]:
    from services.ranking.ratings.consumer import leader_name
    from services.shared.database import create_engine

    engine = create_engine(pg.url)
    ha = pg if isinstance(pg, HaCluster) else None
    ws_base = cluster.url.replace("http://", "ws://")
    limits = httpx.Limits(max_connections=4 * matches)
    async with httpx.AsyncClient(base_url=cluster.url, timeout=30, limits=limits) as http:
        load = _Load(http, ws_base, matches, honour_retry_after=ha is not None)
        say(f"load: {matches} ranked matches at once through {cluster.url}; warm-up {warmup} s")
        # CPU per command, part by part, over the second half of the warm-up (no fault).
        await asyncio.sleep(warmup / 2)
        cpu_before, window_start = _cpu(cluster, pg), time.monotonic()
        await asyncio.sleep(warmup / 2)
        cpu_after, window_end = _cpu(cluster, pg), time.monotonic()
        steady = load.acked_between(window_start, window_end)
        cpu_ms = {
            part: round(1000 * (cpu_after[part] - cpu_before[part]) / max(steady, 1), 2)
            for part in cpu_before
            if part in cpu_after
        }
        rows = []
        for fault in faults:
            window = min(settle, 10.0)
            before = load.acked_between(time.monotonic() - window, time.monotonic()) / window
            say(f"fault: {fault} ...")
            retries_before = Counter(load.books.retries)
            errors_before = len(load.errors)
            began = time.monotonic()
            if ha is not None:
                rows.append(await _ha_fault(fault, ha, load, settle, say))
                answers = Counter(load.books.retries) - retries_before
                answers["500"] = sum(" 500 " in e for e in load.errors[errors_before:])
                rows[-1]["answers"] = dict(answers)
                continue
            what = await _inject(fault, cluster, pg, engine, outage, leader_name)
            ended = time.monotonic()
            say(f"fault: {fault}: {what}; {settle} s of load after it")
            await asyncio.sleep(settle)
            rows.append(
                {
                    "fault": fault,
                    "what": what,
                    "seconds": round(ended - began, 2),
                    "commands_per_s_before": round(before, 1),
                    "commands_per_s_during": round(
                        load.acked_between(began, ended) / max(ended - began, 0.1), 1
                    ),
                    "commands_per_s_after": round(
                        load.acked_between(ended, ended + settle) / settle, 1
                    ),
                    "first_ack_after_s": _round(load.first_ack_after(ended)),
                }
            )
        say("load: stopping; the sockets and the ranking catch up ...")
        await load.finish()
        report = await _check(http, load, engine)
    await engine.dispose()
    report["faults"] = rows
    report["steady_commands_per_s"] = round(steady / (window_end - window_start), 1)
    report["cpu_ms_per_command"] = cpu_ms
    report["matches_at_once"] = matches
    report["retries"] = dict(load.books.retries)
    report["problems"] = load.errors + report["problems"]
    latencies = sorted(load.books.latencies)
    report["command_p50_ms"] = _round(1000 * latencies[len(latencies) // 2]) if latencies else None
    report["command_p99_ms"] = (
        _round(1000 * latencies[int(len(latencies) * 0.99)]) if latencies else None
    )
    report["served_by"] = dict(load.books.served_by)
    report["loadavg"] = list(os.getloadavg())
    return report


async def _ha_fault(
    fault: str, ha: HaCluster, load: _Load, settle: float, say: Say
) -> dict[str, Any]:
    """One fault of the primary, `settle` seconds of load, then the old primary back as a
    streaming standby; the row of figures, its times from the fault."""
    old = await asyncio.to_thread(ha.primary)
    assert old is not None
    began = time.monotonic()
    # The other nodes' own ports, asked from the fault on (a switchover keeps the old
    # primary writable until it hands over: it is not asked).
    writable = asyncio.create_task(first_write(ha, [n for n in NODES if n != old], began))
    try:
        return await _ha_fault_figures(fault, ha, load, settle, say, old, began, writable)
    finally:
        writable.cancel()


async def _ha_fault_figures(
    fault: str,
    ha: HaCluster,
    load: _Load,
    settle: float,
    say: Say,
    old: str,
    began: float,
    writable: asyncio.Task[tuple[str, float]],
) -> dict[str, Any]:
    if fault == "kill-postmaster":
        ha.kill_postmaster(old)
        what = f"kill -9 of {old}'s postmaster"
    elif fault == "stop-node":
        await asyncio.to_thread(ha.stop_node, old)
        what = f"kill -9 of {old}'s Patroni and postmaster"
    elif fault == "switchover":
        await asyncio.to_thread(ha.switchover)
        what = f"switchover from {old}"
    else:
        raise ValueError(fault)
    while await asyncio.to_thread(ha.primary) in (None, old):
        await asyncio.sleep(0.1)
    promoted = time.monotonic() - began
    new = await asyncio.to_thread(ha.primary)
    if fault == "stop-node":
        await asyncio.to_thread(ha.start_node, old)
    say(f"fault: {what}: {new} promoted after {promoted:.1f} s; {settle} s of load")
    rejoined = asyncio.create_task(_rejoined(ha, began))
    await asyncio.sleep(settle)
    ack, gap = load.recovered(began, time.monotonic())
    first = None if ack is None else ack.at - began
    try:
        wrote_on, wrote_after = await asyncio.wait_for(writable, CATCH_UP)
    except TimeoutError:
        wrote_on, wrote_after = None, None
    rewinds = sum(
        (ha.home / "logs" / f"{node}.log").read_text().count("running pg_rewind") for node in NODES
    )
    return {
        "fault": fault,
        "what": what,
        "promoted": new,
        "promoted_after_s": _round(promoted),
        "writable_on": wrote_on,
        "writable_after_s": _round(wrote_after),
        "first_ack_after_fault_s": _round(first),
        # When that command was first sent: before the database took writes, it was held
        # (or sent again after a 503); after, it found the new primary at once.
        "first_ack_sent_after_fault_s": None if ack is None else _round(ack.sent - began),
        "ack_over_writable": (
            round(first / wrote_after, 2) if first is not None and wrote_after else None
        ),
        "no_ack_s": _round(gap),
        "rejoined_s": _round(await asyncio.wait_for(rejoined, CATCH_UP)),
        "pg_rewinds_so_far": rewinds,
    }


async def _rejoined(ha: HaCluster, began: float) -> float:
    """Seconds from `began` until all three nodes stream again (the old primary rejoined)."""
    while not await asyncio.to_thread(ha.ready, len(NODES)):
        await asyncio.sleep(0.2)
    return time.monotonic() - began


def _postmasters(db: Any) -> list[int]:
    if isinstance(db, HaCluster):
        return [pid for node in NODES if (pid := db.postmaster_pid(node)) is not None]
    return [int((Path(db.pgdata) / "postmaster.pid").read_text().split()[0])]


def _cpu(cluster: Cluster, pg: Any) -> dict[str, float]:
    """CPU seconds so far of each part: the load generator (this process), the match and
    the ranking instances, HAProxy, PostgreSQL (the postmaster and its backends), and
    the machine (busy time of all cores). Without psutil, only the load generator. Living
    processes only (`reaped=False`), as this bench's figures have always been taken."""
    balancer = [cluster.balancer] if cluster.balancer else []
    parts = {
        "match": [m.pid for m in cluster.match if m.alive()],
        "ranking": [r.pid for r in cluster.ranking if r.alive()],
        "haproxy": [b.pid for b in balancer if b.alive()],
        "postgres": _postmasters(pg),
    }
    return {"clients": time.process_time(), **cpu_seconds(parts, machine="machine", reaped=False)}


def _cell(value: float | None, width: int = 9) -> str:
    return f"{'-' if value is None else f'{value:.2f}':>{width}}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


async def _inject(
    fault: str,
    cluster: Cluster,
    pg: Any,
    engine: Any,
    outage: float,
    leader_name: Callable[[Any], Awaitable[str | None]],
) -> str:
    """Does the fault; returns what was done, in words. Returns when it is over (the
    killed instance started again, PostgreSQL accepting connections)."""
    if fault == "kill-match":
        victim = cluster.match[0]
        os.kill(victim.pid, signal.SIGKILL)
        await asyncio.sleep(RESTART_AFTER)
        await asyncio.to_thread(_restart, victim)
        return f"kill -9 {victim.name}, started again after {RESTART_AFTER:.0f} s"
    if fault in ("pg-fast", "pg-immediate"):
        mode = fault.removeprefix("pg-")
        await asyncio.to_thread(pg.halt, mode)
        await asyncio.to_thread(pg.resume)
        return f"PostgreSQL restarted ({mode} shutdown)"
    if fault == "pg-outage":
        await asyncio.to_thread(pg.halt, "fast")
        await asyncio.sleep(outage)
        await asyncio.to_thread(pg.resume)
        return f"PostgreSQL down for {outage:.0f} s"
    if fault == "kill-consumer":
        name, in_batch = await _leader_in_batch(engine, leader_name)
        victim = next(r for r in cluster.ranking if r.name == name)
        os.kill(victim.pid, signal.SIGKILL)
        await asyncio.sleep(RESTART_AFTER)
        await asyncio.to_thread(_restart, victim)
        where = "inside a batch" if in_batch else "between batches (none seen in 20 s)"
        return f"kill -9 {victim.name}, the consumer, {where}; started again"
    raise ValueError(fault)


async def _leader_in_batch(
    engine: Any, leader_name: Callable[[Any], Awaitable[str | None]]
) -> tuple[str, bool]:
    """The consuming instance, once its batch session is inside a transaction."""
    from sqlalchemy import text

    deadline = time.monotonic() + 20
    name = None
    while time.monotonic() < deadline:
        name = await leader_name(engine)
        if name:
            async with engine.connect() as conn:
                busy = await conn.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = :n"
                        " AND xact_start IS NOT NULL AND pid <> pg_backend_pid()"
                        " AND query NOT ILIKE '%pg_advisory%' AND state <> 'idle'"
                    ),
                    {"n": name},
                )
            if busy:
                return name, True
        await asyncio.sleep(0.005)
    if name is None:
        raise RuntimeError("no ranking instance holds the consumer's lock")
    return name, False


def _restart(instance: Any) -> None:
    instance.start()
    if not instance.ready():
        raise RuntimeError(f"{instance.name} did not start again")


async def _check(http: httpx.AsyncClient, load: _Load, engine: Any) -> dict[str, Any]:
    """`check_matches`, once the sockets caught up with their streams and the consumer
    with the finished ranked matches (or `CATCH_UP` passed: then that is a problem)."""
    from sqlalchemy import text

    problems: list[str] = []
    deadline = time.monotonic() + CATCH_UP
    for follower in load.followers:
        match_id = follower.url.rsplit("/", 1)[-1]
        r = await call(http, load.books, "GET", f"/api/matches/{match_id}")
        head = r.json()["version"]
        while len(follower.versions) < head and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if len(follower.versions) < head:
            problems.append(
                f"match {match_id}: the socket stopped at {len(follower.versions)} of {head}"
                " events and was not closed (silent)"
            )
    for follower in load.followers:
        await follower.stop()
    report = await check_matches(http, load.books, load.followers)
    finished = set(load.books.finished)
    while True:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT match_stream, model, count(*) FROM rating_changes"
                        " GROUP BY match_stream, model"
                    )
                )
            ).all()
            miscounted = await conn.scalar(
                text(
                    "SELECT count(*) FROM ratings r WHERE r.matches <> (SELECT count(*) FROM"
                    " rating_changes c WHERE c.model = r.model AND c.player_id = r.player_id)"
                )
            )
        rated = {match_id_of(row[0]) for row in rows}
        if finished <= rated or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    problems += [f"match {m}: finished and ranked, not rated" for m in sorted(finished - rated)]
    problems += [
        f"{row[0]} ({row[1]}): {row[2]} rating changes for 2 players" for row in rows if row[2] != 2
    ]
    if miscounted:
        problems.append(f"{miscounted} ratings count other than their rating changes")
    report["problems"] = problems + report["problems"]
    report["finished"] = len(finished)
    report["rated"] = len(rated & finished)
    return report


def _print_ha(r: dict[str, Any]) -> None:
    print(
        f"\nludo bench faults --ha: {r['matches_at_once']} ranked matches at once through"
        " HAProxy, 2 match + 2 ranking instances, PostgreSQL under Patroni (3 nodes,"
        f" synchronous_mode) (loadavg {', '.join(f'{x:.1f}' for x in r['loadavg'])})\n"
    )
    print(
        "seconds from the fault; writable: a new primary first commits (its own port);"
        " 1st ack: the clients' first acknowledged command (they honour Retry-After), and"
        " when it was sent\n"
    )
    print(
        f"{'fault':<16}{'promoted':>9}{'writable':>9}{'1st ack':>8}{'(sent)':>7}{'ratio':>7}"
        f"{'no ack':>7}{'rejoined':>9}  answers meanwhile; what"
    )
    for row in r["faults"]:
        print(
            f"{row['fault']:<16}{row['promoted_after_s']:>9.2f}{_cell(row['writable_after_s'])}"
            f"{_cell(row['first_ack_after_fault_s'], 8)}"
            f"{_cell(row['first_ack_sent_after_fault_s'], 7)}{_cell(row['ack_over_writable'], 7)}"
            f"{row['no_ack_s']:>7.2f}{row['rejoined_s']:>9.1f}  {row['answers']}; {row['what']}"
        )
    print(
        f"\n{'fault':<16}{'runs':>5}{'writable p50/p99':>18}{'1st ack p50/p99':>17}"
        f"{'ratio p50/max':>15}{'target':>8}  answers"
    )
    for kind, k in r["ha"].items():
        ratio = k["ack_over_writable_max"]
        met = "" if ratio is None else (" met" if ratio <= k["target_ratio"] else " NOT met")
        writable = f"{k['writable_p50_s']} / {k['writable_p99_s']}"
        first = f"{k['first_ack_p50_s']} / {k['first_ack_p99_s']}"
        ratios = f"{k['ack_over_writable_p50']} / {ratio}"
        target = f"≤ {k['target_ratio']:g}"
        print(
            f"{kind:<16}{k['runs']:>5}{writable:>18}{first:>17}{ratios:>15}{target:>8}{met}"
            f"  {k['answers']}"
        )
    print(
        f"pg_rewind runs (all nodes): {r['faults'][-1]['pg_rewinds_so_far'] if r['faults'] else 0}"
    )


def print_table(r: dict[str, Any]) -> None:
    if "ha" in r:
        _print_ha(r)
        _print_books(r)
        return
    print(
        f"\nludo bench faults: {r['matches_at_once']} ranked matches at once through HAProxy,"
        f" 2 match + 2 ranking instances, one PostgreSQL (loadavg "
        f"{', '.join(f'{x:.1f}' for x in r['loadavg'])})\n"
    )
    print(
        f"{'fault':<15}{'lasted s':>9}{'cmd/s before':>14}{'during':>9}{'after':>8}"
        f"{'1st ack s':>11}  what"
    )
    for row in r["faults"]:
        first = row["first_ack_after_s"]
        print(
            f"{row['fault']:<15}{row['seconds']:>9.1f}{row['commands_per_s_before']:>14.1f}"
            f"{row['commands_per_s_during']:>9.1f}{row['commands_per_s_after']:>8.1f}"
            f"{'-' if first is None else f'{first:.2f}':>11}  {row['what']}"
        )
    _print_books(r)


def _print_books(r: dict[str, Any]) -> None:
    print(
        f"\ncommands acknowledged {r['acknowledged']} (p50 {r['command_p50_ms']} ms,"
        f" p99 {r['command_p99_ms']} ms, answered as duplicates {r['duplicates_answered']}),"
        f" matches {r['matches']}, finished {r['finished']}, rated {r['rated']},"
        f" audits {r['audited']}, socket reconnects {r['reconnects']}"
    )
    print(f"retries: {r['retries']}; served by {r['served_by']}")
    cpu = ", ".join(f"{part} {ms}" for part, ms in r["cpu_ms_per_command"].items())
    print(
        f"steady load before the faults: {r['steady_commands_per_s']} commands/s;"
        f" CPU ms per command: {cpu}"
    )
    print_problems(
        r["problems"],
        "nothing lost, nothing twice, every chain and audit holds, every socket caught up,"
        " every finished ranked match rated once",
    )


BENCH = Bench(
    name="faults",
    help="load through HAProxy while instances and PostgreSQL fail; every book checked",
    options=_options,
    measure=measure,
    table=print_table,
    failed=lambda result: bool(result["problems"]),
)
