"""`ludo bench ranking`: the ranking consumer's throughput, recompute and live lag.

On a scratch database (created on the server of `DATABASE_URL` / the embedded PostgreSQL,
migrated, dropped afterwards unless `--keep`):

1. writes a backlog of N finished ranked matches straight into the event store (the party's
   `MatchOpened`, then `MatchCreated`, `MatchStarted`, `MatchFinished`, with the `matches`
   row, as `tests/services/ranking/finished_matches.py` writes them), in batches: one
   transaction and one COPY per batch, hash chain computed with the store's own
   `event_hash`;
2. runs one consumer until it has caught up with that backlog (matches/s);
3. runs `recompute` from scratch (matches/s), and compares its hash with the live one;
4. with the consumer running as its own asyncio task (NOTIFY + poll), appends finished
   ranked matches at a steady rate through `EventStore.append` and measures, for each,
   the time from its `MatchFinished` commit to its rating changes being visible.

Nothing here asserts a time; it prints figures (docs/benchmarks.md records them) and its
targets as ratios to baselines of the same run: recompute against the rate the backlog
was written at, the live lag against the MatchFinished append's own time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import random
import sys
import time
import uuid
from typing import Any, Final

import msgspec

from benchmarks.common import BenchError, percentile, scratch_db
from benchmarks.harness import Bench, Figures, Say
from domain.streams import match_stream, party_stream
from ludo_cli.arguments import positive_float, positive_int

__all__ = ["BENCH", "Config", "bench", "measure", "print_table"]

# Targets are ratios to baselines of the same run (the machine's speed moves up to 3×):
# recompute at least this share of the rate the same server wrote the backlog at (COPY,
# one transaction per batch: what the matches cost to write at all) ...
TARGET_RECOMPUTE_SHARE: Final = 0.25
# ... and a finished match's rating visible within this many times the p99 of its own
# MatchFinished append (p99 over p99).
TARGET_LAG_APPENDS: Final = 10.0
_BATCH: Final = 1000  # matches per backlog transaction


class Config(msgspec.Struct, kw_only=True):
    matches: int = 100_000
    players: int = 2_000
    tie_rate: float = 0.1
    rate: float = 20.0
    seconds: float = 15.0
    seed: int = 0
    keep: bool = False
    progress: bool = True
    quiet_logs: bool = True  # configure logging: warnings only, on stderr
    database_url: str | None = None  # None: a scratch database (see the module docstring)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matches", type=positive_int, default=100_000, help="backlog of ranked matches"
    )
    parser.add_argument("--players", type=positive_int, default=2_000, help="player pool")
    parser.add_argument("--rate", type=positive_float, default=20.0, help="live matches per second")
    parser.add_argument("--seconds", type=positive_float, default=15.0, help="live phase length")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")


def measure(args: argparse.Namespace, say: Say) -> Figures:
    config = Config(
        matches=args.matches,
        players=args.players,
        rate=args.rate,
        seconds=args.seconds,
        seed=args.seed,
        keep=args.keep,
        progress=not args.json,
    )
    return bench(config)


def _say(config: Config, line: str) -> None:
    if config.progress:
        print(line, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ the database


# ------------------------------------------------------------------------- the matches


class _Matches:
    """Random finished ranked matches: 2-4 human seats from a pool, some tied places."""

    def __init__(self, config: Config) -> None:
        from domain.rules import parse_ruleset

        self.rng = random.Random(config.seed)
        self.pool = [f"bench-player-{i:05d}" for i in range(config.players)]
        self.tie_rate = config.tie_rate
        self.ruleset = msgspec.to_builtins(parse_ruleset({"preset": "standard"}))

    def events(self) -> tuple[str, str, Any, list[Any]]:
        """(match stream, party id, the party's MatchOpened, the match's events)."""
        from domain import events as ev
        from domain.party import MatchOpened
        from domain.settings import PARTY_SEATS

        rng = self.rng
        n = rng.choice(PARTY_SEATS)
        players = rng.sample(self.pool, n)
        order = list(range(n))
        rng.shuffle(order)
        places = [0] * n
        for rank, seat in enumerate(order):
            places[seat] = rank + 1
        if rng.random() < self.tie_rate:  # two neighbours in the order share a place
            i = rng.randrange(n - 1)
            a, b = order[i], order[i + 1]
            places[b] = places[a]
        match_id = str(uuid.uuid4())
        party_id = str(uuid.uuid4())
        specs = tuple(ev.SeatSpec(name=p, player_id=p) for p in players)
        opened = MatchOpened(match_id=match_id, first_seat=0, game=1, ranked=True, turn_limit=None)
        events = [
            ev.MatchCreated(ruleset=self.ruleset, seats=specs, seed_hash="0" * 64),
            ev.MatchStarted(client_seeds=("",) * n, client_seed=""),
            ev.MatchFinished(placements=tuple(places)),
        ]
        return match_stream(match_id), party_id, opened, events


def _chain_rows(stream_id: str, events: list[Any]) -> list[tuple[Any, ...]]:
    """COPY rows of a new stream, hash-chained exactly as `EventStore.append` does."""
    from domain.chain import GENESIS, event_hash
    from services.shared.eventstore import EventData

    rows = []
    prev = GENESIS
    for version, event in enumerate(events):
        item = EventData.of(event)
        digest = event_hash(prev, stream_id, version, item.type, item.schema_version, item.data)
        rows.append(
            (
                stream_id,
                version,
                uuid.uuid4(),
                item.type,
                item.schema_version,
                item.data.decode(),
                "{}",
                prev,
                digest,
            )
        )
        prev = digest
    return rows


def _backlog(url: str, config: Config, gen: _Matches) -> dict[str, Any]:
    """Writes the backlog: one transaction and one COPY per table per batch."""
    import psycopg

    from ludo_cli.progress import Progress
    from services.shared.database import libpq_url

    started = time.perf_counter()
    with (
        psycopg.connect(libpq_url(url)) as conn,
        Progress(config.matches, "backlog  ") as bar,
    ):
        done = 0
        while done < config.matches:
            size = min(_BATCH, config.matches - done)
            event_rows: list[tuple[Any, ...]] = []
            match_rows: list[tuple[Any, ...]] = []
            for _ in range(size):
                stream, party_id, opened, events = gen.events()
                event_rows += _chain_rows(party_stream(party_id), [opened])
                event_rows += _chain_rows(stream, events)
                match_rows.append((stream, party_id, None, True))
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(
                    "COPY matches (stream_id, party_id, turn_limit, ranked) FROM STDIN"
                ) as cp:
                    for row in match_rows:
                        cp.write_row(row)
                with cur.copy(
                    "COPY events (stream_id, stream_version, event_id, type, schema_version, "
                    "data, metadata, prev_hash, hash) FROM STDIN"
                ) as cp:
                    for row in event_rows:
                        cp.write_row(row)
            done += size
            bar.advance(size)
        conn.execute("ANALYZE")
    seconds = time.perf_counter() - started
    return {
        "matches": config.matches,
        "seconds": round(seconds, 2),
        "matches_per_s": round(config.matches / seconds, 1),
    }


# ------------------------------------------------------------------------------ phases


async def _consume_backlog(engine: Any, config: Config) -> dict[str, Any]:
    from ludo_cli.progress import Progress
    from services.ranking.checkpoints import read_checkpoint
    from services.ranking.ratings.consumer import RankingConsumer, head_cursor

    consumer = RankingConsumer(engine, batch=500)
    head = await head_cursor(engine)
    async with engine.connect() as conn:
        total = int(await conn.scalar(_sql("SELECT count(*) FROM events")))
    started = time.perf_counter()
    with Progress(total, "consumer ") as bar:
        while True:
            n = await consumer.step()
            bar.advance(n)
            if n:
                continue
            async with engine.connect() as conn:
                if await read_checkpoint(conn, consumer.name) >= head:
                    break
            await asyncio.sleep(0.02)
    seconds = time.perf_counter() - started
    async with engine.connect() as conn:
        rated = int(
            await conn.scalar(_sql("SELECT count(DISTINCT match_stream) FROM rating_changes"))
        )
    return {
        "matches": rated,
        "events": total,
        "seconds": round(seconds, 2),
        "matches_per_s": round(rated / seconds, 1),
    }


def _sql(sql: str) -> Any:
    import sqlalchemy as sa

    return sa.text(sql)


async def _recompute(engine: Any, config: Config) -> dict[str, Any]:
    from services.ranking.ratings.consumer import ratings_hash, recompute

    live, rows = await ratings_hash(engine)
    _say(config, "recompute from scratch ...")
    started = time.perf_counter()
    digest = await recompute(engine)
    seconds = time.perf_counter() - started
    async with engine.connect() as conn:
        rated = int(
            await conn.scalar(_sql("SELECT count(DISTINCT match_stream) FROM rating_changes"))
        )
    return {
        "matches": rated,
        "seconds": round(seconds, 2),
        "matches_per_s": round(rated / seconds, 1),
        "hash": digest,
        "live_hash": live,
        "ratings": rows,
        "hash_equal": digest == live,
    }


async def _live(engine: Any, config: Config, gen: _Matches) -> dict[str, Any]:
    """The consumer as its own task; matches appended at `rate`/s; commit -> visible."""
    from services.ranking.ratings.consumer import RankingConsumer
    from services.shared.eventstore import EventStore

    store = EventStore(engine)
    consumer = RankingConsumer(engine, store, batch=500, poll=1.0)
    task = asyncio.create_task(consumer.run(), name="ranking-consumer")
    committed: dict[str, float] = {}
    seen: dict[str, float] = {}
    appended: list[float] = []  # seconds each MatchFinished append took to commit
    writing = True

    async def write_one() -> None:
        stream, party_id, opened, events = gen.events()
        async with engine.begin() as conn:
            await conn.execute(
                _sql(
                    "INSERT INTO matches (stream_id, party_id, turn_limit, ranked) "
                    "VALUES (:s, :p, NULL, true)"
                ),
                {"s": stream, "p": party_id},
            )
            party = await store.append(party_stream(party_id), 0, [opened], conn=conn)
            await store.append(stream, 0, events[:2], conn=conn)
        await store.notify(party)
        async with engine.connect() as conn:
            began = time.perf_counter()
            async with conn.begin():
                result = await store.append(stream, 2, events[2:], conn=conn)
            committed[stream] = time.perf_counter()  # MatchFinished is committed
            appended.append(committed[stream] - began)
            await store.notify(result, conn)

    async def watch() -> None:
        async with engine.connect() as conn:
            while writing or len(seen) < len(committed):
                pending = [s for s in committed if s not in seen]
                if pending:
                    rows = (
                        await conn.execute(
                            _sql(
                                "SELECT DISTINCT match_stream FROM rating_changes "
                                "WHERE match_stream = ANY(:s)"
                            ),
                            {"s": pending},
                        )
                    ).all()
                    await conn.commit()
                    now = time.perf_counter()
                    for r in rows:
                        seen[r.match_stream] = now
                await asyncio.sleep(0.005)

    try:
        deadline = time.perf_counter() + 30
        while not consumer.active:
            if task.done() or time.perf_counter() > deadline:
                raise BenchError("the ranking consumer did not become active")
            await asyncio.sleep(0.01)
        watcher = asyncio.create_task(watch())
        count = max(1, round(config.rate * config.seconds))
        interval = 1.0 / config.rate
        start = time.perf_counter()
        writers: list[asyncio.Task[None]] = []
        for i in range(count):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            writers.append(asyncio.create_task(write_one()))
        await asyncio.gather(*writers)
        writing = False
        await asyncio.wait_for(watcher, timeout=60)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    lags = sorted((seen[s] - committed[s]) * 1000 for s in committed)
    appends = sorted(t * 1000 for t in appended)
    return {
        "matches": len(lags),
        "rate": config.rate,
        "seconds": config.seconds,
        "p50_ms": round(percentile(lags, 0.5), 1),
        "p99_ms": round(percentile(lags, 0.99), 1),
        "max_ms": round(lags[-1], 1),
        # The same run's baseline: the MatchFinished append itself, to its commit.
        "append_p50_ms": round(percentile(appends, 0.5), 1),
        "append_p99_ms": round(percentile(appends, 0.99), 1),
    }


async def _phases(url: str, config: Config, gen: _Matches) -> dict[str, Any]:
    from services.ranking.ratings.consumer import ratings_hash
    from services.shared.database import create_engine

    engine = create_engine(url, pool_size=8, max_overflow=4)
    try:
        consumer = await _consume_backlog(engine, config)
        recomputed = await _recompute(engine, config)
        _say(config, f"live: {config.rate:g} matches/s for {config.seconds:g} s ...")
        live = await _live(engine, config, gen)
        final_hash, _ = await ratings_hash(engine)
    finally:
        await engine.dispose()
    return {"consumer": consumer, "recompute": recomputed, "live": live, "final_hash": final_hash}


# --------------------------------------------------------------------------- the bench


def bench(config: Config) -> dict[str, Any]:
    """Run the whole benchmark and return its figures (see `print_table`)."""
    if config.matches < 1 or config.seconds <= 0 or config.rate <= 0 or config.players < 4:
        raise BenchError("--matches, --seconds, --rate must be positive, --players at least 4")
    from services.shared.database import database_url, mask_url
    from services.shared.settings import Settings, SettingsError

    loadavg = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    if config.quiet_logs:
        from services.shared.logging import configure_logging

        # The consumer logs every batch: warnings only (LUDO_LOG_LEVEL overrides), on stderr.
        level = os.environ.get("LUDO_LOG_LEVEL", "warning")
        configure_logging(msgspec.structs.replace(settings, log_level=level), stream=sys.stderr)
    gen = _Matches(config)
    with contextlib.ExitStack() as stack:
        if config.database_url is not None:
            url = config.database_url
        else:
            server = stack.enter_context(database_url(settings))
            url = stack.enter_context(
                scratch_db(
                    server, "ludo_bench_ranking", keep=config.keep, say=lambda m: _say(config, m)
                )
            )
        _say(config, f"database: {mask_url(url)}")
        backlog = _backlog(url, config, gen)
        phases = asyncio.run(_phases(url, config, gen))
    loadavg_after = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    rec, live = phases["recompute"], phases["live"]
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": loadavg,
        "loadavg_after": loadavg_after,
        "players": config.players,
        "backlog": backlog,
        **phases,
        "targets": {
            "recompute_share_of_backlog_write": {
                "value": round(rec["matches_per_s"] / backlog["matches_per_s"], 3),
                "target": f">= {TARGET_RECOMPUTE_SHARE:g}",
                "met": rec["matches_per_s"] >= TARGET_RECOMPUTE_SHARE * backlog["matches_per_s"],
            },
            "live_p99_in_appends": {
                "value": round(live["p99_ms"] / live["append_p99_ms"], 2),
                "target": f"<= {TARGET_LAG_APPENDS:g}",
                "met": live["p99_ms"] <= TARGET_LAG_APPENDS * live["append_p99_ms"],
            },
            "hash_equal": {"target": "recompute == live", "met": rec["hash_equal"]},
        },
    }


def _met(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT MET")


def print_table(r: dict[str, Any]) -> None:
    b, c, rec, live, t = r["backlog"], r["consumer"], r["recompute"], r["live"], r["targets"]
    print(
        f"ludo bench ranking — Python {r['python']}, {r['cpus']} CPUs, load average before "
        f"{r['loadavg_before']}, after {r['loadavg_after']}; {b['matches']:,} ranked matches, "
        f"{r['players']:,} players"
    )
    rows = [
        ("backlog written (matches/s)", f"{b['matches_per_s']:,.1f}", "", ""),
        ("consumer catch-up (matches/s)", f"{c['matches_per_s']:,.1f}", "", ""),
        ("recompute (matches/s)", f"{rec['matches_per_s']:,.1f}", "", ""),
        (
            "recompute ÷ backlog written",
            f"{t['recompute_share_of_backlog_write']['value']:.2f}×",
            t["recompute_share_of_backlog_write"]["target"],
            _met(t["recompute_share_of_backlog_write"]["met"]),
        ),
        (
            "recompute hash == live hash",
            "yes" if rec["hash_equal"] else "NO",
            "equal",
            _met(t["hash_equal"]["met"]),
        ),
        (
            f"live lag p50 ({live['matches']} at {live['rate']:g}/s)",
            f"{live['p50_ms']:.1f} ms",
            "",
            "",
        ),
        ("live lag p99", f"{live['p99_ms']:.1f} ms", "", ""),
        ("live lag max", f"{live['max_ms']:.1f} ms", "", ""),
        ("MatchFinished append p99 (baseline)", f"{live['append_p99_ms']:.1f} ms", "", ""),
        (
            "live lag p99 ÷ append p99",
            f"{t['live_p99_in_appends']['value']:.1f}×",
            t["live_p99_in_appends"]["target"],
            _met(t["live_p99_in_appends"]["met"]),
        ),
    ]
    width = max(len(row[0]) for row in rows) + 2
    print(f"{'figure':<{width}}{'value':>14}  {'target':<12}{'':>8}")
    for name, value, target, met in rows:
        print(f"{name:<{width}}{value:>14}  {target:<12}{met:>8}")
    print(f"recompute hash {rec['hash']} ({rec['ratings']} ratings)")


BENCH = Bench(
    name="ranking",
    help="ranking consumer matches/s, recompute matches/s and hash, live rating lag",
    options=_options,
    measure=measure,
    table=print_table,
)
