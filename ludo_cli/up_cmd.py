"""`ludo up`: everything the site needs, with one command and no setup
(docs/design.md#one-machine-ludo-up).

1. The database: `DATABASE_URL` when set; otherwise the embedded PostgreSQL, its data kept
   in `LUDO_DATA_DIR/pg` (the user's data directory) from one run to the next. With `--ha`,
   PostgreSQL under Patroni instead (ludo_cli/ha.py: etcd, three nodes with synchronous
   replication, HAProxy's read-write and read-only ports), its data in `LUDO_DATA_DIR/ha`;
   the services get the read-only port as `LUDO_DATABASE_READ_URL`.
2. The schema: migrated to the newest revision.
3. The services, each as its own process: the match service (uvicorn, `--workers` of
   them) and the ranking service (one uvicorn process on `--ranking-port`, PORT + 1 by
   default; its consumer takes the advisory lock, see services/ranking/ratings/consumer.py).
   With `--instances N` / `--ranking-instances M`, N match and M ranking processes on
   loopback ports of their own behind HAProxy, which listens on PORT and the ranking
   port (ludo_cli/cluster.py); an instance that dies is started again, as is, under
   `--ha`, etcd, a node's Patroni or the database's HAProxy.
4. The URL of the web page is printed; Ctrl-C (or SIGTERM) stops the services and then the
   embedded PostgreSQL cleanly, leaving the data in place for the next start: one line
   per part stopped, no traceback from any process. Every process is started in a
   session of its own, so the terminal's Ctrl-C reaches `ludo up` alone, which interrupts
   each service once (uvicorn stops cleanly on the first SIGINT), then the database; a
   second Ctrl-C while it stops is ignored rather than cutting the stop short.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from ludo_cli.arguments import positive_int
from ludo_cli.cluster import Cluster, ClusterError, Instance, port_taken
from ludo_cli.ha import NODES, HaCluster

__all__ = ["register", "run"]

# An instance that keeps dying is not restarted for ever: the site stops instead.
_RESTARTS = 5
_RESTART_WINDOW = 60.0  # seconds


def register(up: argparse.ArgumentParser) -> None:
    """`ludo up`'s parser (ludo_cli/main.py names the command)."""
    up.description = (
        "Starts the database (embedded unless DATABASE_URL is set), migrates it, "
        "and runs the services until Ctrl-C."
    )
    up.add_argument("--host", default="127.0.0.1", help="address to listen on")
    up.add_argument("--port", type=int, default=8000, help="port of the match service")
    up.add_argument(
        "--workers", type=positive_int, default=1, help="uvicorn workers per match instance"
    )
    up.add_argument(
        "--instances",
        type=positive_int,
        default=1,
        help="match service instances; more than one puts HAProxy in front (ludo_cli/cluster.py)",
    )
    up.add_argument(
        "--ranking-instances",
        type=positive_int,
        default=1,
        help="ranking service instances (one consumes, the others stand by)",
    )
    up.add_argument(
        "--ranking-port", type=int, default=None, help="port of the ranking service (PORT + 1)"
    )
    up.add_argument(
        "--ha",
        action="store_true",
        help="PostgreSQL under Patroni: etcd, three nodes with synchronous replication, "
        "HAProxy in front (data in LUDO_DATA_DIR/ha; ludo_cli/ha.py)",
    )
    up.set_defaults(func=run)


def _say(message: str) -> None:
    print(message, flush=True)


def _stop_signals_ignored() -> None:
    """From here on the site is stopping in order: another Ctrl-C or SIGTERM would cut
    that short (a KeyboardInterrupt in the middle of it, processes left behind)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _stop_on_signal(_signum: int, _frame: object) -> None:
    """Ctrl-C or SIGTERM: stop, once."""
    _stop_signals_ignored()
    raise KeyboardInterrupt


class _Deaths:
    """When each part died lately: one that died `_RESTARTS` times within
    `_RESTART_WINDOW` is not started again."""

    def __init__(self) -> None:
        self._times: dict[str, list[float]] = {}

    def may_restart(self, name: str) -> bool:
        """Counts a death of `name`; whether it may be started again."""
        now = time.monotonic()
        recent = [t for t in self._times.get(name, []) if now - t < _RESTART_WINDOW]
        self._times[name] = [*recent, now]
        return len(recent) < _RESTARTS


def _watch(cluster: Cluster, ha: HaCluster | None) -> int:
    """Runs until Ctrl-C. Without a balancer, a service that exits ends the site (exit 1);
    behind one, it is started again (as compose.yaml's restart policy does). Under `--ha`,
    etcd, a node's Patroni or the database's HAProxy that exits is started again too (a
    node's PostgreSQL then rejoins, said once its Patroni reports it running). A part
    that died `_RESTARTS` times within `_RESTART_WINDOW` stops the site instead."""
    deaths = _Deaths()
    rejoining: set[str] = set()
    asked = 0.0
    while True:
        time.sleep(0.5)
        for instance in cluster.instances():
            if instance.alive():
                continue
            code = instance.process.returncode if instance.process else None
            allowed = deaths.may_restart(instance.name)
            if not cluster.balanced or instance is cluster.balancer or not allowed:
                print(
                    f"ludo up: {instance.name} exited with status {code}; stopping",
                    file=sys.stderr,
                )
                return 1
            _say(
                f"{instance.name}: exited with status {code}; the balancer sends its "
                "traffic to the others; starting it again ..."
            )
            _restart(instance)
        if ha is None:
            continue
        for name, part in ha.parts().items():
            if part.alive():
                continue
            what = f"{name}'s Patroni" if name in NODES else name
            if not deaths.may_restart(f"ha:{name}"):
                print(
                    f"ludo up: {what} exited with status {part.returncode} {_RESTARTS + 1} "
                    f"times within {_RESTART_WINDOW:.0f} s; stopping (logs in {ha.home / 'logs'})",
                    file=sys.stderr,
                )
                return 1
            _say(f"ha: {what} exited with status {part.returncode}; starting it again ...")
            ha.revive(name)
            if name in NODES:
                rejoining.add(name)
        # Patroni's own REST API, at most every 2 s: its loop is 2 s anyway.
        if rejoining and time.monotonic() - asked >= 2.0:
            asked = time.monotonic()
            for node in sorted(rejoining):
                state = ha.node_state(node)
                if state is not None:
                    _say(f"ha: {node}: back ({state})")
                    rejoining.discard(node)


def _restart(instance: Instance) -> None:
    instance.start()
    if instance.ready():
        _say(f"{instance.name}: ready again (pid {instance.pid})")


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
        if port_taken(args.host, port):
            print(
                f"ludo up: port {port} ({name}) is already in use on {args.host}: another "
                f"`ludo up`? Stop it, or try `ludo up {option} {port + 2}`.",
                file=sys.stderr,
            )
            return 1

    # Ctrl-C and SIGTERM take the same clean path, once (a SIGINT ignored by whoever
    # started us, as a shell does for `ludo up &`, stays ignored).
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _stop_on_signal)
    signal.signal(signal.SIGTERM, _stop_on_signal)

    embedded: EmbeddedPostgres | None = None
    ha: HaCluster | None = None
    cluster: Cluster | None = None
    env: dict[str, str] = {}
    up = False
    try:
        if args.ha:
            if settings.database_url:
                print("ludo up: --ha runs its own PostgreSQL; unset DATABASE_URL", file=sys.stderr)
                return 2
            _say(f"database: PostgreSQL under Patroni (data in {settings.data_dir / 'ha'}) ...")
            ha = HaCluster(settings.data_dir / "ha", say=_say)
            ha.start()
            url = normalize_url(ha.url)
            env["LUDO_DATABASE_READ_URL"] = normalize_url(ha.read_url)
            # The operator's live view shows Patroni's members and the last failover.
            env["LUDO_PATRONI_URL"] = ",".join(ha.rest(node) for node in NODES)
            _say(f"database: primary {ha.primary()}, read-write {mask_url(url)}")
        elif settings.database_url:
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

        cluster = Cluster(
            url,
            host=args.host,
            port=args.port,
            ranking_port=ranking_port,
            match_instances=args.instances,
            ranking_instances=args.ranking_instances,
            workers=args.workers,
            env=env,
            say=_say,
        )
        cluster.start()
        base = f"http://{args.host}:{args.port}"
        ranking_base = f"http://{args.host}:{ranking_port}"
        _say(f"ranking service: {ranking_base}/dashboard (operator token: LUDO_OPERATOR_TOKEN)")
        _say(f"\nLudo is up: {base}/   (API: {base}/schema)   Ctrl-C stops it.\n")
        up = True
        return _watch(cluster, ha)
    except ClusterError as error:
        print(f"ludo up: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _say("\nstopping ...")
        # Stopping a running site is its normal end (0); stopped while starting, it never
        # ran: the status says interrupted, as for any other command.
        return 0 if up else 130
    finally:
        _stop_signals_ignored()
        if cluster is not None:
            cluster.stop()
        if ha is not None:
            ha.stop()
            _say(
                "database: Patroni, PostgreSQL and etcd stopped; data kept for the next"
                " `ludo up --ha`"
            )
        if embedded is not None:
            embedded.close()
            _say("database: embedded PostgreSQL stopped; data kept for the next `ludo up`")
