"""`ludo up`: everything the site needs, with one command and no setup (DESIGN.md §8).

1. The database: `DATABASE_URL` when set; otherwise the embedded PostgreSQL, its data kept
   in `LUDO_DATA_DIR/pg` (the user's data directory) from one run to the next.
2. The schema: migrated to the newest revision.
3. The services, each as its own process: the match service (uvicorn, `--workers` of
   them). The ranking service joins here when it lands.
4. The URL of the web page is printed; Ctrl-C (or SIGTERM) stops the services and then the
   embedded PostgreSQL cleanly, leaving the data in place for the next start.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

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
                    return True
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    return False


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

    # Ctrl-C reaches the whole process group; turn SIGTERM into the same clean path.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    embedded: EmbeddedPostgres | None = None
    processes: list[subprocess.Popen[bytes]] = []
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
        match = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "services.match.app:app_from_env",
                "--host",
                args.host,
                "--port",
                str(args.port),
                "--workers",
                str(args.workers),
                "--no-access-log",
            ],
            env=env,
            # Its own session: Ctrl-C reaches only `ludo up`, which then stops the services
            # before the database, in that order, instead of everything at once.
            start_new_session=True,
        )
        processes.append(match)
        base = f"http://{args.host}:{args.port}"
        _say(f"match service: starting {args.workers} process(es) on {base} ...")
        if not _wait_ready(f"{base}/healthz", match):
            print(
                "ludo up: the match service did not start (see its output above); is port "
                f"{args.port} free? Try `ludo up --port {args.port + 1}`.",
                file=sys.stderr,
            )
            return 1
        _say(f"\nLudo is up: {base}/   (API: {base}/schema)   Ctrl-C stops it.\n")
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        dead = next(p for p in processes if p.poll() is not None)
        print(f"ludo up: a service exited with status {dead.returncode}; stopping", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _say("\nstopping ...")
        return 0
    finally:
        _stop(processes)
        if embedded is not None:
            embedded.close()
            _say("database: embedded PostgreSQL stopped; data kept for the next `ludo up`")
