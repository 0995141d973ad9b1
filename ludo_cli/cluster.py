"""The site's processes: match and ranking instances, and HAProxy in front of several.

One place starts and watches them, for `ludo up` (one instance of each, or `--instances N`
behind HAProxy), the balancer test (tests/test_balancer.py) and `ludo bench
faults`. With one instance of each and no balancer, the match service listens on the port
the user asked for. With a balancer, HAProxy (Debian's `haproxy` package, 2.6 or newer)
listens there and on the ranking port, and each instance on a free loopback port of its own:

- every request is balanced on its own (round robin), so one client's commands alternate
  between the match instances; a WebSocket stays on the instance it was upgraded on, and a
  client whose instance died reconnects through the balancer to another;
- a request that could not reach an instance (connection refused: it died) is sent to
  another one (`retry-on conn-failure`, `option redispatch`). Only then: a request that
  reached an instance that died before answering may have been applied, so the balancer
  answers 502 and the client retries with the same `Idempotency-Key` (docs/api.md);
- `GET /healthz` every second takes a dead or database-less instance out within ~2 s;
- `X-Forwarded-For` carries the client's address, and the instances (started with
  `--proxy-headers --forwarded-allow-ips 127.0.0.1`) key their per-client budgets on it
  (services/shared/limits.py); `X-Served-By` on each response names the instance.

Every instance's database sessions carry its name as `application_name` (`match-1`,
`ranking-2`), so `pg_stat_activity` says which one holds what.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from sqlalchemy.engine import make_url

from services.shared.serving import UVICORN_ARGS

__all__ = [
    "COMPOSE_HAPROXY_CFG",
    "Cluster",
    "ClusterError",
    "Instance",
    "compose_haproxy_config",
    "free_port",
    "haproxy_config",
    "haproxy_path",
    "port_taken",
]

READY_SECONDS = 60.0
HEALTH_INTERVAL_MS = 1000  # HAProxy's health-check period (a dead instance is out in ~2)
MATCH_MODULE = "services.match.app"
RANKING_MODULE = "services.ranking.app"


class ClusterError(RuntimeError):
    """A process did not start; the message says which and what to try."""


def haproxy_path() -> str | None:
    """HAProxy's executable, from PATH or where Debian's package puts it."""
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy",) if os.access(p, os.X_OK)), None
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def port_taken(host: str, port: int) -> bool:
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


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _loopback(host: str) -> str:
    """Where to reach a service that listens on `host` (loopback for every address)."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    return "::1" if host == "::" else host


def haproxy_config(
    *,
    match_bind: str,
    ranking_bind: str,
    match_servers: Sequence[str],
    ranking_servers: Sequence[str],
    resolvers: str | None = None,
) -> str:
    """HAProxy's configuration: two frontends (`match_bind`, `ranking_bind`, as
    `host:port`) and their backends. A server is `name address:port` (one line each), or,
    with `resolvers` (a DNS server, as in compose.yaml), a `server-template` line's
    `prefix count host:port` whose addresses DNS gives."""

    def servers(lines: Sequence[str]) -> str:
        if resolvers:
            tail = "check resolvers dns init-addr none"
            return "".join(f"    server-template {line} {tail}\n" for line in lines)
        return "".join(f"    server {line} check\n" for line in lines)

    dns = (
        f"resolvers dns\n    nameserver dns {resolvers}\n    hold valid 5s\n\n" if resolvers else ""
    )
    return f"""\
# Written by ludo_cli/cluster.py (haproxy_config); the module docstring says why each line.
global
    maxconn 4096

{dns}defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 30s
    # A WebSocket is idle between events: the tunnel timeout is its own (the page pings
    # every 15 s, services/shared/site.js).
    timeout tunnel 1h
    timeout client-fin 5s
    timeout http-request 10s
    option forwardfor
    option redispatch 1
    retries 2
    # Only what never reached an instance is retried: a command that reached one that
    # died may have been applied; the client retries it with its Idempotency-Key.
    retry-on conn-failure
    default-server inter {HEALTH_INTERVAL_MS} fall 2 rise 1

frontend match
    bind {match_bind}
    default_backend match

frontend ranking
    bind {ranking_bind}
    default_backend ranking

backend match
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    http-response set-header X-Served-By %[srv_name]
{servers(match_servers)}
backend ranking
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    http-response set-header X-Served-By %[srv_name]
{servers(ranking_servers)}"""


# compose.yaml's balancer: the instances are found by their service names through Docker's
# DNS, up to 8 match and 4 ranking replicas (`docker compose up --scale match=3`).
COMPOSE_HAPROXY_CFG = "deploy/haproxy/haproxy.cfg"


def compose_haproxy_config() -> str:
    """What deploy/haproxy/haproxy.cfg holds (tests/test_compose.py checks it is this)."""
    return haproxy_config(
        match_bind=":8000",
        ranking_bind=":8100",
        match_servers=["match 8 match:8000"],
        ranking_servers=["ranking 4 ranking:8100"],
        resolvers="127.0.0.11:53",
    )


def _wait_ready(url: str, process: subprocess.Popen[bytes], seconds: float = READY_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
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


class Instance:
    """One service process (uvicorn, or HAProxy), restartable on the same port."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        *,
        port: int,
        health: str,
        log: Path | None,
    ) -> None:
        self.name = name
        self.port = port
        self.argv = argv
        self.env = env
        self.health = health
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self._interrupted = False  # SIGINT sent to this run of the process

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        out: IO[bytes] | None = self.log.open("ab") if self.log is not None else None
        self._interrupted = False
        try:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT if out is not None else None,
                # Its own session: Ctrl-C reaches only `ludo up`, which then stops the
                # services before the database, in that order, instead of all at once.
                start_new_session=True,
            )
        finally:
            if out is not None:
                out.close()

    def ready(self, seconds: float = READY_SECONDS) -> bool:
        return self.process is not None and _wait_ready(self.health, self.process, seconds)

    def signal(self, sig: int) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(sig)

    def interrupt(self) -> None:
        """SIGINT, once: uvicorn and HAProxy stop cleanly on the first, while a second
        one makes uvicorn cut its shutdown short, and one that arrives as its process
        exits lands in the interpreter's last steps as a KeyboardInterrupt traceback."""
        process = self.process
        if process is None or process.poll() is not None or self._interrupted:
            return
        self._interrupted = True
        # A frozen (SIGSTOP) process must run again to hear SIGINT.
        process.send_signal(signal.SIGCONT)
        process.send_signal(signal.SIGINT)

    def stop(self, seconds: float = 20.0) -> None:
        """Interrupted (once) and waited for; killed if it has not ended in `seconds`."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        self.interrupt()
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Cluster:
    """The match and ranking instances on `database_url`, behind HAProxy when `balanced`.

    `port` / `ranking_port`: where clients reach the match and the ranking service (the
    balancer's frontends, or the single instances). `workers`: uvicorn worker processes
    per match instance. `logs`: a directory for each process's output (None: inherited).
    """

    def __init__(
        self,
        database_url: str,
        *,
        host: str = "127.0.0.1",
        port: int,
        ranking_port: int,
        match_instances: int = 1,
        ranking_instances: int = 1,
        balanced: bool | None = None,
        workers: int = 1,
        env: dict[str, str] | None = None,
        logs: Path | None = None,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.database_url = database_url
        self.host = host
        self.port = port
        self.ranking_port = ranking_port
        self.balanced = (
            balanced if balanced is not None else max(match_instances, ranking_instances) > 1
        )
        if not self.balanced and max(match_instances, ranking_instances) > 1:
            raise ClusterError("more than one instance of a service needs the balancer")
        self.workers = workers
        self.base_env = {**os.environ, **(env or {})}
        self.logs = logs
        self.say = say
        reach = _bracket(_loopback(host))
        self.url = f"http://{reach}:{port}"
        self.ranking_url = f"http://{reach}:{ranking_port}"
        self.match = [self._service("match", i, match_instances) for i in range(match_instances)]
        self.ranking = [
            self._service("ranking", i, ranking_instances) for i in range(ranking_instances)
        ]
        self.balancer: Instance | None = self._balancer() if self.balanced else None

    # ------------------------------------------------------------------ building

    def _service(self, kind: str, index: int, count: int) -> Instance:
        name = f"{kind}-{index + 1}"
        if self.balanced:
            listen, port = "127.0.0.1", free_port()
        else:
            listen, port = self.host, self.port if kind == "match" else self.ranking_port
        url = make_url(self.database_url).update_query_dict({"application_name": name})
        env = {
            **self.base_env,
            "DATABASE_URL": url.render_as_string(hide_password=False),
        }
        if kind == "match":
            # The match service forwards the public /api/ratings/* reads to the ranking
            # service: through the balancer when there is one.
            env["LUDO_RANKING_URL"] = self.ranking_url
        else:
            # The operator's live view asks the match service what the site does now.
            env["LUDO_MATCH_URL"] = self.url
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            f"{MATCH_MODULE if kind == 'match' else RANKING_MODULE}:app_from_env",
            "--host",
            listen,
            "--port",
            str(port),
            "--workers",
            str(self.workers if kind == "match" else 1),
            "--no-access-log",
            # uvicorn's own lines ("Started server process", "Shutting down", …) would
            # repeat for every instance what `ludo up` says itself in one line; its
            # warnings and errors (a failed start-up) still show.
            "--log-level",
            "warning",
            *UVICORN_ARGS,
        ]
        if self.balanced:
            # The budgets key on the client's address, which only the balancer knows.
            argv += ["--proxy-headers", "--forwarded-allow-ips", "127.0.0.1"]
        health = f"http://{_bracket(_loopback(listen))}:{port}/healthz"
        return Instance(name, argv, env, port=port, health=health, log=self._log(name))

    def _log(self, name: str) -> Path | None:
        return None if self.logs is None else self.logs / f"{name}.log"

    def _balancer(self) -> Instance:
        haproxy = haproxy_path()
        if haproxy is None:
            raise ClusterError(
                "several instances need HAProxy in front: install Debian's package "
                "(`apt-get install haproxy`) or run one instance of each"
            )
        host = _bracket(self.host or "0.0.0.0")
        config = haproxy_config(
            match_bind=f"{host}:{self.port}",
            ranking_bind=f"{host}:{self.ranking_port}",
            match_servers=[f"{m.name} 127.0.0.1:{m.port}" for m in self.match],
            ranking_servers=[f"{r.name} 127.0.0.1:{r.port}" for r in self.ranking],
        )
        self._scratch: Path | None = (
            None if self.logs is not None else Path(tempfile.mkdtemp(prefix="ludo-haproxy-"))
        )
        folder = self.logs if self.logs is not None else self._scratch
        assert folder is not None
        folder.mkdir(parents=True, exist_ok=True)
        self.config_path = folder / "haproxy.cfg"
        self.config_path.write_text(config)
        check = subprocess.run(
            [haproxy, "-c", "-f", str(self.config_path)],
            check=False,
            capture_output=True,
            text=True,
        )
        if check.returncode != 0:
            raise ClusterError(
                f"HAProxy refused its configuration: {check.stderr.strip() or check.stdout.strip()}"
            )
        # -db: in the foreground, not a daemon, so that this process watches and stops it.
        argv = [haproxy, "-db", "-f", str(self.config_path)]
        health = f"{self.url}/healthz"
        return Instance(
            "balancer",
            argv,
            self.base_env,
            port=self.port,
            health=health,
            log=self._log("balancer"),
        )

    # ------------------------------------------------------------------ running

    def instances(self) -> list[Instance]:
        return [*self.match, *self.ranking, *([self.balancer] if self.balancer else [])]

    def start(self) -> None:
        """Starts every instance, then the balancer; returns when each answers /healthz
        (through the balancer too). Raises `ClusterError` naming the one that did not."""
        for group, option, port in (
            (self.match, "--port", self.port),
            (self.ranking, "--ranking-port", self.ranking_port),
        ):
            for instance in group:
                where = instance.health.removesuffix("/healthz")
                self.say(f"{instance.name}: starting on {where} ...")
                instance.start()
            for instance in group:
                if not instance.ready():
                    hint = (
                        "" if self.balanced else f"; is port {port} free? Try `{option} {port + 2}`"
                    )
                    raise ClusterError(
                        f"{instance.name} did not start (see its output above){hint}"
                    )
                self.say(f"{instance.name}: ready (pid {instance.pid})")
        if self.balancer is not None:
            self.say(f"balancer: HAProxy on {self.url} and {self.ranking_url} ...")
            self.balancer.start()
            if not self.balancer.ready():
                raise ClusterError(
                    f"HAProxy did not start (ports {self.port} and {self.ranking_port} free?)"
                )
            self.say(f"balancer: ready (pid {self.balancer.pid}, {self.config_path})")

    def stop(self) -> None:
        """The balancer first (no new requests), then the instances, each cleanly."""
        if self.balancer is not None:
            self.balancer.stop()
        for instance in [*self.match, *self.ranking]:
            instance.interrupt()  # all at once: they stop side by side
        for instance in [*self.match, *self.ranking]:
            instance.stop()
        if self.balancer is not None and self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        started = [i.name for i in self.instances() if i.process is not None]
        if started:
            self.say(f"services: stopped ({', '.join(started)})")

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
