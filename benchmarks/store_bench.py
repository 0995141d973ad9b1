"""`ludo bench store`: the event store's latencies on an empty and on a filled table.

On a scratch database (the real schema: the migrations, their indexes and triggers),
through the project's `EventStore`:

- *append*: `--clients` tasks append one event at a time to their own match streams with
  `append` given the head's hash (the head check, the event and the command record in one
  statement, then NOTIFY: the match service's HTTP path), `--events` events to each of `--streams`
  streams, interleaved as concurrent matches are;
- *stream reads* of those streams: `read_stream` from version 0 (every column, what
  replay export and the chain check read), `read_events` from 0 (a rebuild) and from the
  last few versions (the state cache's catch-up);
- *global read*: `read_all(after=cursor, limit=--batch)` from cursors at random places
  in the log (the ranking consumer catching up) and at its head (the consumer's idle poll);

first on the (almost) empty table, then again, with new streams, after the table was
filled to `--rows` rows. The fill runs on the server (`INSERT … SELECT generate_series`):
rows shaped like real events (DieRolled / PieceMoved / TurnEnded JSON as the engine
writes it, metadata, 32-byte hashes), ~300 per match stream, `--fill-streams` matches
interleaved per statement as concurrent matches interleave. Their hash chains are NOT
valid (a chain is sequential per stream; nothing set-based computes it): the streams
that are measured are the real ones, written through the store.

The same is measured on a copy of the table partitioned by hash of `stream_id`
(`--partitions`, 0 to skip) in schema `ludo_part` of the same database, filled to the
same row count. With `--replica URL` (a streaming standby of the server used), the lag of
the standby behind the appends and the same reads on the standby. pgbench's single-row
INSERT at the same concurrency is the baseline. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import platform
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

import msgspec

from benchmarks.common import BenchError, loadavg, percentile, pgbench_insert, scratch_db
from benchmarks.harness import Bench, Figures, Say
from benchmarks.service_process import cpu_seconds
from domain.streams import MATCH_PREFIX, match_stream
from ludo_cli.arguments import positive_int
from ludo_cli.progress import Progress

__all__ = ["BENCH", "Config", "bench", "measure", "print_table"]

PARTITION_SCHEMA: Final = "ludo_part"
_TAIL: Final = 5  # events a tail read asks for (a state cache a few commands behind)
_FILL_EVENTS: Final = 300  # events per filled match stream (a 2-seat match is ~190-300)


class Config(msgspec.Struct, kw_only=True):
    rows: int = 100_000
    streams: int = 8  # measured streams per phase and table
    events: int = 300  # events appended to each measured stream
    clients: int = 4
    reads: int = 200  # timed reads of each kind
    batch: int = 500  # the global read's page: the ranking consumer's batch
    fill_streams: int = 250  # match streams interleaved in one fill statement
    partitions: int = 16  # 0: no partitioned copy
    pgbench_seconds: int = 10  # 0: no pgbench baseline
    replica_url: str | None = None
    database_url: str | None = None  # None: a scratch database (module docstring)
    keep: bool = False
    progress: bool = True
    seed: int = 0


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=positive_int, default=100_000, help="rows to fill to")
    parser.add_argument("--streams", type=positive_int, default=8, help="measured streams")
    parser.add_argument("--events", type=positive_int, default=300, help="events per stream")
    parser.add_argument("--clients", type=positive_int, default=4, help="concurrent appenders")
    parser.add_argument("--reads", type=positive_int, default=200, help="timed reads per kind")
    parser.add_argument("--batch", type=positive_int, default=500, help="global read page")
    parser.add_argument(
        "--fill-streams", type=positive_int, default=250, help="streams interleaved per fill"
    )
    parser.add_argument(
        "--partitions", type=int, default=16, help="hash partitions of the copy (0: none)"
    )
    parser.add_argument("--pgbench-seconds", type=int, default=10, help="0: no pgbench")
    parser.add_argument(
        "--replica", default=None, help="server URL of a streaming standby of the server used"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--seed", type=int, default=0)


def measure(args: argparse.Namespace, say: Say) -> Figures:
    config = Config(
        rows=args.rows,
        streams=args.streams,
        events=args.events,
        clients=args.clients,
        reads=args.reads,
        batch=args.batch,
        fill_streams=args.fill_streams,
        partitions=max(0, args.partitions),
        pgbench_seconds=max(0, args.pgbench_seconds),
        replica_url=args.replica,
        keep=args.keep,
        seed=args.seed,
        progress=not args.json,
    )
    return bench(config)


def _say(config: Config, line: str) -> None:
    if config.progress:
        print(line, file=sys.stderr, flush=True)


def _stream(config: Config) -> Any:
    return sys.stderr if config.progress else io.StringIO()


# --------------------------------------------------------------------------- the tables


def _partitioned_ddl(partitions: int) -> list[str]:
    """The events table partitioned by hash of stream_id, and `commands` beside it.

    What partitioning forces on the schema: every unique constraint must contain the
    partition key, so the primary key becomes (global_position, stream_id) and event ids
    are unique per stream only (the command id, `commands`' key, still guards retries
    globally). Statement-level triggers on the parent do not fire for statements that
    name a partition, so every partition gets its own append-only triggers too.
    """
    s = PARTITION_SCHEMA
    ddl = [
        f"CREATE SCHEMA {s}",
        # The columns, their defaults, checks and identity come from the real table, so
        # the copy follows every migration; only the keys are this table's own.
        f"""
        CREATE TABLE {s}.events (
            LIKE public.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY,
            PRIMARY KEY (global_position, stream_id),
            CONSTRAINT events_stream_version_key UNIQUE (stream_id, stream_version),
            CONSTRAINT events_event_id_key UNIQUE (event_id, stream_id)
        ) PARTITION BY HASH (stream_id)
        """,
        f"CREATE INDEX events_tx_position_idx ON {s}.events (tx, global_position)",
        f"CREATE TABLE {s}.commands (LIKE public.commands INCLUDING ALL)",
    ]
    tables = [f"{s}.events"]
    for r in range(partitions):
        ddl.append(
            f"CREATE TABLE {s}.events_p{r:02d} PARTITION OF {s}.events"
            f" FOR VALUES WITH (MODULUS {partitions}, REMAINDER {r})"
        )
        tables.append(f"{s}.events_p{r:02d}")
    for table in tables:
        ddl.append(
            f"CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION public.events_append_only()"
        )
        ddl.append(
            f"CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION public.events_append_only()"
        )
    return ddl


# One fill statement: %(n)s rows over %(k)s streams, row j -> stream j % k, version j / k,
# so the streams' events interleave in the heap as concurrent matches' do. The JSON is
# what `domain.events.encode_event` writes for these three types.
_FILL: Final = """
INSERT INTO {events} (stream_id, stream_version, event_id, type, schema_version, data,
                      metadata, prev_hash, hash)
SELECT f.stream, f.v, gen_random_uuid(), f.kind, 1,
       (CASE f.kind
          WHEN 'DieRolled' THEN '{{"type":"DieRolled","seat":' || f.seat || ',"n":' || f.v / 3
                                || ',"value":' || (1 + f.v %% 6) || '}}'
          WHEN 'PieceMoved' THEN '{{"type":"PieceMoved","seat":' || f.seat || ',"piece":'
                                || f.v %% 4 || ',"frm":' || f.v %% 50 || ',"to":'
                                || (f.v %% 50 + 3) || ',"captures":[],"die":null,"bonus":0}}'
          ELSE '{{"type":"TurnEnded","seat":' || f.seat || ',"next_seat":' || (1 - f.seat)
               || '}}'
        END)::json,
       jsonb_build_object('actor', 'player-' || f.seat, 'command_id',
                          f.stream || ':' || f.v, 'correlation_id', f.stream),
       sha256(convert_to(f.stream || ':' || f.v, 'UTF8')),
       sha256(convert_to(f.stream || ':' || f.v || ':h', 'UTF8'))
  FROM (SELECT %(prefix)s || md5('fill:' || (%(first)s + j %% %(k)s))::uuid AS stream,
               (j / %(k)s)::integer AS v,
               (ARRAY['DieRolled', 'PieceMoved', 'TurnEnded'])[1 + (j / %(k)s) %% 3] AS kind,
               (j / %(k)s / 3) %% 2 AS seat
          FROM generate_series(0, %(n)s - 1) AS j
         ORDER BY j) AS f
"""


class _Table:
    """One events table under test: its engine (search_path) and its name in SQL."""

    def __init__(self, label: str, url: str, schema: str, replica_url: str | None = None):
        from services.shared.database import create_engine

        self.label = label
        self.schema = schema
        self.qualified = f"{schema}.events"
        self.url = url
        self.replica_url = replica_url
        self.connect_args = {"options": f"-c search_path={schema},public"}
        self.engine = create_engine(
            url, pool_size=8, max_overflow=8, connect_args=self.connect_args
        )
        self.streams_filled = 0

    async def dispose(self) -> None:
        await self.engine.dispose()


def _fill(conn: Any, table: _Table, rows: int, config: Config, bar: Progress) -> int:
    """Top the table up to `rows` rows (fewer: nothing); returns the rows inserted."""
    have = int(conn.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()[0])
    todo = max(0, rows - have)
    chunk = config.fill_streams * _FILL_EVENTS
    done = 0
    while done < todo:
        n = min(chunk, todo - done)
        # The last statement spreads its rows over as few streams as keep ~300 each.
        k = max(1, min(config.fill_streams, -(-n // _FILL_EVENTS)))
        conn.execute(
            _FILL.format(events=table.qualified),
            {"n": n, "k": k, "first": table.streams_filled, "prefix": MATCH_PREFIX},
        )
        conn.commit()  # one transaction per statement, as separate matches' appends are
        table.streams_filled += k
        done += n
        bar.advance(n)
    return done


def _vacuum(conn: Any, table: _Table) -> None:
    # What autovacuum would have done to an old table (visibility map, hint bits,
    # statistics): without it the first reads write hint bits and measure that.
    conn.execute(f"VACUUM (ANALYZE) {table.qualified}")


def _sizes(conn: Any, table: _Table) -> dict[str, Any]:
    # pg_partition_tree has no rows for a table that is not partitioned.
    row = conn.execute(
        "SELECT count(*), sum(pg_table_size(r)), sum(pg_indexes_size(r)),"
        " sum(pg_total_relation_size(r)) FROM (SELECT relid AS r FROM"
        " pg_partition_tree(%s::regclass) WHERE isleaf UNION ALL SELECT %s::regclass"
        " WHERE NOT EXISTS (SELECT FROM pg_partition_tree(%s::regclass))) AS leaves",
        (table.qualified,) * 3,
    ).fetchone()
    rows = int(conn.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()[0])
    return {
        "rows": rows,
        "partitions": int(row[0]) if table.schema == PARTITION_SCHEMA else 0,
        "table_bytes": int(row[1] or 0),
        "index_bytes": int(row[2] or 0),
        "total_bytes": int(row[3] or 0),
    }


# -------------------------------------------------------------------------- measuring


def _ms(values: list[float]) -> dict[str, Any]:
    v = sorted(values)
    return {
        "n": len(v),
        "p50_ms": round(percentile(v, 0.50) * 1000, 3),
        "p90_ms": round(percentile(v, 0.90) * 1000, 3),
        "p99_ms": round(percentile(v, 0.99) * 1000, 3),
    }


def _events_for(version: int) -> Any:
    from domain import events as ev

    seat = (version // 3) % 2
    kind = version % 3
    if kind == 0:
        return ev.DieRolled(seat=seat, n=version // 3, value=1 + version % 6)
    if kind == 1:
        return ev.PieceMoved(seat=seat, piece=version % 4, frm=version % 50, to=version % 50 + 3)
    return ev.TurnEnded(seat=seat, next_seat=1 - seat)


async def _appends(table: _Table, config: Config, tag: str) -> tuple[dict[str, Any], list[str]]:
    """`--clients` tasks, each appending one event at a time to its share of the streams,
    round-robin over them; the latency of each `append`."""
    from domain.chain import GENESIS
    from services.shared.eventstore import EventStore

    store = EventStore(table.engine)
    streams = [match_stream(str(uuid.uuid4())) for _ in range(config.streams)]
    shares = [streams[i :: config.clients] for i in range(config.clients)]
    latencies: list[float] = []
    total = config.streams * config.events
    cpu = _cpu_snapshot()

    async def client(mine: list[str], bar: Progress) -> None:
        heads = dict.fromkeys(mine, GENESIS)
        for version in range(config.events):
            for stream in mine:
                event = _events_for(version)
                command = f"bench:{stream}:{version}"
                start = time.perf_counter()
                result = await store.append(
                    stream,
                    version,
                    [event],
                    command_id=command,
                    metadata={"actor": "player-bench", "correlation_id": command},
                    prev_hash=heads[stream],
                )
                latencies.append(time.perf_counter() - start)
                heads[stream] = result.events[-1].hash
                bar.advance()

    started = time.perf_counter()
    with Progress(total, f"append {table.label} {tag}", _stream(config)) as bar:
        await asyncio.gather(*(client(mine, bar) for mine in shares if mine))
    seconds = time.perf_counter() - started
    usage = _cpu_usage(cpu, _cpu_snapshot(), seconds)
    figures = _ms(latencies)
    figures |= {
        "appends_per_s": round(len(latencies) / seconds, 1),
        "clients": min(config.clients, config.streams),
        "client_cpu_ms_per_append": round(usage.pop("client_s") * 1000 / len(latencies), 3),
        **usage,
    }
    return figures, streams


def _cpu_snapshot() -> dict[str, float]:
    """CPU seconds so far of this process (the clients) and the machine's busy time."""
    return {"client_s": time.process_time(), **cpu_seconds({}, machine="machine_busy_s")}


def _cpu_usage(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, Any]:
    usage: dict[str, Any] = {"client_s": after["client_s"] - before["client_s"]}
    if "machine_busy_s" in before:
        busy = after["machine_busy_s"] - before["machine_busy_s"]
        usage["machine_busy_cores"] = round(busy / max(seconds, 1e-9), 2)
    return usage


async def _timed(calls: int, call: Callable[[int], Any]) -> list[float]:
    times = []
    for i in range(calls):
        start = time.perf_counter()
        await call(i)
        times.append(time.perf_counter() - start)
    return times


async def _cursors(engine: Any, table: _Table, count: int, seed: int) -> tuple[list[Any], Any]:
    """Cursors at `count` random places of the log, and the cursor of its last event."""
    import sqlalchemy as sa

    from services.shared.eventstore import Cursor

    rng = random.Random(seed)
    async with engine.connect() as conn:
        low, high = (
            await conn.execute(
                sa.text(f"SELECT min(global_position), max(global_position) FROM {table.qualified}")
            )
        ).one()
        cursors = []
        for _ in range(count):
            row = (
                await conn.execute(
                    sa.text(
                        f"SELECT tx::text, global_position FROM {table.qualified}"
                        " WHERE global_position >= :p ORDER BY global_position LIMIT 1"
                    ),
                    {"p": rng.randint(low, high)},
                )
            ).one()
            cursors.append(Cursor(int(row[0]), int(row[1])))
        last = (
            await conn.execute(
                sa.text(
                    f"SELECT tx::text, global_position FROM {table.qualified}"
                    " ORDER BY tx DESC, global_position DESC LIMIT 1"
                )
            )
        ).one()
    return cursors, Cursor(int(last[0]), int(last[1]))


async def _reads(
    engine: Any, table: _Table, streams: list[str], config: Config, old: bool
) -> dict[str, Any]:
    """The read figures, one read at a time; `old`: also streams of the fill (cold)."""
    from services.shared.eventstore import EventStore

    store = EventStore(engine)
    n = config.reads
    lengths = [await store.stream_version(s) for s in streams]
    if min(lengths) != config.events:
        raise BenchError(f"a measured stream has {min(lengths)} events, not {config.events}")
    # Not timed: the pool's connections and the statement caches, as in a running service.
    for stream in streams:
        await store.read_stream(stream)
        await store.read_events(stream)
    tail_from = max(0, config.events - _TAIL)
    rows_read: dict[str, int] = {}

    async def whole(i: int) -> None:
        rows_read["read_stream"] = len(await store.read_stream(streams[i % len(streams)]))

    async def rebuild(i: int) -> None:
        rows_read["read_events"] = len(await store.read_events(streams[i % len(streams)]))

    async def tail(i: int) -> None:
        rows_read["read_events_tail"] = len(
            await store.read_events(streams[i % len(streams)], tail_from)
        )

    cursors, head = await _cursors(engine, table, n, config.seed)
    batch_rows: list[int] = []

    async def catch_up(i: int) -> None:
        batch_rows.append(len(await store.read_all(cursors[i], limit=config.batch)))

    head_rows: list[int] = []

    async def idle(i: int) -> None:
        head_rows.append(len(await store.read_all(head, limit=config.batch)))

    olds: list[str] = []
    if old and table.streams_filled:
        rng = random.Random(config.seed + 1)
        olds = [_fill_stream(rng.randrange(table.streams_filled)) for _ in range(n)]
    figures: dict[str, Any] = {
        "server": await _server_times(engine, streams, cursors, head, config, olds),
        "read_stream": _ms(await _timed(n, whole)),
        "read_events": _ms(await _timed(n, rebuild)),
        "read_events_tail": _ms(await _timed(n, tail)),
        "read_all": _ms(await _timed(n, catch_up)),
        "read_all_head": _ms(await _timed(n, idle)),
    }
    for key, count in rows_read.items():
        figures[key]["rows"] = count
    figures["read_all"]["rows"] = round(sum(batch_rows) / len(batch_rows), 1)
    figures["read_all_head"]["rows"] = round(sum(head_rows) / len(head_rows), 1)
    if olds:
        old_rows: list[int] = []

        async def cold(i: int) -> None:
            old_rows.append(len(await store.read_stream(olds[i])))

        figures["read_stream_old"] = _ms(await _timed(n, cold))
        figures["read_stream_old"]["rows"] = round(sum(old_rows) / len(old_rows), 1)
    return figures


# The statements behind the reads, for EXPLAIN ANALYZE: the server's share of each read.
_STREAM_SQL: Final = (
    "SELECT * FROM events WHERE stream_id = %s AND stream_version >= %s ORDER BY stream_version"
)
_ALL_SQL: Final = (
    "SELECT * FROM events WHERE (tx, global_position) > (%s::xid8, %s)"
    " AND tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY tx, global_position LIMIT %s"
)


async def _server_times(
    engine: Any,
    streams: list[str],
    cursors: list[Any],
    head: Any,
    config: Config,
    olds: list[str],
) -> dict[str, Any]:
    """Execution times inside the server (EXPLAIN ANALYZE), without the round trip and
    the client's decoding: what the table's size and layout change."""
    runs = min(config.reads, 50)
    tail_from = max(0, config.events - _TAIL)
    cases: dict[str, Callable[[int], tuple[str, tuple[Any, ...]]]] = {
        "read_stream": lambda i: (_STREAM_SQL, (streams[i % len(streams)], 0)),
        "read_events_tail": lambda i: (_STREAM_SQL, (streams[i % len(streams)], tail_from)),
        "read_all": lambda i: (
            _ALL_SQL,
            (str(cursors[i % len(cursors)].tx), cursors[i % len(cursors)].position, config.batch),
        ),
        "read_all_head": lambda i: (_ALL_SQL, (str(head.tx), head.position, config.batch)),
    }
    if olds:
        cases["read_stream_old"] = lambda i: (_STREAM_SQL, (olds[-1 - i % len(olds)], 0))
    out: dict[str, Any] = {}
    async with engine.connect() as conn:
        driver: Any = (await conn.get_raw_connection()).driver_connection
        for key, case in cases.items():
            times = []
            for i in range(runs):
                sql, params = case(i)
                cur = await driver.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
                plan = (await cur.fetchone())[0]
                times.append(float(plan[0]["Execution Time"]) / 1000)
            out[key] = _ms(times)
        await conn.rollback()
    return out


def _fill_stream(index: int) -> str:
    """The id `_FILL` gives its stream number `index` (md5 of the number, as a uuid)."""
    import hashlib

    return match_stream(str(uuid.UUID(hashlib.md5(f"fill:{index}".encode()).hexdigest())))


# ---------------------------------------------------------------------- the standby


async def _replica_lag(primary: str, replica: str, stop: asyncio.Event) -> dict[str, Any]:
    """While appends run: how long each WAL position of the primary takes to be replayed
    on the standby (the bench's clock, polling every 2 ms), and PostgreSQL's own
    `pg_stat_replication.replay_lag` at the end."""
    import psycopg

    lags: list[float] = []
    async with (
        await psycopg.AsyncConnection.connect(primary, autocommit=True) as p,
        await psycopg.AsyncConnection.connect(replica, autocommit=True) as r,
    ):
        while not stop.is_set():
            lsn = (await (await p.execute("SELECT pg_current_wal_lsn()")).fetchone())[0]  # type: ignore[index]
            start = time.perf_counter()
            while True:
                row = await (
                    await r.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))
                ).fetchone()
                if row and row[0]:
                    break
                await asyncio.sleep(0.002)
            lags.append(time.perf_counter() - start)
            await asyncio.sleep(0.02)  # pacing between samples, not synchronisation
        stat = await (
            await p.execute(
                "SELECT max(extract(epoch FROM write_lag)), max(extract(epoch FROM flush_lag)),"
                " max(extract(epoch FROM replay_lag)), count(*) FROM pg_stat_replication"
            )
        ).fetchone()
    figures = _ms(lags)
    assert stat is not None
    figures["standbys"] = int(stat[3])
    figures["pg_replay_lag_ms"] = None if stat[2] is None else round(float(stat[2]) * 1000, 3)
    figures["pg_flush_lag_ms"] = None if stat[1] is None else round(float(stat[1]) * 1000, 3)
    return figures


async def _caught_up(primary: str, replica: str) -> None:
    import psycopg

    async with (
        await psycopg.AsyncConnection.connect(primary, autocommit=True) as p,
        await psycopg.AsyncConnection.connect(replica, autocommit=True) as r,
    ):
        lsn = (await (await p.execute("SELECT pg_current_wal_lsn()")).fetchone())[0]  # type: ignore[index]
        deadline = time.monotonic() + 600
        while True:
            row = await (
                await r.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,))
            ).fetchone()
            if row and row[0]:
                return
            if time.monotonic() > deadline:
                raise BenchError("the standby did not replay the primary's WAL within 10 min")
            await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- the bench


async def _phase(
    tables: list[_Table], config: Config, tag: str, old: bool
) -> dict[str, dict[str, Any]]:
    from services.shared.database import create_engine, libpq_url

    out: dict[str, dict[str, Any]] = {}
    for table in tables:
        stop = asyncio.Event()
        lag_task = None
        if table.replica_url is not None:
            lag_task = asyncio.create_task(
                _replica_lag(libpq_url(table.url), libpq_url(table.replica_url), stop)
            )
        try:
            append, streams = await _appends(table, config, tag)
        finally:
            stop.set()
        _say(config, f"reads {table.label} {tag} ...")
        figures: dict[str, Any] = {
            "append": append,
            **await _reads(table.engine, table, streams, config, old),
        }
        if lag_task is not None and table.replica_url is not None:
            figures["replica_lag"] = await lag_task
            await _caught_up(libpq_url(table.url), libpq_url(table.replica_url))
            engine = create_engine(
                table.replica_url, pool_size=2, max_overflow=0, connect_args=table.connect_args
            )
            try:
                _say(config, f"reads {table.label} {tag} on the standby ...")
                figures["replica_reads"] = await _reads(engine, table, streams, config, old)
            finally:
                await engine.dispose()
        out[table.label] = figures
    return out


def _fill_all(tables: list[_Table], config: Config) -> dict[str, Any]:
    import psycopg

    from services.shared.database import libpq_url

    out: dict[str, Any] = {}
    for table in tables:
        with psycopg.connect(libpq_url(table.url)) as conn:
            have = int(conn.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()[0])  # type: ignore[index]
            started = time.perf_counter()
            with Progress(
                max(1, config.rows - have), f"fill {table.label}", _stream(config)
            ) as bar:
                inserted = _fill(conn, table, config.rows, config, bar)
            fill_s = time.perf_counter() - started
            conn.autocommit = True
            _say(config, f"vacuum analyze {table.label} ...")
            started = time.perf_counter()
            _vacuum(conn, table)
            vacuum_s = time.perf_counter() - started
            out[table.label] = {
                "inserted": inserted,
                "fill_s": round(fill_s, 2),
                "rows_per_s": round(inserted / fill_s, 1) if fill_s > 0 else None,
                "vacuum_s": round(vacuum_s, 2),
                "streams": table.streams_filled,
            }
    return out


def _all_sizes(tables: list[_Table]) -> dict[str, Any]:
    import psycopg

    from services.shared.database import libpq_url

    with psycopg.connect(libpq_url(tables[0].url)) as conn:
        return {t.label: _sizes(conn, t) for t in tables}


def _server_facts(url: str) -> dict[str, Any]:
    import psycopg

    from services.shared.database import libpq_url

    names = (
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "wal_level",
        "max_wal_size",
        "checkpoint_timeout",
        "effective_io_concurrency",
    )
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name = ANY(%s)",
            (list(names),),
        ).fetchall()
    return dict(rows)


@contextlib.contextmanager
def _database(config: Config) -> Iterator[str]:
    from services.shared.database import database_url, mask_url
    from services.shared.settings import Settings, SettingsError

    if config.database_url is not None:
        yield config.database_url
        return
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(database_url(settings))
        url = stack.enter_context(
            scratch_db(server, "ludo_bench_store", keep=config.keep, say=lambda m: _say(config, m))
        )
        _say(config, f"database: {mask_url(url)}")
        yield url


def bench(config: Config) -> dict[str, Any]:
    """Run the whole benchmark and return its figures (see `print_table`)."""
    if config.events < _TAIL + 1 or config.streams < 1 or config.clients < 1:
        raise BenchError(f"--events must be at least {_TAIL + 1}; --streams, --clients >= 1")
    import psycopg
    from sqlalchemy.engine import make_url

    from services.shared.database import libpq_url

    before = loadavg()
    with _database(config) as url:
        if config.partitions:
            with psycopg.connect(libpq_url(url), autocommit=True) as conn:
                for statement in _partitioned_ddl(config.partitions):
                    conn.execute(statement)
        replica = None
        if config.replica_url is not None:
            database = make_url(url).database
            standby = make_url(config.replica_url).set(database=database)
            replica = standby.render_as_string(hide_password=False)
        tables = [_Table("plain", url, "public", replica)]
        if config.partitions:
            tables.append(_Table("partitioned", url, PARTITION_SCHEMA))
        phases = asyncio.run(_phases(tables, config))
        clients = min(config.clients, config.streams)
        baseline = (
            pgbench_insert(url, clients, config.pgbench_seconds, lambda m: _say(config, m))
            if config.pgbench_seconds
            else None
        )
        server = _server_facts(url)
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": before,
        "loadavg_after": loadavg(),
        "server": server,
        "config": {
            k: v
            for k, v in msgspec.to_builtins(config).items()
            if k not in ("database_url", "replica_url")
        },
        "replica": config.replica_url is not None,
        **phases,
        "pgbench": baseline,
    }


async def _phases(tables: list[_Table], config: Config) -> dict[str, Any]:
    """Everything on one event loop: the engines' pooled connections belong to it."""
    try:
        empty = await _phase(tables, config, "empty", old=False)
        sizes_empty = await asyncio.to_thread(_all_sizes, tables)
        fill = await asyncio.to_thread(_fill_all, tables, config)
        sizes = await asyncio.to_thread(_all_sizes, tables)
        filled = await _phase(tables, config, "filled", old=True)
    finally:
        for table in tables:
            await table.dispose()
    return {
        "sizes_empty": sizes_empty,
        "fill": fill,
        "sizes": sizes,
        "empty": empty,
        "filled": filled,
    }


# ------------------------------------------------------------------------------ output

_FIGURES: Final = (
    ("append", "append (one statement, 1 event)"),
    ("read_stream", "read_stream from 0 (whole stream)"),
    ("read_events", "read_events from 0 (rebuild)"),
    ("read_events_tail", f"read_events from v ({_TAIL} events)"),
    ("read_all", "read_all after a random cursor"),
    ("read_all_head", "read_all at the head (idle poll)"),
    ("read_stream_old", "read_stream of an old filled stream"),
)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _rows(section: dict[str, Any], before: dict[str, Any] | None) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, name in _FIGURES:
        after = section.get(key)
        if after is None:
            continue
        was = before.get(key) if before else None
        for q in ("p50_ms", "p90_ms", "p99_ms"):
            label = f"{name} {q[:3]}" if q == "p50_ms" else f"  {q[:3]}"
            ratio = f"{after[q] / was[q]:.2f}x" if was and was[q] else ""
            out.append((label, f"{was[q]:.3f}" if was else "", f"{after[q]:.3f}", ratio))
    return out


def print_table(r: dict[str, Any]) -> None:
    cfg, srv = r["config"], r["server"]
    print(
        f"ludo bench store — Python {r['python']}, {r['cpus']} CPUs, PostgreSQL "
        f"{srv.get('server_version')} (shared_buffers {srv.get('shared_buffers')}, "
        f"synchronous_commit {srv.get('synchronous_commit')}), load average before "
        f"{r['loadavg_before']}, after {r['loadavg_after']}"
    )
    print(
        f"{cfg['rows']:,} rows; {cfg['streams']} measured streams x {cfg['events']} events, "
        f"{min(cfg['clients'], cfg['streams'])} clients; {cfg['reads']} reads per figure; "
        f"global read pages of {cfg['batch']}"
    )
    for label in r["filled"]:
        size, fill = r["sizes"][label], r["fill"][label]
        parts = f", {size['partitions']} partitions" if size["partitions"] else ""
        print(
            f"\n[{label}{parts}] {size['rows']:,} rows after the fill (asked {cfg['rows']:,}); "
            f"table {_mb(size['table_bytes'])}, indexes {_mb(size['index_bytes'])}, "
            f"total {_mb(size['total_bytes'])}; filled {fill['inserted']:,} rows in "
            f"{fill['fill_s']:.1f} s ({fill['rows_per_s'] or 0:,.0f} rows/s), "
            f"vacuum analyze {fill['vacuum_s']:.1f} s"
        )
        rows = _rows(r["filled"][label], r["empty"][label])
        width = max(len(row[0]) for row in rows) + 2
        print(f"{'ms':<{width}}{'empty':>10}{'filled':>10}{'after/before':>14}")
        for name, was, now, ratio in rows:
            print(f"{name:<{width}}{was:>10}{now:>10}{ratio:>14}")
        print("  inside the server (EXPLAIN ANALYZE execution time, p50 ms):")
        for key, name in _FIGURES:
            was, now = r["empty"][label]["server"].get(key), r["filled"][label]["server"].get(key)
            if was and now:
                ratio = f"{now['p50_ms'] / was['p50_ms']:.2f}x" if was["p50_ms"] else ""
                values = f"{was['p50_ms']:>10.3f}{now['p50_ms']:>10.3f}{ratio:>14}"
                print(f"  {name:<{width - 2}}{values}")
        for tag in ("empty", "filled"):
            a = r[tag][label]["append"]
            busy = a.get("machine_busy_cores")
            print(
                f"appends/s {tag}: {a['appends_per_s']:,.1f} at {a['clients']} clients; bench "
                f"CPU {a['client_cpu_ms_per_append']:.3f} ms/append"
                + (f"; machine {busy:.2f} cores busy" if busy is not None else "")
            )
    if "partitioned" in r["filled"]:
        print("\npartitioned / plain, filled (p50):")
        plain, part = r["filled"]["plain"], r["filled"]["partitioned"]
        for key, name in _FIGURES:
            if key in plain and key in part and plain[key]["p50_ms"]:
                line = f"  {name}: {part[key]['p50_ms'] / plain[key]['p50_ms']:.2f}x"
                inside = plain["server"].get(key), part["server"].get(key)
                if inside[0] and inside[1] and inside[0]["p50_ms"]:
                    line += f" (inside the server {inside[1]['p50_ms'] / inside[0]['p50_ms']:.2f}x)"
                print(line)
    for tag in ("empty", "filled"):
        plain = r[tag]["plain"]
        if "replica_lag" in plain:
            lag = plain["replica_lag"]
            print(
                f"\nstandby, {tag}: replay lag under the appends p50 {lag['p50_ms']:.1f} ms, "
                f"p90 {lag['p90_ms']:.1f}, p99 {lag['p99_ms']:.1f} ({lag['n']} samples); "
                f"pg_stat_replication replay_lag {lag['pg_replay_lag_ms']} ms"
            )
            on = plain["replica_reads"]
            for key, name in _FIGURES:
                if key in on and key != "append":
                    line = (
                        f"  {name}: p50 {on[key]['p50_ms']:.3f} ms on the standby vs "
                        f"{plain[key]['p50_ms']:.3f} on the primary"
                    )
                    if key in on["server"] and key in plain["server"]:
                        line += (
                            f" (inside the server {on['server'][key]['p50_ms']:.3f} vs "
                            f"{plain['server'][key]['p50_ms']:.3f})"
                        )
                    print(line)
    pg = r["pgbench"]
    if pg is None:
        print("\npgbench: skipped")
    elif "skipped" in pg:
        print(f"\npgbench: {pg['skipped']}")
    else:
        print(
            f"\npgbench single-row INSERT (-c {pg['clients']} -j {pg['threads']}, "
            f"{pg['seconds']} s): {pg['tps']:,.1f} TPS, latency average {pg['latency_avg_ms']} ms"
        )
        for tag in ("empty", "filled"):
            a = r[tag]["plain"]["append"]
            print(f"  appends/s ({tag}, plain) / pgbench TPS: {a['appends_per_s'] / pg['tps']:.3f}")


BENCH = Bench(
    name="store",
    help="event store append/read/global-read latency, empty vs filled, plain vs partitioned",
    options=_options,
    measure=measure,
    table=print_table,
)
