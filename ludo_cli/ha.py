"""PostgreSQL under Patroni on this machine: one etcd, three nodes, HAProxy in front.

For `ludo up --ha` (its data under `LUDO_DATA_DIR/ha/`, kept between runs), the failover
test (tests/test_ha.py) and `ludo bench faults --ha` (a scratch folder). What it starts,
each on loopback ports of its own (kept in `ports.json`, so a restart finds its data where
it left it):

- etcd (Debian's `etcd-server`), the store Patroni keeps its leader key in;
- three Patroni nodes (`pg1`..`pg3`), each with its PostgreSQL (the embedded wheel's
  PostgreSQL 18 binaries, pg_rewind and pg_basebackup among them) in its own folder, run
  as the OS user the wheel runs its server as when we are root (PostgreSQL refuses root);
  `synchronous_mode`: a commit is acknowledged only once a standby has it, so a failover
  to that standby loses no acknowledged command. With one node left, Patroni turns
  synchronous replication off and the primary goes on alone (not `strict`: the site stays
  writable, and a commit then lives on one disk until a standby is back);
- HAProxy, in TCP mode, asking each node's Patroni REST API: the read-write port sends
  to the node answering 200 on `/primary`, the read-only port to those answering
  `/replica`, or to the primary when no replica is up. Why HAProxy rather than libpq's
  multi-host `target_session_attrs=read-write`: Patroni, which holds the leader key, says
  who the primary is (a node cut off from etcd stops answering `/primary` once its key
  expired, while its PostgreSQL may still call itself read-write to libpq); the services
  keep one address; and a node marked down has its sessions cut
  (`on-marked-down shutdown-sessions`), so no pooled connection lingers on a demoted node.

Through a failover (docs/operations.md, High availability, measures each setting's share):
Patroni answers for the leader key, not for PostgreSQL, so a node whose postmaster died
still answers 200 on `/primary` until its loop notices (up to `loop_wait`, 2 s, and the
loop after: 2–3.5 s measured). HAProxy keeps sending it new connections meanwhile, which
its dead port refuses: `retries 0` closes each at once (the default, three retries a
second apart on the same node, held every one of them exactly 3 s), and the services try
again every 50 ms (services/shared/reconnect.py). A node held down is checked every
`FAST_CHECK_MS` (`downinter`): the new primary's Patroni answers 200 as soon as it holds
the key, a few tenths of a second before its PostgreSQL takes writes, so HAProxy sends
to it by then (the services' `target_session_attrs=read-write` refuses it until it does).
No `option redispatch`: there is never a second primary to send to. No second check of
the PostgreSQL port: HAProxy has one check per server (`track` and `check` exclude each
other), and a refused connection costs nothing with `retries 0`.

`primary_start_timeout: 0`: a primary whose PostgreSQL crashed is failed over at once to
the synchronous standby instead of being restarted in place; it comes back as a standby,
rewound with pg_rewind (`use_pg_rewind`; PostgreSQL 18's initdb turns data checksums on,
and `wal_log_hints` too). A node lost whole (Patroni and PostgreSQL) is replaced once its
leader key expires: `ttl` 20 s, the least Patroni accepts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from ludo_cli.cluster import ClusterError, free_port, haproxy_path

__all__ = ["COMPOSE_HA_HAPROXY_CFG", "HaCluster", "compose_ha_haproxy_config", "ha_haproxy_config"]

NODES = ("pg1", "pg2", "pg3")
SCOPE = "ludo"
DATABASE = "ludo"
SUPERUSER = "postgres"
REPLICATOR = "replicator"
START_SECONDS = 120.0
# Patroni's timings: a loop every 2 s; the leader key lives `ttl` seconds unrenewed.
TTL, LOOP_WAIT, RETRY_TIMEOUT = 20, 2, 5
CHECK_MS = 500  # HAProxy asks each node's REST API this often
# ... and this often a node it holds down (a standby, in the read-write backend: promoted,
# it is taken in within this) or one whose check just failed (out within ~2 of these).
FAST_CHECK_MS = 200


def _bin_dir() -> Path:
    from services.shared.database import _server_module

    return Path(_server_module().__file__).parent / "pginstall" / "bin"


def _os_user() -> str | None:
    from services.shared.database import _embedded_user

    return _embedded_user()


def _get(url: str, timeout: float = 2.0) -> tuple[int, Any]:
    """GET `url`: status and JSON body (status 0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        body = error.read()
        try:
            return error.code, json.loads(body or b"null")
        except ValueError:
            return error.code, body.decode(errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def ha_haproxy_config(
    *,
    rw_bind: str,
    ro_bind: str,
    nodes: list[tuple[str, str, int]],
    check_ms: int = CHECK_MS,
    fast_ms: int = FAST_CHECK_MS,
    resolvers: str | None = None,
) -> str:
    """HAProxy's TCP frontends for the HA PostgreSQL: `nodes` as (name, host:pg_port,
    rest_port). Written here for `ludo up --ha` and deploy/haproxy/haproxy-ha.cfg alike
    (`resolvers`: a DNS server, as in compose, where the nodes are found by name)."""
    dns = " resolvers dns init-addr none" if resolvers else ""

    def servers() -> str:
        return "".join(
            f"    server {name} {address} check port {rest}{dns}\n" for name, address, rest in nodes
        )

    resolver = (
        f"resolvers dns\n    nameserver dns {resolvers}\n    hold valid 5s\n\n" if resolvers else ""
    )
    checks = f"inter {check_ms}ms fastinter {fast_ms}ms downinter {fast_ms}ms fall 2 rise 1"

    return f"""\
# Written by ludo_cli/ha.py (ha_haproxy_config); its docstring says why each line.
global
    maxconn 4096

{resolver}defaults
    mode tcp
    timeout connect 2s
    # A connection the node refuses (its PostgreSQL died) is closed at once, not tried
    # again on it for 3 s: the services try again themselves, on the next primary.
    retries 0
    # Pooled connections idle for long: the services recycle theirs every 30 minutes.
    timeout client 1h
    timeout server 1h
    default-server {checks} on-marked-down shutdown-sessions

frontend postgres_rw
    bind {rw_bind}
    default_backend primary

frontend postgres_ro
    bind {ro_bind}
    # The primary serves reads too when no replica is up.
    use_backend replicas if {{ nbsrv(replicas) gt 0 }}
    default_backend primary

backend primary
    option httpchk GET /primary
    http-check expect status 200
{servers()}
backend replicas
    balance roundrobin
    option httpchk GET /replica
    http-check expect status 200
{servers()}"""


# deploy/compose.ha.yaml's `postgres`: HAProxy in front of the three Patroni containers.
COMPOSE_HA_HAPROXY_CFG = "deploy/haproxy/haproxy-ha.cfg"


def compose_ha_haproxy_config() -> str:
    """What deploy/haproxy/haproxy-ha.cfg holds (tests/test_compose.py checks it is this)."""
    return ha_haproxy_config(
        rw_bind=":5432",
        ro_bind=":5433",
        nodes=[(f"patroni{i}", f"patroni{i}:5432", 8008) for i in (1, 2, 3)],
        resolvers="127.0.0.11:53",
    )


class _Process:
    """A child process with its output in a log file, started in a session of its own (a
    Ctrl-C reaches `ludo up` only, which stops the stack in order), in the folder of the
    stack (`cwd`): not ours, which PostgreSQL's OS user may not be allowed into (a
    checkout under a `mktemp -d` folder, mode 0700), and Patroni's bootstrap, spawned by
    multiprocessing, changes into its parent's folder first and fails there."""

    def __init__(self, argv: list[str], log: Path, cwd: Path, user: str | None = None) -> None:
        self.argv, self.log, self.cwd, self.user = argv, log, cwd, user
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        out: IO[bytes] = self.log.open("ab")
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.cwd,
                user=self.user,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        finally:
            out.close()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.kill()
            self.process.wait()

    def stop(self, seconds: float = 30.0) -> None:
        if not self.alive():
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.kill()


class HaCluster:
    """etcd, three Patroni nodes and HAProxy under `home` (see the module docstring).

    `url` reaches the primary (read-write), `read_url` a streaming standby (or the
    primary); both as the superuser `postgres`, on loopback, with trust authentication as
    the embedded PostgreSQL of `ludo up` has. Use as a context manager, or `start()` and
    `stop()`."""

    def __init__(
        self,
        home: Path,
        *,
        say: Callable[[str], None] = lambda line: None,
        host: str = "127.0.0.1",
    ) -> None:
        self.home = Path(home).resolve()
        self.say = say
        self.host = host
        self.user = _os_user()
        self.home.mkdir(parents=True, exist_ok=True)
        self.ports = self._ports()
        self.url = self._url(self.ports["rw"])
        self.read_url = self._url(self.ports["ro"])
        self.nodes: dict[str, _Process] = {}
        self.etcd: _Process | None = None
        self.balancer: _Process | None = None

    # ------------------------------------------------------------------ layout

    def _ports(self) -> dict[str, int]:
        """The ports of every part: chosen once, then kept in `ports.json`."""
        saved = self.home / "ports.json"
        if saved.exists():
            ports: dict[str, int] = json.loads(saved.read_text())
            return ports
        names = ["etcd", "etcd_peer", "rw", "ro"] + [
            f"{node}_{kind}" for node in NODES for kind in ("pg", "rest")
        ]
        ports = {}
        for name in names:
            port = free_port()
            while port in ports.values():
                port = free_port()
            ports[name] = port
        saved.write_text(json.dumps(ports, indent=1))
        return ports

    def _url(self, port: int) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@{self.host}:{port}/{DATABASE}"

    def rest(self, node: str) -> str:
        return f"http://{self.host}:{self.ports[f'{node}_rest']}"

    def data_dir(self, node: str) -> Path:
        return self.home / node / "data"

    def _own(self, path: Path) -> None:
        """Hand `path` to the OS user PostgreSQL runs as (when we are root)."""
        if self.user is not None:
            shutil.chown(path, self.user, self.user)

    def _patroni_config(self, node: str) -> dict[str, Any]:
        folder = self.home / node
        pg, rest = self.ports[f"{node}_pg"], self.ports[f"{node}_rest"]
        trust = [
            "local all all trust",
            f"host all all {self.host}/32 trust",
            f"host replication {REPLICATOR} {self.host}/32 trust",
        ]
        return {
            "scope": SCOPE,
            "name": node,
            "log": {"level": "INFO"},
            "restapi": {
                "listen": f"{self.host}:{rest}",
                "connect_address": f"{self.host}:{rest}",
            },
            "etcd3": {"hosts": [f"{self.host}:{self.ports['etcd']}"]},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "primary_start_timeout": 0,
                    "synchronous_mode": True,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_log_hints": "on",
                            "max_connections": 200,
                            "shared_buffers": "64MB",
                            "max_wal_senders": 10,
                            "max_replication_slots": 10,
                            "wal_keep_size": "256MB",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, "data-checksums"],
            },
            "postgresql": {
                "listen": f"{self.host}:{pg}",
                "connect_address": f"{self.host}:{pg}",
                "data_dir": str(self.data_dir(node)),
                "bin_dir": str(_bin_dir()),
                "pgpass": str(folder / "pgpass"),
                "pg_hba": trust,
                "authentication": {
                    "superuser": {"username": SUPERUSER},
                    "replication": {"username": REPLICATOR},
                    "rewind": {"username": SUPERUSER},
                },
                "parameters": {"unix_socket_directories": str(folder)},
            },
        }

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        """etcd, the three nodes, HAProxy; returns once a primary and two streaming
        standbys answer and the `ludo` database exists. `ClusterError` says what did not."""
        from services.shared.database import _server_module

        etcd = shutil.which("etcd")
        haproxy = haproxy_path()
        if etcd is None or haproxy is None or importlib.util.find_spec("patroni") is None:
            raise ClusterError(
                "--ha needs etcd and HAProxy: `apt-get install etcd-server haproxy` "
                "(and Patroni: `pip install 'patroni[etcd3,psycopg3]'`)"
            )
        if self.user is not None:
            # The wheel makes its binaries reachable by its OS user; Patroni (this
            # Python) must be too.
            _server_module().utils.ensure_user_exists(self.user)
            _server_module().utils.ensure_prefix_permissions(Path(sys.executable).resolve())
            _server_module().utils.ensure_prefix_permissions(_bin_dir())
            _server_module().utils.ensure_prefix_permissions(self.home)
            self.home.chmod(0o755)
        logs = self.home / "logs"
        logs.mkdir(exist_ok=True)
        peer = f"http://{self.host}:{self.ports['etcd_peer']}"
        client = f"http://{self.host}:{self.ports['etcd']}"
        self.say(f"ha: etcd on {client} ...")
        self.etcd = _Process(
            [
                etcd,
                "--name=ludo",
                f"--data-dir={self.home / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=ludo={peer}",
                "--log-level=warn",
            ],
            logs / "etcd.log",
            self.home,
        )
        self.etcd.start()
        self._wait("etcd", lambda: _get(f"{client}/health")[0] == 200, 30)
        for node in NODES:
            self.start_node(node, wait=False)
        self.say("ha: waiting for a primary and two streaming standbys ...")
        self.wait_streaming(len(NODES), START_SECONDS)
        self.say(f"ha: primary {self.primary()}; standbys streaming")
        config = self.home / "haproxy.cfg"
        config.write_text(
            ha_haproxy_config(
                rw_bind=f"{self.host}:{self.ports['rw']}",
                ro_bind=f"{self.host}:{self.ports['ro']}",
                nodes=[
                    (n, f"{self.host}:{self.ports[f'{n}_pg']}", self.ports[f"{n}_rest"])
                    for n in NODES
                ],
            )
        )
        self.balancer = _Process(
            [haproxy, "-db", "-f", str(config)], logs / "haproxy.log", self.home
        )
        self.balancer.start()
        # HAProxy counts a server up until its checks fail: the read-write port is ready
        # once consecutive connections (round robin over all still in) all reach the primary.
        self._wait(
            "HAProxy's read-write port",
            lambda: all(self._writable() for _ in range(2 * len(NODES))),
            30,
        )
        self._ensure_database()
        self.say(
            f"ha: HAProxy: read-write on {self.host}:{self.ports['rw']}, read-only on "
            f"{self.host}:{self.ports['ro']}"
        )

    def _writable(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(
                f"host={self.host} port={self.ports['rw']} user={SUPERUSER} dbname=postgres",
                connect_timeout=2,
            ) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                return row is not None and not row[0]
        except psycopg.Error:
            return False

    def _ensure_database(self) -> None:
        import psycopg

        dsn = f"host={self.host} port={self.ports['rw']} user={SUPERUSER} dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
            ).fetchone()
            if found is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def _wait(self, what: str, ready: Callable[[], bool], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not ready():
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} not ready after {seconds:.0f} s (logs in {self.home})")
            time.sleep(0.2)

    def start_node(self, node: str, *, wait: bool = True) -> None:
        """Starts `node`'s Patroni (which starts its PostgreSQL: a new node is cloned from
        the primary with pg_basebackup, an old primary rewound with pg_rewind)."""
        folder = self.home / node
        folder.mkdir(exist_ok=True)
        folder.chmod(0o700)
        self._own(folder)
        config = folder / "patroni.json"
        config.write_text(json.dumps(self._patroni_config(node), indent=1))
        self._own(config)
        log = self.home / "logs" / f"{node}.log"
        log.touch()
        self._own(log)
        self.say(
            f"ha: {node}: Patroni on {self.rest(node)}, PostgreSQL on port "
            f"{self.ports[f'{node}_pg']} ..."
        )
        process = _Process(
            [sys.executable, "-m", "patroni", str(config)], log, self.home, self.user
        )
        process.start()
        self.nodes[node] = process
        if wait:
            self._wait(f"{node}'s Patroni", lambda: _get(f"{self.rest(node)}/health")[0] != 0, 60)

    def parts(self) -> dict[str, _Process]:
        """The stack's processes by name, as started: etcd, each node's Patroni, HAProxy."""
        started = {"etcd": self.etcd, **self.nodes, "haproxy": self.balancer}
        return {name: process for name, process in started.items() if process is not None}

    def revive(self, name: str) -> None:
        """Starts the part `name` of `parts()` again after it exited. A node's Patroni
        takes its PostgreSQL over if it still runs (a leader within its `ttl` keeps the
        lock), else starts it, rewound as a standby if another node was promoted meanwhile;
        etcd and HAProxy start as before, on their kept data and configuration."""
        if name in NODES:
            self.start_node(name, wait=False)
        else:
            self.parts()[name].start()

    def node_state(self, node: str) -> str | None:
        """What `node`'s own Patroni says of it once its PostgreSQL runs ("replica,
        streaming", "primary, running"), else None (not answering, or starting)."""
        status, body = _get(f"{self.rest(node)}/patroni")
        if status != 200 or not isinstance(body, dict) or body.get("state") != "running":
            return None
        return f"{body.get('role', '?')}, {body.get('replication_state') or 'running'}"

    def members(self) -> list[dict[str, Any]]:
        """The cluster as Patroni's REST API tells it (from any node that answers)."""
        for node in NODES:
            status, body = _get(f"{self.rest(node)}/cluster")
            if status == 200 and isinstance(body, dict):
                return list(body.get("members", []))
        return []

    def primary(self) -> str | None:
        """The node holding the leader key, if its PostgreSQL runs."""
        for member in self.members():
            if member.get("role") == "leader" and member.get("state") == "running":
                return str(member["name"])
        return None

    def streaming(self) -> list[str]:
        return [m["name"] for m in self.members() if m.get("state") == "streaming"]

    def ready(self, count: int) -> bool:
        """A primary runs, `count - 1` standbys stream from it, and one of them is its
        synchronous standby (until then a crashed primary is restarted, not failed over)."""
        members = self.members()
        leader = any(m.get("role") == "leader" and m.get("state") == "running" for m in members)
        streaming = [m for m in members if m.get("state") == "streaming"]
        sync = any(m.get("role") == "sync_standby" for m in streaming) or count == 1
        return leader and sync and len(streaming) >= count - 1

    def wait_streaming(self, count: int, seconds: float = START_SECONDS) -> None:
        self._wait(
            f"a primary with {count - 1} streaming standbys", lambda: self.ready(count), seconds
        )

    def postmaster_pid(self, node: str) -> int | None:
        try:
            return int((self.data_dir(node) / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_postmaster(self, node: str) -> int:
        """kill -9 of `node`'s postmaster (Patroni lives on); returns its pid."""
        pid = self.postmaster_pid(node)
        if pid is None:
            raise ClusterError(f"{node}: no postmaster.pid")
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop_node(self, node: str) -> None:
        """The node lost whole: kill -9 of its Patroni, then of its postmaster."""
        pid = self.postmaster_pid(node)
        self.nodes[node].kill()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def switchover(self) -> str:
        """A planned switchover through Patroni's REST API to the synchronous standby
        (in `synchronous_mode` Patroni promotes no other); returns the node promoted, once
        it is the primary."""
        leader = self.primary()
        sync = [m["name"] for m in self.members() if m.get("role") == "sync_standby"]
        if leader is None or not sync:
            raise ClusterError("a switchover needs a primary and a synchronous standby")
        body = {"leader": leader, "candidate": sync[0]}
        request = urllib.request.Request(
            f"{self.rest(leader)}/switchover",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60):
                pass
        except urllib.error.HTTPError as error:
            raise ClusterError(
                f"switchover refused: {error.code} {error.read().decode(errors='replace')}"
            ) from error
        self._wait("the switchover", lambda: self.primary() not in (None, leader), 60)
        promoted = self.primary()
        assert promoted is not None
        return promoted

    def stop(self) -> None:
        """HAProxy, the standbys, the primary (each Patroni stops its PostgreSQL), etcd;
        a PostgreSQL left without its Patroni (a node killed) is stopped too."""
        if self.balancer is not None:
            self.balancer.stop()
        leader = self.primary()
        for node in sorted(self.nodes, key=lambda n: n == leader):
            self.nodes[node].stop()
        for node in NODES:
            pid = self.postmaster_pid(node)
            if pid is not None and _running(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGQUIT)  # immediate shutdown: it is an orphan
        if self.etcd is not None:
            self.etcd.stop()

    def __enter__(self) -> HaCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    @contextlib.contextmanager
    def scratch(cls, prefix: str, say: Callable[[str], None]) -> Iterator[HaCluster]:
        """A cluster in a new folder of the system's temporary directory, removed after
        (not under pytest's tmp_path, whose modes PostgreSQL's OS user may not pass)."""
        home = Path(tempfile.mkdtemp(prefix=prefix))
        home.chmod(0o755)
        try:
            with cls(home, say=say) as cluster:
                yield cluster
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
