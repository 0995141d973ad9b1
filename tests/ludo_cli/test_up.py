"""`ludo up` as a user runs it: one command, a URL, Ctrl-C, and the data still there."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ludo_cli.cluster import free_port, haproxy_path
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from tests.services.ranking.finished_matches import write_match
from tests.waiting import wait_until_sync

# `ludo` as a terminal runs it: SIGINT at its default (KeyboardInterrupt), even when the
# test runner was started with it ignored (a shell's background job), which every child
# would inherit.
_AT_A_TERMINAL = (
    "-c",
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from ludo_cli.main import main; sys.exit(main(sys.argv[1:]))",
)


def _request(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


class Up:
    """`ludo up` in a subprocess, read line by line until it prints its URL."""

    def __init__(self, data_dir: Path, port: int, *extra: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env["LUDO_DATA_DIR"] = str(data_dir)
        self.process = subprocess.Popen(
            [
                sys.executable,
                *_AT_A_TERMINAL,
                "up",
                "--port",
                str(port),
                "--ranking-port",
                str(free_port()),
                *extra,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # A process group of its own, as a shell makes for a foreground command:
            # the terminal's Ctrl-C goes to that whole group (`interrupt`).
            start_new_session=True,
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        deadline = time.monotonic() + 180
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Ludo is up: "):
                self.url = line.split()[3].rstrip("/")
                # What it prints from now on, read as it comes (`said`).
                self._reader = threading.Thread(target=self._read, daemon=True)
                self._reader.start()
                return
            if time.monotonic() > deadline:
                break
        self.process.kill()
        raise AssertionError("ludo up printed no URL:\n" + "".join(self.lines))

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def said(self, text: str, seconds: float = 120.0, *, after: int = 0, times: int = 1) -> str:
        """The `times`-th line printed that holds `text` (from line `after` on), waited for."""

        def found() -> str | None:
            lines = [line for line in list(self.lines)[after:] if text in line]
            return lines[times - 1] if len(lines) >= times else None

        return wait_until_sync(found, seconds, what=f"ludo up to print {text!r}")

    def interrupt(self, *, twice: bool = False) -> int:
        """Ctrl-C, as a terminal sends it: SIGINT to the whole process group (`twice`:
        pressed again once it says it is stopping); the exit status."""
        os.killpg(self.process.pid, signal.SIGINT)
        if twice:
            self.said("stopping ...")
            with contextlib.suppress(ProcessLookupError):  # it may have stopped already
                os.killpg(self.process.pid, signal.SIGINT)
        self.process.wait(timeout=120)
        self._reader.join(timeout=10)
        return self.process.returncode

    def descendants(self) -> set[int]:
        """Every process started under `ludo up`, its services' own children included."""
        parents: dict[int, int] = {}
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    # The field after the command's name, which may hold spaces.
                    stat = (proc / "stat").read_text().rpartition(")")[2].split()
                    parents[int(proc.name)] = int(stat[1])
        found: set[int] = set()
        frontier = {self.process.pid}
        while frontier:
            frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
            found |= frontier
        return found


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="tests the embedded database")
def test_up_serves_stops_on_ctrl_c_and_keeps_the_data(server_home: Path) -> None:
    """`ludo up` migrates, serves the API at the printed URL (ratings through the match
    service's proxy to the ranking service it started), stops cleanly on Ctrl-C
    (services, then the embedded PostgreSQL), and a second start finds the same data."""
    port = free_port()
    first = Up(server_home, port)
    try:
        assert _request(f"{first.url}/healthz") == {"status": "ok"}
        # The match service reads the public ratings from the ranking service it started.
        assert _request(f"{first.url}/api/ratings/leaderboard") == {
            "model": "openskill",
            "entries": [],
        }
        guest = _request(f"{first.url}/api/players", {"name": "kept"})
    finally:
        status = first.interrupt()
    output = "".join(first.lines)
    assert status == 0, output
    assert "embedded PostgreSQL stopped; data kept" in output
    assert (server_home / "pg" / "PG_VERSION").exists()

    second = Up(server_home, port)
    try:
        me = _request(f"{second.url}/api/players/me", token=guest["token"])
        # A third on the same port is refused before it starts anything, and never
        # claims to be up (the port's health check would be answered by the second).
        env = {**os.environ, "LUDO_DATA_DIR": str(server_home / "third")}
        env.pop("DATABASE_URL", None)
        third = subprocess.run(
            [sys.executable, "-m", "ludo_cli.main", "up", "--port", str(port)],
            check=False,  # its status is what is asserted
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert third.returncode == 1, third.stdout + third.stderr
        assert f"port {port} (match service) is already in use" in third.stderr
        assert "Ludo is up" not in third.stdout and not (server_home / "third" / "pg").exists()
    finally:
        assert second.interrupt() == 0
    assert me["id"] == guest["id"]
    assert guest["token"] not in "".join(first.lines + second.lines)  # never logged


# What `ludo up` says once Ctrl-C is pressed, and nothing else: no process's traceback,
# no per-instance chatter.
_STOPPING = ("stopping ...", "services: stopped (", "database: ")


def _said_after_stopping(lines: list[str]) -> list[str]:
    """The lines printed from "stopping ..." on, blank ones left out."""
    start = next(i for i, line in enumerate(lines) if line.strip() == "stopping ...")
    return [line.rstrip("\n") for line in lines[start:] if line.strip()]


def _embedded_url(data_dir: Path) -> str:
    """The URL of the embedded PostgreSQL that `ludo up` runs in `data_dir`."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["LUDO_DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [sys.executable, "-m", "ludo_cli.main", "db", "url"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


async def _finish_a_match(url: str) -> None:
    engine = create_engine(url)
    try:
        await write_match(engine, EventStore(engine), ["p1", "p2"], [1, 2])
    finally:
        await engine.dispose()


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="tests the embedded database")
@pytest.mark.parametrize(
    "options",
    [(), ("--instances", "2", "--ranking-instances", "2")],
    ids=["one-of-each", "behind-haproxy"],
)
def test_ctrl_c_stops_every_process_with_a_short_message(
    server_home: Path, options: tuple[str, ...]
) -> None:
    """Ctrl-C at the terminal (SIGINT to the process group, pressed twice) stops every
    process `ludo up` started, the ranking service's analysis worker included, with
    `ludo up`'s own few lines: no traceback or KeyboardInterrupt from any of them, no
    instance's own shutdown chatter; exit status 0."""
    if options and haproxy_path() is None:
        pytest.skip("--instances needs HAProxy")
    up = Up(server_home, free_port(), *options)
    try:
        # A finished match: the ranking service analyses it in a worker process of its own.
        asyncio.run(_finish_a_match(_embedded_url(server_home)))
        up.said('"matches_analysed"')
        started = up.descendants()
        commands = {pid: _cmdline(Path(f"/proc/{pid}")) for pid in started}
    finally:
        status = up.interrupt(twice=True)
    output = "".join(up.lines)
    assert status == 0, output
    for word in ("Traceback", "KeyboardInterrupt", "Exception ignored"):
        assert word not in output, output
    said = _said_after_stopping(up.lines)
    assert all(line.startswith(_STOPPING) for line in said), said
    assert said[-1] == "database: embedded PostgreSQL stopped; data kept for the next `ludo up`"
    assert len(said) == 3, said
    # The services, the balancer, the analysis worker (and the embedded PostgreSQL,
    # which detaches from `ludo up`): all gone.
    assert sum("uvicorn" in line for line in commands.values()) == (4 if options else 2)
    assert any("multiprocessing" in line for line in commands.values()), commands
    assert ("haproxy" in " ".join(commands.values())) == bool(options)
    assert not [pid for pid in started if _alive(pid)], commands
    assert not (server_home / "pg" / "postmaster.pid").exists()


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="runs its own PostgreSQL")
@pytest.mark.skipif(
    shutil.which("etcd") is None
    or haproxy_path() is None
    or importlib.util.find_spec("patroni") is None,
    reason="needs etcd (etcd-server), HAProxy and Patroni (the `ha` extra)",
)
def test_up_ha_serves_on_patroni_and_stops_every_part_on_ctrl_c(server_home: Path) -> None:
    """`ludo up --ha` starts etcd, three nodes and HAProxy, saying so, and serves; a standby's
    node lost whole, etcd and the database's HAProxy killed are each started again, the
    site writing on; Ctrl-C (twice) stops every part and every PostgreSQL, data kept,
    with `ludo up`'s own few lines and no traceback."""
    up = Up(server_home, free_port(), "--ha")
    home = server_home / "ha"
    try:
        assert _request(f"{up.url}/healthz") == {"status": "ok"}
        assert _request(f"{up.url}/api/players", {"name": "ha"})["name"] == "ha"

        ports = json.loads((home / "ports.json").read_text())
        rest = f"http://127.0.0.1:{ports['pg1_rest']}"
        members = _request(f"{rest}/cluster")["members"]
        standby = next(m["name"] for m in members if m["role"] != "leader")
        postmaster = int((home / standby / "data" / "postmaster.pid").read_text().split()[0])
        os.kill(_pid_of(str(home / standby / "patroni.json")), signal.SIGKILL)
        os.kill(postmaster, signal.SIGKILL)
        up.said(f"ha: {standby}'s Patroni exited with status -9; starting it again")
        assert "streaming" in up.said(f"ha: {standby}: back (")

        for part, marker in (
            ("etcd", f"--data-dir={home / 'etcd'}"),
            ("haproxy", str(home / "haproxy.cfg")),
        ):
            killed_at = len(up.lines)
            os.kill(_pid_of(marker), signal.SIGKILL)
            up.said(f"ha: {part} exited with status -9; starting it again")
            # Written through the restarted part: the services' pools recover on their own.
            wait_until_sync(lambda: _written(up.url), 60, what=f"a write after {part}'s restart")
        # The HAProxy just killed took every session through it. A session used now and
        # then is found broken only at its next use, and said so in a warning line: each
        # instance's beat (every 5 s; "resumed" at the one after) and the ranking
        # service's two leaders' lock sessions (pinged each second; "active" once the lock
        # is theirs again). Stopped before that, such a line would come among the stop's
        # own lines.
        for recovered, times in (
            ("instance_beat_resumed", 2),  # match-1 and ranking-1
            ("ranking_consumer_active", 1),
            ("analysis_consumer_active", 1),
        ):
            up.said(recovered, after=killed_at, times=times)
    finally:
        status = up.interrupt(twice=True)
    output = "".join(up.lines)
    assert status == 0, output
    for line in ("ha: etcd on", "ha: pg1: Patroni", "ha: pg3: Patroni", "read-write on"):
        assert line in output
    for word in ("Traceback", "KeyboardInterrupt", "Exception ignored"):
        assert word not in output, output
    said = _said_after_stopping(up.lines)
    assert all(line.startswith(_STOPPING) for line in said), said
    assert "Patroni, PostgreSQL and etcd stopped" in said[-1]
    for node in ("pg1", "pg2", "pg3"):
        data = server_home / "ha" / node / "data"
        assert (data / "PG_VERSION").exists() and not (data / "postmaster.pid").exists()


def _pid_of(marker: str) -> int:
    """The one process whose command line holds `marker`."""
    found = [
        int(proc.name)
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and marker in _cmdline(proc)
    ]
    assert len(found) == 1, (marker, found)
    return found[0]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _written(url: str) -> bool:
    """Whether a new guest can be created now (a 503 while the database is away: no)."""
    try:
        return bool(_request(f"{url}/api/players", {"name": "again"})["id"])
    except urllib.error.HTTPError as error:
        if error.code == 503:
            return False
        raise
