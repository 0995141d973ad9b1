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
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common import BenchError, scratch_cluster
from benchmarks.harness import Bench, Figures, Say, print_problems, to_stderr
from benchmarks.resilient import Books, Follower, MatchPlay, call, check_matches
from benchmarks.service_process import cpu_seconds
from domain.streams import match_id_of
from ludo_cli.arguments import positive_float, positive_int
from ludo_cli.cluster import Cluster

__all__ = ["BENCH", "FAULTS", "bench", "measure"]

FAULTS = ("kill-match", "pg-fast", "pg-immediate", "pg-outage", "kill-consumer")
RESTART_AFTER = 5.0  # s: a killed instance is started again after this
CATCH_UP = 120.0  # s: at most, for the sockets and the ranking to catch up at the end


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=8, help="concurrent matches (K)")
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"comma-separated, in order (default all: {','.join(FAULTS)})",
    )
    parser.add_argument("--warmup", type=positive_float, default=10.0, help="seconds before")
    parser.add_argument(
        "--settle", type=positive_float, default=15.0, help="seconds of load after each fault"
    )
    parser.add_argument(
        "--outage", type=positive_float, default=10.0, help="seconds pg-outage keeps it down"
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = sorted(set(faults) - set(FAULTS))
    if unknown:
        raise BenchError(f"unknown fault(s) {unknown}; known: {FAULTS}")
    return bench(
        matches=args.matches,
        faults=faults,
        warmup=args.warmup,
        settle=args.settle,
        outage=args.outage,
        say=say,
    )


def bench(
    *,
    matches: int = 8,
    faults: list[str] | None = None,
    warmup: float = 10.0,
    settle: float = 15.0,
    outage: float = 10.0,
    say: Say = to_stderr,
) -> dict[str, Any]:
    """Runs the whole bench; returns the figures (see the module docstring)."""
    with scratch_cluster(
        "ludo-faults-", env={"LUDO_CPU_DELAY": "0"}, ranking_instances=2, say=say
    ) as (cluster, pg):
        return asyncio.run(
            _run(cluster, pg, matches, faults or list(FAULTS), warmup, settle, outage, say)
        )


class _Load:
    """K match slots, each playing ranked matches one after another until `stop`."""

    def __init__(self, http: httpx.AsyncClient, ws_base: str, slots: int) -> None:
        self.http = http
        self.ws_base = ws_base
        self.books = Books()
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
    from services.ranking.consumer import leader_name
    from services.shared.database import create_engine

    engine = create_engine(pg.url)
    ws_base = cluster.url.replace("http://", "ws://")
    limits = httpx.Limits(max_connections=4 * matches)
    async with httpx.AsyncClient(base_url=cluster.url, timeout=30, limits=limits) as http:
        load = _Load(http, ws_base, matches)
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
            began = time.monotonic()
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


def _cpu(cluster: Cluster, pg: Any) -> dict[str, float]:
    """CPU seconds so far of each part: the load generator (this process), the match and
    the ranking instances, HAProxy, PostgreSQL (the postmaster and its backends), and
    the machine (busy time of all cores). Without psutil, only the load generator. Living
    processes only (`reaped=False`), as this bench's figures have always been taken."""
    postmaster = int((Path(pg.pgdata) / "postmaster.pid").read_text().split()[0])
    balancer = [cluster.balancer] if cluster.balancer else []
    parts = {
        "match": [m.pid for m in cluster.match if m.alive()],
        "ranking": [r.pid for r in cluster.ranking if r.alive()],
        "haproxy": [b.pid for b in balancer if b.alive()],
        "postgres": [postmaster],
    }
    return {"clients": time.process_time(), **cpu_seconds(parts, machine="machine", reaped=False)}


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


def print_table(r: dict[str, Any]) -> None:
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
