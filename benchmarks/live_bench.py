"""`ludo bench live`: what live sockets cost the database, against the code before the fan-out.

The match service runs under uvicorn in a subprocess on a private PostgreSQL (an embedded
server of the bench's own, restarted with `pg_stat_statements` loaded), twice in one run,
each on its own scratch database: first from a `git worktree` of `--baseline-ref`
(default: the last commit whose every socket read its own stream), then from this source
tree; the same phases on each:

1. **quiet**: no socket; the database's statements/s (the service's own background).
2. **control**: `--commands` commands over HTTP on a match nobody follows: what a command
   costs the database by itself (statements, and reads of a stream, per command).
3. **followers**: `--followers` sockets on one match, then `--commands` commands on it,
   each sent once every follower has had the previous one's events. Printed: events/s
   delivered (event frames received by all followers / the phase's time), p50/p99
   delivery latency, and stream reads (and statements) per appended event net of the
   commands' own (phase 2).
4. **idle**: `--idle` sockets spread over `--idle-matches` matches nobody plays, held for
   `--seconds` once each has had its first frame: database statements/s, and net of the
   background.

Database queries are `pg_stat_statements` calls in the scratch database (BEGIN/COMMIT not
counted: `track_utility` off), read from the `postgres` database so that the bench's own
reads are not counted; a stream read is a statement `FROM events … stream_version >=`.

Delivery latency: the event's `recorded_at` (PostgreSQL's `now()` in the appending
transaction: a little before the commit) to the frame's arrival at the client, same
machine clock. The sockets are held by `--clients` processes (`live_clients.py`, lean
asyncio clients, no compression); their CPU is printed beside the service's, so a
saturated load generator shows. The soft limit of open files is raised to the hard one
here and in the clients; the service is started with `LUDO_RATE_LIMIT=0` (one address
opens every socket).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from benchmarks import service_process
from benchmarks.common import (
    BASELINE_TAG,
    ROOT,
    BenchError,
    commit_of,
    loadavg,
    percentile,
    scratch_db,
    worktree,
)
from benchmarks.harness import Bench, Figures, Say, to_stderr
from benchmarks.live_clients import raise_open_files, serve
from ludo_cli.arguments import positive_int

__all__ = ["BASELINE_REF", "BENCH", "LiveConfig", "bench", "measure"]

# The last commit whose sockets each read their own stream on every hint and every 2 s
# (one follower per stream has replaced that since).
BASELINE_REF = BASELINE_TAG
TARGET_READS_PER_EVENT = 1.0
TARGET_IDLE_QPS = 2.0
SETTLE = 1.5  # seconds: let the connects' own reads pass before a window starts


class LiveConfig(msgspec.Struct, kw_only=True):
    followers: int = 1000
    idle: int = 2000
    idle_matches: int = 20
    commands: int = 40
    seconds: float = 10.0
    clients: int = 2
    baseline_ref: str | None = BASELINE_REF
    port: int | None = None  # the service's port (the baseline's is port + 1)
    # Sockets each client opens at once: more only queue on the service's database pool,
    # and past its timeout (30 s) a socket is refused with 1011.
    connect_concurrency: int = 10


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--followers", type=positive_int, default=1000, help="sockets on the played match"
    )
    parser.add_argument("--idle", type=positive_int, default=2000, help="idle sockets")
    parser.add_argument(
        "--idle-matches", type=positive_int, default=20, help="matches the idle sockets follow"
    )
    parser.add_argument("--commands", type=positive_int, default=40, help="commands played")
    parser.add_argument("--seconds", type=float, default=10.0, help="idle window (s)")
    parser.add_argument("--clients", type=positive_int, default=2, help="socket-holding processes")
    parser.add_argument(
        "--baseline-ref",
        default=BASELINE_REF,
        help="git ref of the code to compare with ('none': no baseline)",
    )
    parser.add_argument("--port", type=int, default=None, help="the service's port (baseline: +1)")


def measure(args: argparse.Namespace, say: Say) -> Figures:
    config = LiveConfig(
        followers=args.followers,
        idle=args.idle,
        idle_matches=args.idle_matches,
        commands=args.commands,
        seconds=args.seconds,
        clients=args.clients,
        baseline_ref=None if args.baseline_ref == "none" else args.baseline_ref,
        port=args.port,
    )
    return bench(config, say)


def bench(config: LiveConfig, say: Callable[[str], None] = to_stderr) -> dict[str, Any]:
    """The figures of both runs: `{"runs": {"baseline": ..., "now": ...}, ...}`."""
    nofile = raise_open_files()
    needed = config.followers + config.idle + 100
    if nofile < needed:
        raise BenchError(f"open files limited to {nofile}: {needed} needed (ulimit -Hn)")
    runs: dict[str, Any] = {}
    load_before = loadavg()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(_counting_server())
        trees: list[tuple[str, Path, int | None]] = []
        if config.baseline_ref is not None:
            config.baseline_ref = commit_of(config.baseline_ref)  # as the figures name it
            tree = stack.enter_context(worktree(config.baseline_ref))
            trees.append(("baseline", tree, None if config.port is None else config.port + 1))
        trees.append(("now", ROOT, config.port))
        for label, root, port in trees:
            say(f"{label}: the service from {root}")
            runs[label] = _run_one(server, root, port, config, say)
    return {
        "config": msgspec.to_builtins(config),
        "baseline_ref": config.baseline_ref,
        "loadavg_before": load_before,
        "runs": runs,
    }


@contextlib.contextmanager
def _counting_server() -> Iterator[str]:
    """A PostgreSQL server of the bench's own with `pg_stat_statements` loaded (it needs
    a restart), counting statements but not BEGIN/COMMIT."""
    import psycopg
    from sqlalchemy.engine import make_url

    from services.shared.database import EmbeddedPostgres, libpq_url

    with EmbeddedPostgres.scratch("ludo-bench-live-") as pg:
        admin = libpq_url(make_url(pg.url).set(database="postgres"))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track_utility = off")
        pg.halt()
        pg.resume()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        yield pg.url


def _run_one(
    server: str, root: Path, port: int | None, config: LiveConfig, say: Callable[[str], None]
) -> dict[str, Any]:
    # No turn timers, no pairing or arena runner: their own periodic reads (a pool re-read
    # every tenth pass in case a hint was lost) are not the sockets' cost, and in a short
    # window they land in one phase and not the other.
    settings = {"LUDO_SCHEDULER": "false", "LUDO_PAIRING": "false", "LUDO_LOG_LEVEL": "warning"}
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(scratch_db(server, "ludo_bench_live", root=root))
        base, pid = stack.enter_context(
            service_process.serve(db_url, root=root, port=port, env=settings, log_level="warning")
        )
        clients = stack.enter_context(_clients(config.clients))
        counter = stack.enter_context(_Statements(server, db_url))
        import httpx

        with httpx.Client(base_url=base, timeout=60) as http:
            played, control = _Table(http).open(), _Table(http).open()
            idle_ids = [_Table(http).open().match_id for _ in range(config.idle_matches)]
            ws = base.replace("http://", "ws://")

            say("  quiet: no socket")
            quiet = counter.window(lambda: time.sleep(config.seconds))
            background = quiet["queries"] / quiet["seconds"]

            say(f"  control: {config.commands} commands, no socket")
            alone = counter.window(lambda: control.play(config.commands))
            reads_per_command = alone["reads"] / max(1, alone["commands"])
            queries_per_command = alone["queries"] / max(1, alone["commands"])

            say(f"  followers: {config.followers} sockets on one match")
            since = played.version()
            urls = [f"{ws}/ws/matches/{played.match_id}?from={since}"] * config.followers
            opened = clients.open("follower", urls, config.connect_concurrency)
            clients.wait_all(since - 1)  # every socket has had its catch-up (its state frame)
            time.sleep(SETTLE)  # past the connects' own reads
            clients.ask(("mark",))
            cpu_before = _cpu(pid, clients, db_url)
            play = counter.window(lambda: played.play(config.commands, clients.wait_all))
            cpu = _cpu_delta(cpu_before, _cpu(pid, clients, db_url), play["seconds"])
            stats = clients.stats()
            closes = _codes(stats)
            events = max(1, play["events"])
            latencies = sorted(x for s in stats for x in s["latencies_ms"])
            delivered = sum(s["events"] for s in stats)
            feed_reads = play["reads"] - reads_per_command * play["commands"]
            feed_queries = play["queries"] - queries_per_command * play["commands"]
            followers = {
                "sockets_held": sum(s["open"] for s in stats),
                "opened": opened["opened"],
                "closed_by_server": closes,
                "commands": play["commands"],
                "events_appended": play["events"],
                "events_delivered": delivered,
                "seconds": round(play["seconds"], 2),
                "events_per_s": round(delivered / max(play["seconds"], 1e-9), 1),
                "latency_ms": {
                    "p50": round(percentile(latencies, 0.5), 1),
                    "p99": round(percentile(latencies, 0.99), 1),
                    "max": round(latencies[-1], 1) if latencies else None,
                },
                "queries": play["queries"],
                "queries_per_s": round(play["queries"] / play["seconds"], 1),
                "reads_per_event": round(feed_reads / events, 2),
                "queries_per_event": round(feed_queries / events, 2),
                "cpu_cores": cpu,
            }
            clients.close("follower")

            say(f"  idle: {config.idle} sockets on {config.idle_matches} matches")
            urls = [
                f"{ws}/ws/matches/{idle_ids[i % len(idle_ids)]}?from=0" for i in range(config.idle)
            ]
            opened = clients.open("idle", urls, config.connect_concurrency)
            if not all(a["ok"] for a in clients.ask(("settled", 120.0))):
                raise BenchError("idle sockets had no first frame within 120 s")
            time.sleep(SETTLE)  # past the connects' own reads
            cpu_before = _cpu(pid, clients, db_url)
            window = counter.window(lambda: time.sleep(config.seconds))
            cpu = _cpu_delta(cpu_before, _cpu(pid, clients, db_url), window["seconds"])
            stats = clients.stats()
            qps = window["queries"] / window["seconds"]
            idle = {
                "sockets_held": sum(s["open"] for s in stats),
                "opened": opened["opened"],
                "closed_by_server": _codes(stats),
                "seconds": round(window["seconds"], 1),
                "queries_per_s": round(qps, 2),
                "queries_per_s_net": round(qps - background, 2),
                "cpu_cores": cpu,
            }
            clients.close("idle")
    return {
        "background_qps": round(background, 2),
        "queries_per_command": round(queries_per_command, 2),
        "reads_per_command": round(reads_per_command, 2),
        "followers": followers,
        "idle": idle,
    }


def _codes(stats: list[dict[str, Any]]) -> dict[str, int]:
    """Close code -> sockets the server closed (none, when every socket was held)."""
    codes: dict[str, int] = {}
    for part in stats:
        for code, count in part["close_codes"].items():
            codes[code] = codes.get(code, 0) + count
    return codes


# ---------------------------------------------------------------- what is measured


class _Statements:
    """`pg_stat_statements` calls in the scratch database, read from `postgres`: every
    statement, and the reads of a stream's events (`stream_version >=`: the live feeds'
    `read_stream`, and any fold a command makes)."""

    _QUERY = """
        SELECT coalesce(sum(calls), 0),
               coalesce(sum(calls) FILTER (WHERE query ILIKE '%%FROM events%%'
                                           AND query ILIKE '%%stream_version >=%%'), 0)
        FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)
    """

    def __init__(self, server: str, db_url: str) -> None:
        from sqlalchemy.engine import make_url

        from services.shared.database import libpq_url

        self._conninfo = libpq_url(make_url(server).set(database="postgres"))
        self._name = make_url(db_url).database
        self._conn: Any = None

    def __enter__(self) -> _Statements:
        import psycopg

        self._conn = psycopg.connect(self._conninfo, autocommit=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.close()

    def count(self) -> tuple[int, int]:
        row = self._conn.execute(self._QUERY, (self._name,)).fetchone()
        return int(row[0]), int(row[1])

    def window(self, action: Callable[[], Any]) -> dict[str, Any]:
        """The statements during `action()` (and its result's commands and events)."""
        before, started = self.count(), time.perf_counter()
        done = action() or (0, 0)
        after, seconds = self.count(), time.perf_counter() - started
        commands, events = done
        return {
            "queries": after[0] - before[0],
            "reads": after[1] - before[1],
            "seconds": seconds,
            "commands": commands,
            "events": events,
        }


def _cpu(pid: int, clients: _Clients, db_url: str) -> dict[str, float]:
    """CPU seconds so far of the service, PostgreSQL, the machine and the socket clients
    (the statements are counted by `_Statements`, not here)."""
    snap = service_process.service_cpu_seconds(pid, db_url)
    snap["clients"] = sum(s["cpu_s"] for s in clients.stats())
    return snap


def _cpu_delta(
    before: dict[str, float], after: dict[str, float], seconds: float
) -> dict[str, float]:
    return {
        key: round((after[key] - before[key]) / max(seconds, 1e-9), 2)
        for key in before
        if key in after
    }


# ---------------------------------------------------------------------- the clients


class _Clients:
    """The socket-holding processes, each asked the same thing in turn."""

    def __init__(self, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes = []
        self._procs = []
        for _ in range(count):
            mine, theirs = context.Pipe()
            proc = context.Process(target=serve, args=(theirs,), daemon=True)
            proc.start()
            self._pipes.append(mine)
            self._procs.append(proc)

    def ask(self, request: tuple[Any, ...]) -> list[dict[str, Any]]:
        for pipe in self._pipes:
            pipe.send(request)
        return [pipe.recv() for pipe in self._pipes]

    def open(self, kind: str, urls: list[str], concurrency: int) -> dict[str, int]:
        shares = [urls[i :: len(self._pipes)] for i in range(len(self._pipes))]
        for pipe, share in zip(self._pipes, shares, strict=True):
            pipe.send(("open", kind, share, concurrency))
        answers = [pipe.recv() for pipe in self._pipes]
        opened = sum(a["opened"] for a in answers)
        failed = sum(a["failed"] for a in answers)
        if failed:
            raise BenchError(f"{failed} of {len(urls)} {kind} sockets could not connect")
        return {"opened": opened, "failed": failed}

    def wait_all(self, version: int) -> None:
        if not all(a["ok"] for a in self.ask(("wait", version, 60.0))):
            raise BenchError(f"event {version} did not reach every follower within 60 s")

    def stats(self) -> list[dict[str, Any]]:
        return self.ask(("stats",))

    def close(self, kind: str) -> None:
        self.ask(("close", kind))

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.ask(("exit",))
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


@contextlib.contextmanager
def _clients(count: int) -> Iterator[_Clients]:
    clients = _Clients(count)
    try:
        yield clients
    finally:
        clients.stop()


# ------------------------------------------------------------------------ the match


class _Table:
    """Two guests at a started 2-seat match, driven over HTTP."""

    def __init__(self, http: Any) -> None:
        self.http = http
        self.auth: list[dict[str, str]] = []
        self.match_id = ""

    def open(self) -> _Table:
        for name in ("alice", "bob"):
            made = self.http.post("/api/players", json={"name": name}).raise_for_status().json()
            self.auth.append({"Authorization": f"Bearer {made['token']}"})
        host, guest = self.auth
        party = self.http.post("/api/parties", json={"seats": 2}, headers=host)
        party_id = party.raise_for_status().json()["id"]
        self.http.post(f"/api/parties/{party_id}/join", json={}, headers=guest).raise_for_status()
        started = self.http.post(f"/api/parties/{party_id}/start", headers=host)
        self.match_id = started.raise_for_status().json()["match_id"]
        return self

    def version(self) -> int:
        return int(self.http.get(f"/api/matches/{self.match_id}").json()["version"])

    def play(
        self, commands: int, delivered: Callable[[int], None] | None = None
    ) -> tuple[int, int]:
        """Up to `commands` commands (rolls and first legal moves); after each, wait for
        `delivered(last version)`. Returns (commands, events appended)."""
        done = events = 0
        url = f"/api/matches/{self.match_id}"
        while done < commands:
            state = self.http.get(url).raise_for_status().json()
            if state["phase"] == "finished":
                break
            who = self.auth[state["turn"]]
            if state["phase"] == "roll":
                reply = self.http.post(f"{url}/roll", headers=who)
            else:
                moves = self.http.get(f"{url}/moves").raise_for_status().json()["moves"]
                reply = self.http.post(
                    f"{url}/move", headers=who, json={"piece": moves[0]["piece"]}
                )
            body = reply.raise_for_status().json()
            done += 1
            events += len(body["events"])
            if delivered is not None:
                delivered(body["version"] - 1)
        return done, events


# ------------------------------------------------------------------------ the table


def print_table(r: dict[str, Any]) -> None:
    c = r["config"]
    print(
        f"ludo bench live: {c['followers']} followers on one match, {c['idle']} idle sockets on "
        f"{c['idle_matches']} matches, {c['commands']} commands, {c['clients']} client processes"
    )
    print(f"baseline: {r['baseline_ref'] or 'none'}   loadavg before: {r['loadavg_before']}")
    labels = list(r["runs"])
    rows: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
        ("quiet: db queries/s", lambda x: x["background_qps"]),
        ("control: db queries per command", lambda x: x["queries_per_command"]),
        ("control: stream reads per command", lambda x: x["reads_per_command"]),
        ("followers: sockets held", lambda x: x["followers"]["sockets_held"]),
        ("followers: closed by the server", lambda x: x["followers"]["closed_by_server"] or "none"),
        ("followers: events appended", lambda x: x["followers"]["events_appended"]),
        ("followers: events/s delivered", lambda x: x["followers"]["events_per_s"]),
        ("followers: p50 latency ms", lambda x: x["followers"]["latency_ms"]["p50"]),
        ("followers: p99 latency ms", lambda x: x["followers"]["latency_ms"]["p99"]),
        ("followers: db queries/s", lambda x: x["followers"]["queries_per_s"]),
        ("followers: db queries per event", lambda x: x["followers"]["queries_per_event"]),
        (
            f"followers: reads per event (≤ {TARGET_READS_PER_EVENT:g})",
            lambda x: x["followers"]["reads_per_event"],
        ),
        ("followers: service cores", lambda x: x["followers"]["cpu_cores"].get("service")),
        ("followers: client cores", lambda x: x["followers"]["cpu_cores"].get("clients")),
        ("idle: sockets held", lambda x: x["idle"]["sockets_held"]),
        ("idle: closed by the server", lambda x: x["idle"]["closed_by_server"] or "none"),
        ("idle: db queries/s", lambda x: x["idle"]["queries_per_s"]),
        (
            f"idle: db queries/s net (≤ {TARGET_IDLE_QPS:g})",
            lambda x: x["idle"]["queries_per_s_net"],
        ),
        ("idle: service cores", lambda x: x["idle"]["cpu_cores"].get("service")),
        ("idle: client cores", lambda x: x["idle"]["cpu_cores"].get("clients")),
    ]
    print(f"{'':<38}" + "".join(f"{label:>12}" for label in labels))
    for name, get in rows:
        print(f"{name:<38}" + "".join(f"{get(r['runs'][label])!s:>12}" for label in labels))


BENCH = Bench(
    name="live",
    help="live sockets: database reads per event and idle queries/s, vs the code before",
    options=_options,
    measure=measure,
    table=print_table,
)
