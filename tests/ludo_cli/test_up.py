"""`ludo up` as a user runs it: one command, a URL, Ctrl-C, and the data still there."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ludo_cli.cluster import free_port, haproxy_path


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
                "-m",
                "ludo_cli.main",
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
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        deadline = time.monotonic() + 180
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Ludo is up: "):
                self.url = line.split()[3].rstrip("/")
                return
            if time.monotonic() > deadline:
                break
        self.process.kill()
        raise AssertionError("ludo up printed no URL:\n" + "".join(self.lines))

    def interrupt(self) -> int:
        """Ctrl-C, as a terminal sends it; the exit status."""
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=60)
        self.lines.append(out)
        return self.process.returncode


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="tests the embedded database")
def test_up_serves_stops_on_ctrl_c_and_keeps_the_data(tmp_path: Path) -> None:
    """`ludo up` migrates, serves the API at the printed URL (ratings through the match
    service's proxy to the ranking service it started), stops cleanly on Ctrl-C
    (services, then the embedded PostgreSQL), and a second start finds the same data."""
    port = free_port()
    first = Up(tmp_path, port)
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
    assert (tmp_path / "pg" / "PG_VERSION").exists()

    second = Up(tmp_path, port)
    try:
        me = _request(f"{second.url}/api/players/me", token=guest["token"])
        # A third on the same port is refused before it starts anything, and never
        # claims to be up (the port's health check would be answered by the second).
        env = {**os.environ, "LUDO_DATA_DIR": str(tmp_path / "third")}
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
        assert "Ludo is up" not in third.stdout and not (tmp_path / "third" / "pg").exists()
    finally:
        assert second.interrupt() == 0
    assert me["id"] == guest["id"]
    assert guest["token"] not in "".join(first.lines + second.lines)  # never logged


@pytest.mark.slow
@pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="runs its own PostgreSQL")
@pytest.mark.skipif(
    shutil.which("etcd") is None
    or haproxy_path() is None
    or importlib.util.find_spec("patroni") is None,
    reason="needs etcd (etcd-server), HAProxy and Patroni (the `ha` extra)",
)
def test_up_ha_serves_on_patroni_and_stops_every_part_on_ctrl_c(tmp_path: Path) -> None:
    """`ludo up --ha` prints etcd, the three nodes and HAProxy as it starts them, serves the
    site on the cluster's primary, and Ctrl-C stops every PostgreSQL, keeping their data."""
    up = Up(tmp_path, free_port(), "--ha")
    try:
        assert _request(f"{up.url}/healthz") == {"status": "ok"}
        assert _request(f"{up.url}/api/players", {"name": "ha"})["name"] == "ha"
    finally:
        status = up.interrupt()
    output = "".join(up.lines)
    assert status == 0, output
    for line in ("ha: etcd on", "ha: pg1: Patroni", "ha: pg3: Patroni", "read-write on"):
        assert line in output
    assert "Patroni, PostgreSQL and etcd stopped" in output
    for node in ("pg1", "pg2", "pg3"):
        data = tmp_path / "ha" / node / "data"
        assert (data / "PG_VERSION").exists() and not (data / "postmaster.pid").exists()
