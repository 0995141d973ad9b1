"""`ludo up`: everything the site needs, with one command and no setup (DESIGN.md §8).

1. The database: `DATABASE_URL` when set; otherwise the embedded PostgreSQL, its data kept
   in `LUDO_DATA_DIR/pg` (the user's data directory) from one run to the next.
2. The schema: migrated to the newest revision.
3. The services, each as its own process: the match service (uvicorn, `--workers` of
   them) and the ranking service (one uvicorn process on `--ranking-port`, PORT + 1 by
   default; its consumer takes the advisory lock, see services/ranking/consumer.py).
4. The URL of the web page is printed; Ctrl-C (or SIGTERM) stops the services and then the
   embedded PostgreSQL cleanly, leaving the data in place for the next start.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from services.shared.serving import UVICORN_ARGS

__all__ = ["register", "run"]

_READY_SECONDS = 60.0


def register(subparsers: Any) -> None:
    up = subparsers.add_parser(
        "up",
        help="run the whole site locally (embedded PostgreSQL unless DATABASE_URL is set)",
        description="Starts the database (embedded unless DATABASE_URL is set), migrates it, "
        "and runs the services until Ctrl-C.",
    )
    up.add_argument("--host", default="127.0.0.1", help="address to listen on")
    up.add_argument("--port", type=int, default=8000, help="port of the match service")
    up.add_argument("--workers", type=int, default=1, help="match service processes")
    up.add_argument(
        "--ranking-port", type=int, default=None, help="port of the ranking service (PORT + 1)"
    )
    up.set_defaults(func=run)


def _say(message: str) -> None:
    print(message, flush=True)


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    # Ours only if our process still runs (one that could not bind exits).
                    time.sleep(0.2)
                    return process.poll() is None
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    return False


def _serve(
    module: str, host: str, port: int, workers: int, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """A service (`module:app_from_env`) under uvicorn, as its own process."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            f"{module}:app_from_env",
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--no-access-log",
            # --ws-max-size 64 KiB (the sockets refuse more than 4 KiB; uvicorn's default
            # would buffer 16 MiB before that check), the header timeout of
            # GuardedH11Protocol, the keep-alive timeout (services/shared/limits.py).
            *UVICORN_ARGS,
        ],
        env=env,
        # Its own session: Ctrl-C reaches only `ludo up`, which then stops the services
        # before the database, in that order, instead of everything at once.
        start_new_session=True,
    )


def _ranking_url(host: str, port: int) -> str:
    """Where the match service reaches the ranking service `ludo up` starts: the host it
    listens on, or loopback when it listens on every address."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _port_taken(host: str, port: int) -> bool:
    """Whether something already listens on `host:port`. Asked before starting: a service
    that cannot bind exits, but the health check could meanwhile be answered by whatever
    holds the port (another `ludo up`), and this one would claim to be up."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # SO_REUSEADDR: a port left in TIME_WAIT is free; a listening socket still fails.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _did_not_start(name: str, option: str, port: int) -> int:
    print(
        f"ludo up: the {name} did not start (see its output above); is port {port} free? "
        f"Try `ludo up {option} {port + 2}`.",
        file=sys.stderr,
    )
    return 1


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(args: argparse.Namespace) -> int:
    from services.shared.database import EmbeddedPostgres, mask_url, migrate, normalize_url
    from services.shared.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"ludo up: {error}", file=sys.stderr)
        return 2

    ranking_port = args.ranking_port or args.port + 1
    for name, option, port in (
        ("match service", "--port", args.port),
        ("ranking service", "--ranking-port", ranking_port),
    ):
        if _port_taken(args.host, port):
            print(
                f"ludo up: port {port} ({name}) is already in use on {args.host}: another "
                f"`ludo up`? Stop it, or try `ludo up {option} {port + 2}`.",
                file=sys.stderr,
            )
            return 1

    # Ctrl-C reaches the whole process group; turn SIGTERM into the same clean path.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    embedded: EmbeddedPostgres | None = None
    processes: list[subprocess.Popen[bytes]] = []
    up = False
    try:
        if settings.database_url:
            url = normalize_url(settings.database_url)
            _say(f"database: {mask_url(url)} (DATABASE_URL)")
        else:
            _say(
                f"database: starting the embedded PostgreSQL (data in "
                f"{settings.embedded_pgdata}) ..."
            )
            embedded = EmbeddedPostgres.start(settings.embedded_pgdata)
            url = embedded.url
            state = "started" if embedded.started else "already running, reused"
            _say(f"database: embedded PostgreSQL {state} in {embedded.seconds:.1f} s")
        _say("database: migrating ...")
        _say(f"database: schema at revision {migrate(url, app_role=settings.db_app_role)}")

        env = {**os.environ, "DATABASE_URL": url}
        base = f"http://{args.host}:{args.port}"
        # The match service forwards the public /api/ratings/* reads to the ranking service.
        match_env = {**env, "LUDO_RANKING_URL": _ranking_url(args.host, ranking_port)}
        _say(f"match service: starting {args.workers} process(es) on {base} ...")
        processes.append(
            _serve("services.match.app", args.host, args.port, args.workers, match_env)
        )
        if not _wait_ready(f"{base}/healthz", processes[-1]):
            return _did_not_start("match service", "--port", args.port)
        ranking_base = f"http://{args.host}:{ranking_port}"
        _say(f"ranking service: starting on {ranking_base} ...")
        processes.append(_serve("services.ranking.app", args.host, ranking_port, 1, env))
        if not _wait_ready(f"{ranking_base}/healthz", processes[-1]):
            return _did_not_start("ranking service", "--ranking-port", ranking_port)
        _say(f"ranking service: {ranking_base}/dashboard (operator token: LUDO_OPERATOR_TOKEN)")
        _say(f"\nLudo is up: {base}/   (API: {base}/schema)   Ctrl-C stops it.\n")
        up = True
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        dead = next(p for p in processes if p.poll() is not None)
        print(f"ludo up: a service exited with status {dead.returncode}; stopping", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _say("\nstopping ...")
        # Stopping a running site is its normal end (0); stopped while starting, it never
        # ran: the status says interrupted, as for any other command.
        return 0 if up else 130
    finally:
        _stop(processes)
        if embedded is not None:
            embedded.close()
            _say("database: embedded PostgreSQL stopped; data kept for the next `ludo up`")
