"""`ludo bench service`: commands/s and latency of the match service over HTTP.

K matches are played at once against the real service (the app under uvicorn in a
subprocess on a free 127.0.0.1 port, `LUDO_CPU_DELAY=0`, on a scratch database of the
same PostgreSQL; or `--url` for a service that is already running on a loopback address).
Each match is two guests at a 2-seat party; one asyncio task per match makes the seat to
act roll, or play its first legal move (`GET /moves`), until the match ends (then a new
match starts) or the time is up. Only roll and move POSTs that returned 200 count as
commands; the warm-up is not measured.

In the same run, and on the same PostgreSQL, at the same concurrency:

- `pgbench` inserts one small event-shaped row per transaction into a scratch table, the
  raw write rate the service is compared with (ratio = commands/s ÷ pgbench TPS);
- a few finished matches are rebuilt from PostgreSQL many times (`read_events` + `fold`,
  the event store used directly, no state cache).

Nothing asserts a time: the figures are printed beside the targets (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import ipaddress
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ludo_cli.arguments import positive_float, positive_int, rules_json
from ludo_cli.bench.common import BenchError, loadavg, percentile, pgbench_insert, scratch_db
from ludo_cli.progress import Progress
from services.shared.serving import UVICORN_ARGS

__all__ = ["BenchError", "Config", "bench", "register", "run"]

# Targets at 32 concurrent matches (issue 3, point 10).
TARGET_RATIO = 0.5
TARGET_P99_MS = 50.0
TARGET_REBUILD_P50_MS = 5.0

_STDERR_TAIL = 40


class Config(msgspec.Struct, kw_only=True):
    """What `bench` measures. `url=None`: start the service on `database_url` (None: a
    scratch database on the server of `DATABASE_URL` / the embedded PostgreSQL)."""

    matches: int = 32
    seconds: float = 20.0
    warmup: float = 3.0
    workers: int = 1
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


# ----------------------------------------------------------------------------- the CLI


def register(targets: Any) -> None:
    parser = targets.add_parser(
        "service",
        help="match-service commands/s and p50/p99 over HTTP vs pgbench INSERTs; rebuild time",
    )
    parser.add_argument("--matches", type=positive_int, default=32, help="concurrent matches (K)")
    parser.add_argument("--seconds", type=positive_float, default=20.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds first")
    parser.add_argument("--workers", type=positive_int, default=1, help="uvicorn worker processes")
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
    parser.add_argument("--json", action="store_true", help="print figures as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rules = msgspec.json.decode(args.rules)  # valid: checked by `rules_json`
    config = Config(
        matches=args.matches,
        seconds=args.seconds,
        warmup=args.warmup,
        workers=args.workers,
        url=args.url,
        service_pid=args.service_pid,
        rules=rules,
        match_commands=args.match_commands,
        max_commands=args.max_commands,
        pgbench=not args.no_pgbench,
        rebuild_matches=args.rebuild_matches,
        rebuilds=args.rebuilds,
        log_level=args.log_level,
    )
    try:
        result = bench(config)
    except BenchError as exc:
        print(f"ludo bench service: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(msgspec.json.encode(result).decode())
    else:
        print_table(result)
    return 0


# --------------------------------------------------------------------------- the bench


def bench(config: Config) -> dict[str, Any]:
    """Run the whole benchmark and return its figures (see `print_table`)."""
    if config.matches < 1 or config.seconds <= 0 or config.workers < 1:
        raise BenchError("--matches, --seconds and --workers must be positive")
    from services.shared.database import database_url, mask_url
    from services.shared.settings import Settings, SettingsError

    if config.url is not None:
        _check_loopback(config.url)
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
            base, service_pid = stack.enter_context(_service(db_url, config))
        else:
            base, service_pid = config.url.rstrip("/"), config.service_pid
        load = asyncio.run(_drive(base, config, service_pid))
        finished = asyncio.run(_finished_matches(base, config))
        rebuild = asyncio.run(_rebuild(db_url, finished, config))
        baseline = _pgbench(db_url, config) if config.pgbench else None
    return _result(config, load, rebuild, baseline)


def _say(config: Config, line: str) -> None:
    if config.progress:
        print(line, file=sys.stderr, flush=True)


def _check_loopback(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BenchError(f"--url must be an http:// URL, not {url!r}")
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(parts.hostname, None)}
    except OSError as exc:
        raise BenchError(f"cannot resolve {parts.hostname}: {exc}") from exc
    if not all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addresses):
        raise BenchError(
            f"--url must point at a loopback address (127.0.0.1, ::1, localhost), not "
            f"{parts.hostname}: this benchmark loads the service heavily"
        )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = _STDERR_TAIL) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no output)"
    return "\n".join(text[-lines:]) or "(no output)"


@contextlib.contextmanager
def _service(
    db_url: str,
    config: Config,
    *,
    root: Path | None = None,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, int]]:
    """The match service under uvicorn in a subprocess on a loopback port (default: a free
    one), run from the source tree `root` (default: this one; `ludo bench live` runs a
    baseline from another checkout), with `env`: more settings."""
    import httpx

    port = _free_port() if port is None else port
    root = Path(__file__).resolve().parents[2] if root is None else root
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "LUDO_CPU_DELAY": "0",
        "LUDO_LOG_LEVEL": config.log_level,
        "LUDO_LOG_FORMAT": "json",
        # The bench measures capacity from one address: the per-client budgets are off.
        "LUDO_RATE_LIMIT": "0",
        "LUDO_GUEST_LIMIT": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
        **(env or {}),
    }
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "services.match.app:app_from_env",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(config.workers),
        "--no-access-log",
        "--log-level",
        "warning",
        *UVICORN_ARGS,
    ]
    with tempfile.TemporaryDirectory(prefix="ludo-bench-") as tmp:
        out, err = Path(tmp, "stdout.log"), Path(tmp, "stderr.log")
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=stdout, stderr=stderr)
        base = f"http://127.0.0.1:{port}"
        try:
            _say(config, f"service: {' '.join(cmd[1:])} (pid {proc.pid})")
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise BenchError(
                        f"the service exited with status {proc.returncode} before it answered;"
                        f" its stderr ends with:\n{_tail(err)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/api/parties", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"the service did not answer on {base} within 60 s; its stderr ends "
                        f"with:\n{_tail(err)}"
                    )
                time.sleep(0.1)
            yield base, proc.pid
            if proc.poll() is not None:
                raise BenchError(
                    f"the service died during the run (status {proc.returncode}); its stderr "
                    f"ends with:\n{_tail(err)}"
                )
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# ------------------------------------------------------------------------ the HTTP load


class _Load:
    """What the match tasks record."""

    def __init__(self) -> None:
        self.measuring = False
        self.stop = False
        self.latencies: list[float] = []  # seconds, 200 roll/move POSTs in the window
        self.errors: Counter[str] = Counter()  # roll/move POSTs that failed, by reason
        self.setup_errors: Counter[str] = Counter()
        self.commands_total = 0  # 200 roll/move POSTs, warm-up included
        self.requests = 0  # every request in the window (GETs and set-up too)
        self.matches_started = 0
        self.matches_finished = 0
        self.finished_ids: list[str] = []
        self.window = 0.0
        self.cpu: dict[str, Any] = {}


async def _request(
    client: Any, load: _Load, method: str, url: str, **kwargs: Any
) -> tuple[int, Any, float]:
    """(status, JSON body or None, seconds); status 0 for a transport error."""
    import httpx

    start = time.perf_counter()
    try:
        response = await client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        return 0, type(exc).__name__, time.perf_counter() - start
    elapsed = time.perf_counter() - start
    if load.measuring:
        load.requests += 1
    try:
        body = response.json()
    except ValueError:
        body = None
    return response.status_code, body, elapsed


async def _new_match(client: Any, load: _Load, rules: dict[str, Any]) -> tuple[str, list[str]]:
    """Two guests at a 2-seat party, started: (match_id, [auth of seat 0, seat 1])."""
    auths = []
    for name in ("bench-a", "bench-b"):
        status, body, _ = await _request(client, load, "POST", "/api/players", json={"name": name})
        if status != 201:
            raise _SetupFailed(f"POST /api/players: {status} {body}")
        auths.append(f"Bearer {body['token']}")
    status, body, _ = await _request(
        client,
        load,
        "POST",
        "/api/parties",
        json={"seats": 2, "rules": rules, "client_seed": "bench-a"},
        headers={"Authorization": auths[0]},
    )
    if status != 201:
        raise _SetupFailed(f"POST /api/parties: {status} {body}")
    party = body["id"]
    status, body, _ = await _request(
        client,
        load,
        "POST",
        f"/api/parties/{party}/join",
        json={"client_seed": "bench-b"},
        headers={"Authorization": auths[1]},
    )
    if status != 200:
        raise _SetupFailed(f"POST /api/parties/…/join: {status} {body}")
    status, body, _ = await _request(
        client, load, "POST", f"/api/parties/{party}/start", headers={"Authorization": auths[0]}
    )
    if status != 201:
        raise _SetupFailed(f"POST /api/parties/…/start: {status} {body}")
    return body["match_id"], auths


class _SetupFailed(Exception):
    pass


async def _play(
    client: Any,
    load: _Load,
    rules: dict[str, Any],
    budget: int,
    on_command: Callable[[], None],
    *,
    once: bool = False,
) -> None:
    """One match after another until `load.stop` (or one match, to its end, when `once`)."""
    while not load.stop:
        try:
            match_id, auths = await _new_match(client, load, rules)
        except _SetupFailed as exc:
            load.setup_errors[str(exc)[:120]] += 1
            await asyncio.sleep(0.1)
            if once and sum(load.setup_errors.values()) > 10:
                return
            continue
        load.matches_started += 1
        base = f"/api/matches/{match_id}"
        finished = False
        # Like a real client, follow the match from the events each command returns and
        # ask for the legal moves only when a piece must move; any doubt (an error) and
        # the next step asks the server again.
        known: tuple[int, str] | None = None  # (seat to act, phase)
        for _ in range(budget):
            if load.stop and not once:
                break
            if known is None or known[1] == "move":
                status, moves, _ = await _request(client, load, "GET", f"{base}/moves")
                if status != 200:
                    load.errors[f"GET /moves {status}"] += 1
                    await asyncio.sleep(0.01)
                    continue
                known = (moves["seat"], moves["phase"])
            seat, phase = known
            headers = {"Authorization": auths[seat]}
            if phase == "move" and moves["moves"]:
                path = f"{base}/move"
                kwargs: dict[str, Any] = {"json": {"piece": moves["moves"][0]["piece"]}}
            else:
                path, kwargs = f"{base}/roll", {}
            status, body, elapsed = await _request(
                client, load, "POST", path, headers=headers, **kwargs
            )
            if status == 200:
                load.commands_total += 1
                if load.measuring:
                    load.latencies.append(elapsed)
                    on_command()
                known = _follow(known, body["events"])
                if known is None:
                    finished = True
                    break
            else:
                known = None
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


def _follow(known: tuple[int, str], events: list[dict[str, Any]]) -> tuple[int, str] | None:
    """(seat to act, phase) after a command's events; None once the match is over."""
    seat, phase = known
    for event in events:
        kind = event["type"]
        if kind == "MatchFinished":
            return None
        if kind == "DieRolled":
            phase = "move"
        elif kind in ("PieceMoved", "RollPassed"):
            phase = "roll"
        elif kind == "TurnEnded":
            seat, phase = event["data"]["next_seat"], "roll"
    return seat, phase


def _client(base: str, connections: int) -> Any:
    import httpx

    return httpx.AsyncClient(
        base_url=base,
        timeout=httpx.Timeout(30.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        trust_env=False,
    )


async def _drive(base: str, config: Config, service_pid: int | None = None) -> dict[str, Any]:
    """K match tasks for warm-up + seconds; figures of the measured window."""
    load = _Load()
    # One client, one connection per match: httpx's pool scans every connection on each
    # request, so one shared pool of K connections made the load generator, not the
    # service, the bottleneck (a profile showed two thirds of its time in that scan).
    async with contextlib.AsyncExitStack() as clients:
        per_match = [
            await clients.enter_async_context(_client(base, 1)) for _ in range(config.matches)
        ]
        bar_total = max(1, int(config.seconds))
        with Progress(bar_total, f"{config.matches} matches", _stderr(config)) as bar:
            count = [0]

            def on_command() -> None:
                count[0] += 1
                if count[0] >= config.max_commands:
                    load.stop = True

            tasks = [
                asyncio.create_task(
                    _play(client, load, config.rules, config.match_commands, on_command)
                )
                for client in per_match
            ]
            await asyncio.sleep(config.warmup)
            _check_tasks(tasks)
            load.measuring = True
            cpu_before = _cpu_snapshot(service_pid)
            started = time.perf_counter()
            ended = started + config.seconds
            while not load.stop and time.perf_counter() < ended:
                await asyncio.sleep(min(1.0, max(0.0, ended - time.perf_counter())))
                _check_tasks(tasks)
                if bar.done < bar_total:
                    bar.advance()
            load.measuring = False
            load.window = time.perf_counter() - started
            load.cpu = _cpu_usage(cpu_before, _cpu_snapshot(service_pid), load.window)
            load.stop = True
            await asyncio.gather(*tasks)
    return _load_figures(load)


def _cpu_snapshot(service_pid: int | None) -> dict[str, float]:
    """CPU seconds so far: this process (the load generator), the service's process tree
    (when started here), and the whole machine (busy, of all cores)."""
    snap = {"client": time.process_time()}
    try:
        import psutil
    except ImportError:  # optional: only the client's share is reported then
        return snap
    times = psutil.cpu_times()
    snap["machine_busy"] = sum(times) - times.idle - getattr(times, "iowait", 0.0)
    if service_pid is not None:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(service_pid)
            total = 0.0
            for proc in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    t = proc.cpu_times()
                    total += t.user + t.system
            snap["service"] = total
    return snap


def _cpu_usage(before: dict[str, float], after: dict[str, float], window: float) -> dict[str, Any]:
    """Cores used on average during the window, per part (`machine_busy` of all cores)."""
    usage: dict[str, Any] = {
        f"{key}_cores": round((after[key] - before[key]) / window, 2)
        for key in before
        if key in after
    }
    usage["cores"] = os.cpu_count()
    return usage


def _stderr(config: Config) -> Any:
    return sys.stderr if config.progress else io.StringIO()


def _check_tasks(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        if task.done() and task.exception() is not None:
            raise BenchError(f"a match task failed: {task.exception()!r}")


def _load_figures(load: _Load) -> dict[str, Any]:
    lat = sorted(load.latencies)
    window = max(load.window, 1e-9)
    return {
        "commands": len(lat),
        "commands_per_s": round(len(lat) / window, 1),
        "requests_per_s": round(load.requests / window, 1),
        "p50_ms": round(percentile(lat, 0.50) * 1000, 2),
        "p99_ms": round(percentile(lat, 0.99) * 1000, 2),
        "max_ms": round(lat[-1] * 1000, 2) if lat else None,
        "errors": sum(load.errors.values()),
        "error_kinds": dict(load.errors.most_common(10)),
        "setup_errors": dict(load.setup_errors.most_common(5)),
        "window_s": round(load.window, 2),
        "cpu": load.cpu,
        "matches_started": load.matches_started,
        "matches_finished": load.matches_finished,
        "finished_match_ids": load.finished_ids,
    }


# ----------------------------------------------------------------------------- rebuilds


async def _finished_matches(base: str, config: Config) -> list[str]:
    """Play `rebuild_matches` bga matches to the end (concurrently); their ids."""
    if config.rebuild_matches < 1 or config.rebuilds < 1:
        return []
    load = _Load()
    _say(config, f"playing {config.rebuild_matches} bga matches to the end for the rebuilds")
    async with _client(base, config.rebuild_matches) as client:
        await asyncio.gather(
            *(
                _play(client, load, {"preset": "bga"}, 10_000, lambda: None, once=True)
                for _ in range(config.rebuild_matches)
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
    from services.shared.database import create_engine
    from services.shared.eventstore import EventStore

    engine = create_engine(db_url, pool_size=2, max_overflow=0)
    try:
        store = EventStore(engine)
        streams = [f"match-{m}" for m in match_ids]
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
        "seconds": config.seconds,
        "warmup": config.warmup,
        "rules": config.rules,
        "load": {k: v for k, v in load.items() if k != "finished_match_ids"},
        "pgbench": baseline,
        "ratio": ratio,
        "rebuild": rebuild,
        "targets": {
            "ratio": {
                "target": f">= {TARGET_RATIO}",
                "met": None if ratio is None else ratio >= TARGET_RATIO,
            },
            "p99_ms": {"target": f"< {TARGET_P99_MS:g}", "met": load["p99_ms"] < TARGET_P99_MS},
            "rebuild_p50_ms": {
                "target": f"< {TARGET_REBUILD_P50_MS:g}",
                "met": None if rebuild is None else rebuild["p50_ms"] < TARGET_REBUILD_P50_MS,
            },
        },
    }


def print_table(r: dict[str, Any]) -> None:
    load, t = r["load"], r["targets"]
    print(
        f"ludo bench service — Python {r['python']}, {r['cpus']} CPUs, service: {r['service']}, "
        f"{r['matches']} concurrent matches, {r['seconds']:g} s measured after "
        f"{r['warmup']:g} s warm-up, rules {msgspec.json.encode(r['rules']).decode()}"
    )
    rows: list[tuple[str, str, str, str]] = [
        ("commands/s (roll+move, 200)", f"{load['commands_per_s']:,.1f}", "", ""),
        ("  all requests/s (incl. GET /moves, set-up)", f"{load['requests_per_s']:,.1f}", "", ""),
        ("command latency p50", f"{load['p50_ms']:.1f} ms", "", ""),
        (
            "command latency p99",
            f"{load['p99_ms']:.1f} ms",
            t["p99_ms"]["target"] + " ms",
            _met(t["p99_ms"]["met"]),
        ),
        ("errors (roll/move not 200)", f"{load['errors']:,}", "", ""),
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
        rows.append(
            (
                label,
                f"{rb['p50_ms']:.2f} ms",
                t["rebuild_p50_ms"]["target"] + " ms",
                _met(t["rebuild_p50_ms"]["met"]),
            )
        )
        rows.append(("rebuild p99", f"{rb['p99_ms']:.2f} ms", "", ""))
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
                ("load generator", "client_cores"),
                ("whole machine busy", "machine_busy_cores"),
            )
            if key in cpu
        ]
        print(f"CPU during the window (cores of {cpu['cores']}): " + ", ".join(parts))
        print(f"load average before the run: {r['loadavg_before']}")
    if load["error_kinds"]:
        print(f"error kinds: {load['error_kinds']}")
    if load["setup_errors"]:
        print(f"set-up errors: {load['setup_errors']}")
