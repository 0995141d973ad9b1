"""`ludo bench service`: commands/s and latency of the match service, over HTTP or over
the match socket (`--over socket`, `service_socket.py`).

K matches are played at once against the real service (the app under uvicorn in a
subprocess on a free 127.0.0.1 port, `LUDO_CPU_DELAY=0`, on a scratch database of the
same PostgreSQL; or `--url` for a service that is already running on a loopback address).
Each match is two guests at a 2-seat party; one asyncio task per match makes the seat to
act roll, or play its first legal move (`GET /moves`), until the match ends (then a new
match starts) or the time is up. Only roll and move POSTs that returned 200 (over the
socket: roll and move messages answered by a `result` frame) count as commands; the
warm-up is not measured.

In the same run, and on the same PostgreSQL, at the same concurrency:

- `pgbench` inserts one small event-shaped row per transaction into a scratch table, the
  raw write rate the service is compared with (ratio = commands/s ÷ pgbench TPS);
- a few finished matches are rebuilt from PostgreSQL many times (`read_events` + `fold`,
  the event store used directly, no state cache);
- the stack's floor (`stack_floor.py`: a bare Litestar endpoint, one INSERT per command)
  and the service are loaded in turn, `--floor-rounds` times: the service's CPU per
  command as a multiple of the floor's is its target (a ratio, as the machine's speed moves).

Nothing asserts a time: the figures are printed beside the targets (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import multiprocessing
import os
import platform
import queue
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from benchmarks import stack_floor
from benchmarks.common import (
    ROOT,
    BenchError,
    checkpoint,
    commit_of,
    loadavg,
    percentile,
    pgbench_insert,
    reap,
    scratch_db,
    worktree,
)
from benchmarks.harness import Bench, Figures, Say
from benchmarks.http1 import Http1
from benchmarks.match_load import Load, SetupFailed, fold_events, new_match, request
from benchmarks.service_process import Service, check_loopback, serve, service_cpu_seconds
from benchmarks.service_socket import play_over_socket
from domain.decider import current_legal_moves
from ludo_cli.arguments import positive_float, positive_int, rules_json
from ludo_cli.progress import Progress

__all__ = ["BENCH", "BenchError", "Config", "background_load", "bench", "drive", "measure"]

# Targets at 32 concurrent matches, each a ratio to a baseline of the same run or a count:
# the machine's speed moves up to 3x between hours, so milliseconds are printed, never
# targets. The service's CPU per command against the stack's
# floor is `stack_floor.TARGET_MULTIPLE`.
TARGET_RATIO = 0.15
TARGET_TRANSACTIONS = 2.0


class Config(msgspec.Struct, kw_only=True):
    """What `bench` measures. `url=None`: start the service on `database_url` (None: a
    scratch database on the server of `DATABASE_URL` / the embedded PostgreSQL)."""

    matches: int = 32
    over: Literal["http", "socket"] = "http"  # socket: the commands over the match socket
    seconds: float = 20.0
    warmup: float = 3.0
    workers: int = 1
    generators: int = 2  # load-generator processes
    url: str | None = None
    service_pid: int | None = None  # with `url`: the running service's process, for its CPU
    database_url: str | None = None
    rules: dict[str, Any] = msgspec.field(default_factory=lambda: {"preset": "standard"})
    match_commands: int = 5000
    max_commands: int = 1_000_000
    pgbench: bool = True
    pgbench_seconds: float | None = None  # default: `seconds`
    rebuild_matches: int = 4
    rebuilds: int = 200
    log_level: str = "info"
    progress: bool = True
    loadavg_before: list[float] | None = None  # set by `bench`
    # Also serve the code of this git ref (its own scratch database and schema) and load
    # both in turn, `rounds` times: figures side by side from one window of the machine.
    baseline_ref: str | None = None
    rounds: int = 3
    # Rounds of the service and the stack's floor in turn (`stack_floor.py`); 0: none.
    floor_rounds: int = 3


# ----------------------------------------------------------------------------- the CLI


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=32, help="concurrent matches (K)")
    parser.add_argument(
        "--over",
        choices=("http", "socket"),
        default="http",
        help="send the commands as HTTP POSTs or over the match socket",
    )
    parser.add_argument("--seconds", type=positive_float, default=20.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    parser.add_argument("--workers", type=positive_int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--generators", type=positive_int, default=2, help="load-generator processes"
    )
    parser.add_argument(
        "--url", default=None, help="a running service (loopback only), e.g. http://127.0.0.1:8000"
    )
    parser.add_argument(
        "--service-pid",
        type=positive_int,
        default=None,
        help="with --url: the running service's process id, to report its CPU",
    )
    parser.add_argument(
        "--rules", type=rules_json, default='{"preset": "standard"}', help="ruleset JSON"
    )
    parser.add_argument(
        "--match-commands", type=positive_int, default=5000, help="command budget of one match"
    )
    parser.add_argument(
        "--max-commands", type=positive_int, default=1_000_000, help="stop after this many commands"
    )
    parser.add_argument("--no-pgbench", action="store_true", help="skip the pgbench baseline")
    parser.add_argument(
        "--rebuild-matches", type=positive_int, default=4, help="finished bga matches to rebuild"
    )
    parser.add_argument("--rebuilds", type=positive_int, default=200, help="timed rebuilds")
    parser.add_argument(
        "--log-level", default="info", help="the started service's LUDO_LOG_LEVEL (info)"
    )
    parser.add_argument(
        "--baseline-ref",
        default=None,
        help="also serve this git ref (e.g. issue-14-start) and load the two in turn, "
        "--rounds times, printing their figures side by side",
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=3, help="with --baseline-ref: rounds of both"
    )
    parser.add_argument(
        "--floor-rounds",
        type=int,
        default=3,
        help="rounds of the service and the stack's floor loaded in turn (0: no floor)",
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    rules = msgspec.json.decode(args.rules)  # valid: checked by `rules_json`
    config = Config(
        matches=args.matches,
        over=args.over,
        seconds=args.seconds,
        warmup=args.warmup,
        workers=args.workers,
        generators=args.generators,
        url=args.url,
        service_pid=args.service_pid,
        rules=rules,
        match_commands=args.match_commands,
        max_commands=args.max_commands,
        pgbench=not args.no_pgbench,
        rebuild_matches=args.rebuild_matches,
        rebuilds=args.rebuilds,
        log_level=args.log_level,
        progress=not args.json,
        baseline_ref=args.baseline_ref,
        rounds=args.rounds,
        floor_rounds=args.floor_rounds,
    )
    return bench(config)


# --------------------------------------------------------------------------- the bench


def bench(config: Config) -> dict[str, Any]:
    """Run the whole benchmark and return its figures (see `print_table`)."""
    if config.matches < 1 or config.seconds <= 0 or config.workers < 1:
        raise BenchError("--matches, --seconds and --workers must be positive")
    from services.shared.database import database_url, mask_url
    from services.shared.settings import Settings, SettingsError

    if config.url is not None:
        check_loopback(config.url)
    if config.baseline_ref is not None:
        if config.url is not None or config.database_url is not None:
            raise BenchError("--baseline-ref starts both services on scratch databases: drop --url")
        return _compare(config)
    config.loadavg_before = loadavg()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    with contextlib.ExitStack() as stack:
        if config.database_url is not None:
            db_url = config.database_url
        else:
            server = stack.enter_context(database_url(settings))
            # Our own service gets a scratch database (dropped after); a running service
            # (--url) is assumed to use the database of DATABASE_URL / the embedded server.
            db_url = server if config.url is not None else stack.enter_context(scratch_db(server))
        _say(config, f"database: {mask_url(db_url)}")
        service_pid: int | None
        if config.url is None:
            base, service_pid = stack.enter_context(_serve(db_url, config))
        else:
            base, service_pid = config.url.rstrip("/"), config.service_pid
        load = drive(base, config, service_pid, db_url)
        finished = asyncio.run(_finished_matches(base, config))
        rebuild = asyncio.run(_rebuild(db_url, finished, config))
        baseline = _pgbench(db_url, config) if config.pgbench else None
    return _result(config, load, rebuild, baseline, _floor(config))


def _floor(config: Config) -> dict[str, Any] | None:
    """The service and the stack's floor loaded in turn (a service given by `--url` has
    no floor beside it: the bench does not start it)."""
    if config.url is not None or config.floor_rounds < 1:
        return None

    def service(db_url: str) -> dict[str, Any]:
        # No deadline worker: nothing but the load is measured, as in the floor.
        with _serve(db_url, config, env={"LUDO_SCHEDULER": "false"}) as (base, pid):
            checkpoint(db_url)
            load = drive(base, config, pid, db_url)
        return {
            "commands": load["commands"],
            "commands_per_s": load["commands_per_s"],
            "cpu_ms_per_command": load["cpu_ms_per_command"]["service"],
        }

    runs = {"service": service, "floor": stack_floor.floor_run(config)}
    rows = stack_floor.compare(
        config, lambda line: _say(config, line), runs=runs, database_url=config.database_url
    )
    return stack_floor.multiples(rows, config.over)


def _compare(config: Config) -> dict[str, Any]:
    """This tree's service and `baseline_ref`'s, loaded in turn on the same PostgreSQL:
    `rounds` rounds, the order swapped each round so that a drift of the machine's speed
    weighs on both alike, and pgbench once a round. Each run is a standalone run's: its
    own service, started for it on a fresh scratch database (migrated by its own tree),
    stopped and dropped after it, and a CHECKPOINT before it (`checkpoint`). Why: with both
    services up and both databases kept for all the rounds, every round had run slower
    than the one before, both codes and pgbench alike (in the third, twice the PostgreSQL
    CPU per command and a quarter more of the service's); run this way the rounds agree
    within a few per cent (docs/benchmarks.md). Which of the three had been the cause was
    not isolated. No rebuilds (they measure the store in this process, not a service)."""
    from services.shared.database import database_url
    from services.shared.settings import Settings, SettingsError

    assert config.baseline_ref is not None
    config.baseline_ref = commit_of(config.baseline_ref)  # the commit, as the figures name it
    config.loadavg_before = loadavg()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    rounds: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(database_url(settings))
        roots = {"baseline": stack.enter_context(worktree(config.baseline_ref)), "now": ROOT}
        for number in range(1, config.rounds + 1):
            row: dict[str, Any] = {"round": number, "pgbench_tps": None}
            for label in _order(number):
                _say(config, f"round {number} of {config.rounds}: {label}")
                root = roots[label]
                with contextlib.ExitStack() as run:
                    tree = None if root == ROOT else root
                    db_url = run.enter_context(scratch_db(server, f"ludo_bench_{label}", root=tree))
                    # No deadline worker: nothing but the load is measured.
                    base, pid = run.enter_context(
                        _serve(db_url, config, root=root, env={"LUDO_SCHEDULER": "false"})
                    )
                    checkpoint(db_url)
                    load = drive(base, config, pid, db_url)
                    row[label] = {k: v for k, v in load.items() if k != "finished_match_ids"}
                    if label == "now" and config.pgbench:
                        row["pgbench_tps"] = _pgbench(db_url, config).get("tps")
            rounds.append(row)
    return _comparison(config, rounds)


def _order(number: int) -> tuple[str, str]:
    """The codes in the order round `number` (from 1) loads them: swapped each round."""
    return ("baseline", "now") if number % 2 else ("now", "baseline")


_COMPARED = {  # figure: where it is in a run's load figures
    "commands_per_s": ("commands_per_s",),
    "p99_ms": ("p99_ms",),
    "service_cpu_ms": ("cpu_ms_per_command", "service"),
    "postgresql_cpu_ms": ("cpu_ms_per_command", "postgresql"),
    "generator_cpu_ms": ("cpu_ms_per_command", "generator"),
    "transactions": ("transactions_per_command",),
}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _comparison(config: Config, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    medians: dict[str, dict[str, float | None]] = {}
    for label in ("baseline", "now"):
        medians[label] = {}
        for figure, path in _COMPARED.items():
            values = []
            for row in rounds:
                value: Any = row[label]
                for key in path:
                    value = value[key]
                if value is not None:
                    values.append(float(value))
            medians[label][figure] = _median(values)
    tps = _median([r["pgbench_tps"] for r in rounds if r["pgbench_tps"]])
    now, before = medians["now"], medians["baseline"]

    def times(a: float | None, b: float | None) -> float | None:
        return round(a / b, 1) if a and b else None

    def paired(part: str) -> float | None:
        # Each round's own factor, then their median: the two codes of a round ran minutes
        # apart, so a drift of the machine's speed between rounds (up to 2x within an hour,
        # docs/benchmarks.md) cancels out of it, where it only averages out of the medians.
        factors = []
        for row in rounds:
            a = row["baseline"]["cpu_ms_per_command"][part]
            b = row["now"]["cpu_ms_per_command"][part]
            if a and b:
                factors.append(a / b)
        return round(statistics.median(factors), 2) if factors else None

    ratio = round(now["commands_per_s"] / tps, 3) if tps and now["commands_per_s"] else None
    service_cpu, pg_cpu = now["service_cpu_ms"], now["postgresql_cpu_ms"]
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": config_loadavg(config),
        "service": f"started here, {config.workers} uvicorn worker(s), and the baseline's",
        "baseline_ref": config.baseline_ref,
        "matches": config.matches,
        "over": config.over,
        "seconds": config.seconds,
        "warmup": config.warmup,
        "rules": config.rules,
        "rounds": rounds,
        "median": medians,
        "pgbench_tps": tps,
        "ratio": ratio,
        "less_cpu": {  # the baseline's median CPU per command ÷ this tree's
            "service": times(before["service_cpu_ms"], service_cpu),
            "postgresql": times(before["postgresql_cpu_ms"], pg_cpu),
        },
        "less_cpu_paired": {  # the median of each round's baseline ÷ this tree's
            "service": paired("service"),
            "postgresql": paired("postgresql"),
        },
        "targets": _targets(ratio, now["transactions"]),
    }


def _say(config: Config, line: str) -> None:
    if config.progress:
        print(line, file=sys.stderr, flush=True)


def _serve(
    db_url: str, config: Config, *, root: Path | None = None, env: dict[str, str] | None = None
) -> contextlib.AbstractContextManager[Service]:
    """The match service for `config`'s load (`serve`, with its workers and log level)."""
    return serve(
        db_url,
        root=root,
        env=env,
        workers=config.workers,
        log_level=config.log_level,
        say=lambda line: _say(config, line),
    )


# ------------------------------------------------------------------------ the HTTP load


async def _play(
    client: Any,
    load: Load,
    rules: dict[str, Any],
    budget: int,
    on_command: Callable[[], None],
    *,
    once: bool = False,
) -> None:
    """One match after another until `load.stop` (or one match, to its end, when `once`).

    Like a real client, a task follows its match from the events each command returns,
    folded with the domain's own `apply`, and picks the first legal move from that fold:
    one request per command. Any doubt (an error) and it reads the events again."""
    while not load.stop:
        try:
            match_id, auths = await new_match(client, load, rules)
        except SetupFailed as exc:
            load.setup_errors[str(exc)[:120]] += 1
            await asyncio.sleep(0.1)
            if once and sum(load.setup_errors.values()) > 10:
                return
            continue
        load.matches_started += 1
        base = f"/api/matches/{match_id}"
        state = None
        finished = False
        for _ in range(budget):
            if load.stop and not once:
                break
            if state is None:
                status, body, _ = await request(client, load, "GET", f"{base}/events")
                if status != 200:
                    load.errors[f"GET /events {status}"] += 1
                    await asyncio.sleep(0.01)
                    continue
                state = fold_events(body["events"])
            if state.status == "finished":
                finished = True
                break
            headers = {"Authorization": auths[state.turn]}
            moves = current_legal_moves(state)
            if moves:
                path = f"{base}/move"
                kwargs: dict[str, Any] = {"json": {"piece": moves[0].piece}}
            else:
                path, kwargs = f"{base}/roll", {}
            status, body, elapsed = await request(
                client, load, "POST", path, headers=headers, **kwargs
            )
            if status == 200:
                load.commands_total += 1
                if load.measuring:
                    load.latencies.append(elapsed)
                    on_command()
                fold_events(body["events"], state)
            else:
                state = None
                if isinstance(body, dict) and body.get("error") == "match_finished":
                    finished = True
                    break
                reason = body.get("error") if isinstance(body, dict) else body
                if load.measuring:
                    load.errors[f"{path.rsplit('/', 1)[1]} {status} {reason}"] += 1
                if status == 0:
                    await asyncio.sleep(0.01)
        if finished:
            load.matches_finished += 1
            load.finished_ids.append(match_id)
        if once:
            return


def _client(base: str) -> Http1:
    """One kept-alive connection (a match task's own: a shared pool is a scan per request)."""
    return Http1(base)


def drive(base: str, config: Config, service_pid: int | None, db_url: str) -> dict[str, Any]:
    """The load, from `config.generators` processes, for warm-up + seconds; the figures of
    the measured window, with the CPU every part spent in it (each from its own process
    accounting) and PostgreSQL's transactions.

    Several processes, so that the generator is not the bottleneck: one Python process
    drives about as many commands as one service process serves. They start together at
    an agreed instant; the window is the same agreed stretch of wall time for all."""
    ctx = multiprocessing.get_context("spawn")
    shares = [config.matches // config.generators] * config.generators
    for i in range(config.matches % config.generators):
        shares[i] += 1
    shares = [k for k in shares if k > 0]
    ready, results = ctx.Queue(), ctx.Queue()
    starts = [ctx.Queue() for _ in shares]
    cap = -(-config.max_commands // len(shares))
    procs = [
        ctx.Process(
            target=_generator,
            args=(base, msgspec.to_builtins(config), k, cap, ready, start, results),
            daemon=True,
        )
        for k, start in zip(shares, starts, strict=True)
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=120)
        begin = time.time() + 0.2
        window_from = begin + config.warmup
        window_until = window_from + config.seconds
        for start in starts:
            start.put((begin, window_from, window_until))
        _say(config, f"load: {config.matches} matches from {len(procs)} generator process(es)")
        _sleep_until(window_from)
        before = _cpu_snapshot(service_pid, db_url)
        with Progress(max(1, int(config.seconds)), "window", _stderr(config)) as bar:
            while time.time() < window_until:
                time.sleep(min(1.0, max(0.0, window_until - time.time())))
                if bar.done < bar.total:
                    bar.advance()
        after = _cpu_snapshot(service_pid, db_url)
        parts = [results.get(timeout=config.seconds + 120) for _ in procs]
    except queue.Empty:
        raise BenchError("a load generator process did not answer in time") from None
    finally:
        reap(procs)
    failed = [p["failed"] for p in parts if p.get("failed")]
    if failed:
        raise BenchError(f"a match task failed: {failed[0]}")
    return _load_figures(parts, _cpu_usage(before, after, config.seconds), config.seconds)


@contextlib.contextmanager
def background_load(base: str, config: Config) -> Iterator[dict[str, Any]]:
    """This bench's load (`config.matches` match tasks from `config.generators` processes,
    as `drive` makes it) on the service at `base` for as long as the block runs: the load
    another bench measures beside. Yields a dict that holds, once the block is left, the
    commands served, the matches finished and the seconds the load ran."""
    ctx = multiprocessing.get_context("spawn")
    shares = [config.matches // config.generators] * config.generators
    for i in range(config.matches % config.generators):
        shares[i] += 1
    shares = [k for k in shares if k > 0]
    ready, results, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    starts = [ctx.Queue() for _ in shares]
    cap = -(-config.max_commands // len(shares))
    procs = [
        ctx.Process(
            target=_generator,
            args=(base, msgspec.to_builtins(config), k, cap, ready, start, results, stop),
            daemon=True,
        )
        for k, start in zip(shares, starts, strict=True)
    ]
    figures: dict[str, Any] = {}
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=120)
        begin = time.time() + 0.2
        for start in starts:
            # No warm-up, no end: the window runs until `stop`.
            start.put((begin, begin, begin + 24 * 3600.0))
        yield figures
        stop.set()
        parts = [results.get(timeout=120) for _ in procs]
    except queue.Empty:
        raise BenchError("a load generator process did not answer in time") from None
    finally:
        stop.set()
        reap(procs)
    failed = [p["failed"] for p in parts if p.get("failed")]
    if failed:
        raise BenchError(f"a match task of the load failed: {failed[0]}")
    figures.update(
        commands=sum(len(p["latencies"]) for p in parts),
        matches_finished=sum(p["matches_finished"] for p in parts),
        seconds=round(max(p["window_s"] for p in parts), 1),
    )


def _sleep_until(instant: float) -> None:
    time.sleep(max(0.0, instant - time.time()))


def _generator(
    base: str,
    config: dict[str, Any],
    matches: int,
    cap: int,
    ready: Any,
    start: Any,
    results: Any,
    stop: Any = None,
) -> None:
    """One load-generator process: `matches` match tasks over the agreed window (or until
    the multiprocessing event `stop` is set)."""
    ready.put(os.getpid())
    begin, window_from, window_until = start.get(timeout=300)
    part = asyncio.run(
        _generate(
            base,
            msgspec.convert(config, Config),
            matches,
            cap,
            begin,
            window_from,
            window_until,
            stop,
        )
    )
    results.put(part)


async def _generate(
    base: str,
    config: Config,
    matches: int,
    cap: int,
    begin: float,
    window_from: float,
    window_until: float,
    stop: Any = None,
) -> dict[str, Any]:
    load = Load()
    # One connection per match task, and a lean client (benchmarks/http1.py): httpx
    # made the load generator, not the service, the bottleneck.
    async with contextlib.AsyncExitStack() as clients:
        per_match = [await clients.enter_async_context(_client(base)) for _ in range(matches)]
        count = [0]

        def on_command() -> None:
            count[0] += 1
            if count[0] >= cap:
                load.stop = True

        def play(client: Any) -> Any:
            if config.over == "socket":
                ws_base = "ws" + base.removeprefix("http")  # https -> wss
                return play_over_socket(
                    client, ws_base, load, config.rules, config.match_commands, on_command
                )
            return _play(client, load, config.rules, config.match_commands, on_command)

        await asyncio.sleep(max(0.0, begin - time.time()))
        tasks = [asyncio.create_task(play(client)) for client in per_match]
        await asyncio.sleep(max(0.0, window_from - time.time()))
        load.measuring = True
        cpu = time.process_time()
        measured_from = time.time()
        while not load.stop and time.time() < window_until and not _failed(tasks):
            if stop is not None and stop.is_set():
                break
            await asyncio.sleep(min(0.5, max(0.0, window_until - time.time())))
        load.measuring = False
        cpu = time.process_time() - cpu
        window_s = time.time() - measured_from
        load.stop = True
        await asyncio.gather(*tasks, return_exceptions=True)
    failed = _failed(tasks)
    return {
        "latencies": load.latencies,
        "errors": dict(load.errors),
        "setup_errors": dict(load.setup_errors),
        "requests": load.requests,
        "matches_started": load.matches_started,
        "matches_finished": load.matches_finished,
        "finished_ids": load.finished_ids,
        "cpu_s": cpu,
        "window_s": window_s,
        "failed": repr(failed) if failed else None,
    }


def _failed(tasks: list[asyncio.Task[None]]) -> BaseException | None:
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            return task.exception()
    return None


def _cpu_snapshot(service_pid: int | None, db_url: str) -> dict[str, float]:
    """The database's committed and rolled-back transactions so far, and the CPU seconds so
    far of the machine, the service's process tree (when known) and PostgreSQL's."""
    return {
        "transactions": float(_transactions(db_url)),
        **service_cpu_seconds(service_pid, db_url),
    }


def _transactions(db_url: str) -> int:
    """Committed + rolled-back transactions of the database so far (pg_stat_database;
    this query's own is one of them, and is subtracted by taking a difference)."""
    import psycopg

    from services.shared.database import libpq_url

    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def _cpu_usage(before: dict[str, float], after: dict[str, float], window: float) -> dict[str, Any]:
    """Cores used on average during the window, per part (`machine_busy` of all cores)."""
    usage: dict[str, Any] = {
        f"{key}_cores": round((after[key] - before[key]) / window, 3)
        for key in before
        if key in after and key != "transactions"
    }
    usage["transactions"] = int(after["transactions"] - before["transactions"])
    usage["cores"] = os.cpu_count()
    return usage


def _stderr(config: Config) -> Any:
    return sys.stderr if config.progress else io.StringIO()


def _load_figures(
    parts: list[dict[str, Any]], cpu: dict[str, Any], window: float
) -> dict[str, Any]:
    lat = sorted(x for p in parts for x in p["latencies"])
    errors: Counter[str] = Counter()
    setup: Counter[str] = Counter()
    for p in parts:
        errors.update(p["errors"])
        setup.update(p["setup_errors"])
    commands = len(lat)
    cpu["generator_cores"] = round(sum(p["cpu_s"] for p in parts) / window, 3)

    def per_command(key: str) -> float | None:
        if key not in cpu or not commands:
            return None
        return round(float(cpu[key]) * window / commands * 1000, 3)

    return {
        "commands": commands,
        "commands_per_s": round(commands / window, 1),
        "requests_per_s": round(sum(p["requests"] for p in parts) / window, 1),
        "p50_ms": round(percentile(lat, 0.50) * 1000, 2),
        "p99_ms": round(percentile(lat, 0.99) * 1000, 2),
        "max_ms": round(lat[-1] * 1000, 2) if lat else None,
        "errors": sum(errors.values()),
        "error_kinds": dict(errors.most_common(10)),
        "setup_errors": dict(setup.most_common(5)),
        "window_s": round(window, 2),
        "generators": len(parts),
        "cpu": cpu,
        "cpu_ms_per_command": {
            "service": per_command("service_cores"),
            "postgresql": per_command("postgresql_cores"),
            "generator": per_command("generator_cores"),
        },
        "transactions_per_command": round(cpu["transactions"] / commands, 2) if commands else None,
        "matches_started": sum(p["matches_started"] for p in parts),
        "matches_finished": sum(p["matches_finished"] for p in parts),
        "finished_match_ids": [m for p in parts for m in p["finished_ids"]],
    }


# ----------------------------------------------------------------------------- rebuilds


async def _finished_matches(base: str, config: Config) -> list[str]:
    """Play `rebuild_matches` bga matches to the end (concurrently); their ids."""
    if config.rebuild_matches < 1 or config.rebuilds < 1:
        return []
    load = Load()
    _say(config, f"playing {config.rebuild_matches} bga matches to the end for the rebuilds")
    async with contextlib.AsyncExitStack() as clients:
        per_match = [
            await clients.enter_async_context(_client(base)) for _ in range(config.rebuild_matches)
        ]
        await asyncio.gather(
            *(
                _play(client, load, {"preset": "bga"}, 10_000, lambda: None, once=True)
                for client in per_match
            )
        )
    if not load.finished_ids:
        raise BenchError(
            f"no match finished for the rebuild figures (errors: {dict(load.errors)}, "
            f"set-up errors: {dict(load.setup_errors)})"
        )
    return load.finished_ids


async def _rebuild(db_url: str, match_ids: list[str], config: Config) -> dict[str, Any] | None:
    """Time `read_events` + `fold` of finished matches, straight from the event store
    (the service's path when its state cache misses)."""
    if not match_ids:
        return None
    from domain.decider import fold
    from domain.streams import match_stream
    from services.shared.database import create_engine
    from services.shared.eventstore import EventStore

    engine = create_engine(db_url, pool_size=2, max_overflow=0)
    try:
        store = EventStore(engine)
        streams = [match_stream(m) for m in match_ids]
        lengths = []
        for stream in streams:  # warm the connection and the statement cache (not timed)
            state = fold(await store.read_events(stream))
            if state.status != "finished":
                raise BenchError(
                    f"{stream} is not finished in the database the bench reads; with --url, set "
                    "DATABASE_URL to the running service's database"
                )
            lengths.append(state.version)
        times = []
        with Progress(config.rebuilds, "rebuilds", _stderr(config)) as bar:
            for i in range(config.rebuilds):
                stream = streams[i % len(streams)]
                start = time.perf_counter()
                fold(await store.read_events(stream))
                times.append(time.perf_counter() - start)
                bar.advance()
    finally:
        await engine.dispose()
    times.sort()
    return {
        "matches": len(streams),
        "events_per_match": round(sum(lengths) / len(lengths), 1),
        "rebuilds": len(times),
        "p50_ms": round(percentile(times, 0.50) * 1000, 3),
        "p99_ms": round(percentile(times, 0.99) * 1000, 3),
    }


# ------------------------------------------------------------------------------ pgbench


def _pgbench(db_url: str, config: Config) -> dict[str, Any]:
    seconds = max(1, round(config.pgbench_seconds or config.seconds))
    return pgbench_insert(db_url, config.matches, seconds, lambda line: _say(config, line))


# ------------------------------------------------------------------------------ results


def config_loadavg(config: Config) -> list[float] | None:
    return config.loadavg_before


def _met(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT MET")


def _result(
    config: Config,
    load: dict[str, Any],
    rebuild: dict[str, Any] | None,
    baseline: dict[str, Any] | None,
    floor: dict[str, Any] | None,
) -> dict[str, Any]:
    tps = baseline.get("tps") if baseline else None
    ratio = round(load["commands_per_s"] / tps, 3) if tps else None
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": config_loadavg(config),
        "service": config.url or f"started here, {config.workers} uvicorn worker(s)",
        "workers": config.workers if config.url is None else None,
        "matches": config.matches,
        "over": config.over,
        "seconds": config.seconds,
        "warmup": config.warmup,
        "rules": config.rules,
        "load": {k: v for k, v in load.items() if k != "finished_match_ids"},
        "pgbench": baseline,
        "ratio": ratio,
        "rebuild": rebuild,
        "floor": floor,
        "targets": {
            **_targets(ratio, load["transactions_per_command"]),
            **(
                {"floor_multiple": {"target": floor["target"], "met": floor["met"]}}
                if floor
                else {}
            ),
        },
    }


def _targets(ratio: float | None, transactions: float | None) -> dict[str, dict[str, Any]]:
    """The targets of these figures (None: not measured), each met or not."""
    return {
        "ratio": {
            "target": f">= {TARGET_RATIO}",
            "met": None if ratio is None else ratio >= TARGET_RATIO,
        },
        "transactions": {
            "target": f"<= {TARGET_TRANSACTIONS:g}",
            "met": None if transactions is None else transactions <= TARGET_TRANSACTIONS,
        },
    }


def print_comparison(r: dict[str, Any]) -> None:
    """The rounds of `--baseline-ref`, one line per run, then the medians beside the
    targets (this tree's) and how much less CPU a command costs than in the baseline."""
    print(
        f"ludo bench service — Python {r['python']}, {r['cpus']} CPUs, {r['matches']} "
        f"concurrent matches over {r['over']}, {r['seconds']:g} s measured after "
        f"{r['warmup']:g} s warm-up, {len(r['rounds'])} round(s) of both services (the "
        f"order swapped each round); baseline: {r['baseline_ref']}"
    )
    head = ("round", "code", "commands/s", "p99 ms", "service", "PostgreSQL", "generator")
    print(
        f"{head[0]:<6}{head[1]:<10}{head[2]:>11}{head[3]:>9}  CPU ms per command: "
        f"{head[4]:>8}{head[5]:>11}{head[6]:>10}   pgbench TPS"
    )

    def cpu(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for row in r["rounds"]:
        order = _order(row["round"])
        for label in order:
            load = row[label]
            per = load["cpu_ms_per_command"]
            tps = row["pgbench_tps"]
            print(
                f"{row['round']:<6}{label:<10}{load['commands_per_s']:>11,.1f}"
                f"{load['p99_ms']:>9.1f}  {'':>20}{cpu(per['service']):>8}"
                f"{cpu(per['postgresql']):>11}{cpu(per['generator']):>10}"
                + (f"   {tps:,.0f}" if tps and label == order[-1] else "")
            )
    t, now, before = r["targets"], r["median"]["now"], r["median"]["baseline"]
    less = r["less_cpu"]
    print("medians:")
    rows = [
        ("commands/s", "commands_per_s", "{:,.1f}", None),
        ("command latency p99 (ms)", "p99_ms", "{:.1f}", None),
        ("service CPU per command (ms)", "service_cpu_ms", "{:.3f}", None),
        ("PostgreSQL CPU per command (ms)", "postgresql_cpu_ms", "{:.3f}", None),
        ("load generator CPU per command (ms)", "generator_cpu_ms", "{:.3f}", None),
        ("PostgreSQL transactions per command", "transactions", "{:.2f}", "transactions"),
    ]
    print(f"{'figure':<38}{'baseline':>10}{'now':>10}  {'target':<10}")
    for name, key, fmt, target in rows:
        a, b = before[key], now[key]
        print(
            f"{name:<38}{'-' if a is None else fmt.format(a):>10}"
            f"{'-' if b is None else fmt.format(b):>10}  "
            + (f"{t[target]['target']:<10}{_met(t[target]['met']):>8}" if target else "")
        )
    if r["ratio"] is not None:
        print(
            f"{'ratio commands/s ÷ pgbench TPS':<38}{'':>10}{r['ratio']:>10.3f}  "
            f"{t['ratio']['target']:<10}{_met(t['ratio']['met']):>8}"
        )
    pair = r["less_cpu_paired"]
    print(
        f"CPU per command, baseline ÷ now: service {less['service'] or '-'}x, "
        f"PostgreSQL {less['postgresql'] or '-'}x (of the medians); service "
        f"{pair['service'] or '-'}x, PostgreSQL {pair['postgresql'] or '-'}x (the median of "
        "the rounds' own)"
    )
    print(f"load average before the run: {r['loadavg_before']}")


def print_table(r: dict[str, Any]) -> None:
    if "rounds" in r:
        print_comparison(r)
        return
    load, t = r["load"], r["targets"]
    answered = "result" if r["over"] == "socket" else "200"
    print(
        f"ludo bench service — Python {r['python']}, {r['cpus']} CPUs, service: {r['service']}, "
        f"{r['matches']} concurrent matches over {r['over']}, {r['seconds']:g} s measured after "
        f"{r['warmup']:g} s warm-up, rules {msgspec.json.encode(r['rules']).decode()}"
    )
    rows: list[tuple[str, str, str, str]] = [
        (f"commands/s (roll+move, {answered})", f"{load['commands_per_s']:,.1f}", "", ""),
        ("  all requests/s (incl. set-up)", f"{load['requests_per_s']:,.1f}", "", ""),
        ("command latency p50", f"{load['p50_ms']:.1f} ms", "", ""),
        ("command latency p99", f"{load['p99_ms']:.1f} ms", "", ""),
        (f"errors (roll/move not {answered})", f"{load['errors']:,}", "", ""),
        (
            "matches started / finished",
            f"{load['matches_started']} / {load['matches_finished']}",
            "",
            "",
        ),
    ]
    pg = r["pgbench"]
    if pg is None:
        rows.append(("pgbench INSERT TPS", "skipped", "", ""))
    elif "skipped" in pg:
        rows.append(("pgbench INSERT TPS", pg["skipped"], "", ""))
    else:
        rows.append((f"pgbench INSERT TPS (-c {pg['clients']} -j 2)", f"{pg['tps']:,.1f}", "", ""))
        rows.append(
            (
                "ratio commands/s ÷ pgbench TPS",
                f"{r['ratio']:.3f}",
                t["ratio"]["target"],
                _met(t["ratio"]["met"]),
            )
        )
    rb = r["rebuild"]
    if rb is not None:
        label = f"rebuild p50 (read_events+fold, {rb['events_per_match']:g} events)"
        rows.append((label, f"{rb['p50_ms']:.2f} ms", "", ""))
        rows.append(("rebuild p99", f"{rb['p99_ms']:.2f} ms", "", ""))
    per = load["cpu_ms_per_command"]
    for name, key in (
        ("service CPU per command", "service"),
        ("PostgreSQL CPU per command", "postgresql"),
        ("load generator CPU per command", "generator"),
    ):
        value = per[key]
        rows.append((name, "-" if value is None else f"{value:.3f} ms", "", ""))
    tx = load["transactions_per_command"]
    rows.append(
        (
            "PostgreSQL transactions per command",
            "-" if tx is None else f"{tx:.2f}",
            t["transactions"]["target"],
            _met(t["transactions"]["met"]),
        )
    )
    width = max(len(row[0]) for row in rows) + 2
    print(f"{'figure':<{width}}{'value':>14}  {'target':<10}{'':>8}")
    for name, value, target, met in rows:
        print(f"{name:<{width}}{value:>14}  {target:<10}{met:>8}")
    cpu = load.get("cpu") or {}
    if cpu:
        parts = [
            f"{name} {cpu[key]:.2f}"
            for name, key in (
                ("service", "service_cores"),
                ("PostgreSQL", "postgresql_cores"),
                ("load generator", "generator_cores"),
                ("whole machine busy", "machine_busy_cores"),
            )
            if key in cpu
        ]
        print(
            f"CPU during the window (cores of {cpu['cores']}; {load['generators']} generator "
            "process(es)): " + ", ".join(parts)
        )
        print(f"load average before the run: {r['loadavg_before']}")
    if load["error_kinds"]:
        print(f"error kinds: {load['error_kinds']}")
    if load["setup_errors"]:
        print(f"set-up errors: {load['setup_errors']}")
    if r.get("floor"):
        stack_floor.print_multiples(r["floor"], r["over"])


BENCH = Bench(
    name="service",
    help="match-service commands/s, p50/p99 and CPU per command over HTTP or the match socket"
    " vs pgbench INSERTs; rebuild time",
    options=_options,
    measure=measure,
    table=print_table,
)
