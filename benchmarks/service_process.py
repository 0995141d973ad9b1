"""The one way a bench starts a service process, and samples what processes spent.

`serve` runs an app under uvicorn in a subprocess on a loopback port (a free one unless
given), from this source tree or a baseline's checkout, waits until it answers, and names
the end of its stderr in every error: it exited before answering, did not answer in time,
or died during the run. `cpu_seconds` is the CPU sampler of every bench: the process trees
of named parts (a service, PostgreSQL, HAProxy) and the machine's busy time, each from its
own accounting, so that a part's CPU per command is a difference of two samples.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import msgspec

from benchmarks.common import ROOT, BenchError, run_in_tree
from ludo_cli.cluster import free_port
from services.shared.serving import UVICORN_ARGS

__all__ = [
    "MATCH_APP",
    "Service",
    "check_loopback",
    "cpu_seconds",
    "postgresql_pid",
    "serve",
    "service_cpu_seconds",
    "stderr_tail",
]

MATCH_APP = "services.match.app:app_from_env"
_STDERR_TAIL = 40  # lines of a process's stderr an error message quotes
_START_S = 60.0  # for a service to answer its readiness URL


class Service(NamedTuple):
    """A started service: its base URL (`http://127.0.0.1:PORT`) and its process id."""

    base: str
    pid: int


def stderr_tail(path: Path, lines: int = _STDERR_TAIL) -> str:
    """The last `lines` lines of a process's stderr file, for an error message."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no output)"
    return "\n".join(text[-lines:]) or "(no output)"


def _uvicorn_args(root: Path) -> list[str]:
    """The `UVICORN_ARGS` of the source tree `root` (a baseline checkout names the
    protocol classes it has)."""
    code = (
        "import json; from services.shared.serving import UVICORN_ARGS as a; print(json.dumps(a))"
    )
    args: list[str] = msgspec.json.decode(
        run_in_tree(root, code, what="reading the uvicorn options")
    )
    return args


@contextlib.contextmanager
def serve(
    db_url: str,
    *,
    root: Path | None = None,
    port: int | None = None,
    workers: int = 1,
    log_level: str = "info",
    env: Mapping[str, str] | None = None,
    factory: str = MATCH_APP,
    ready: str = "/api/parties",
    say: Callable[[str], None] | None = None,
) -> Iterator[Service]:
    """The match service (or `factory`, another app served the same way, e.g. `ludo bench
    floor`'s) under uvicorn in a subprocess on a loopback port (default: a free one), run
    from the source tree `root` (default: this one; a baseline from its own checkout) with
    its own uvicorn options, `workers` processes and `env`: more settings. Up once `ready`
    answers 200; stopped (terminated, killed after 20 s) when the block ends."""
    import httpx

    port = free_port() if port is None else port
    root = ROOT if root is None else root
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "LUDO_CPU_DELAY": "0",
        "LUDO_LOG_LEVEL": log_level,
        "LUDO_LOG_FORMAT": "json",
        # A bench measures capacity from one address: the per-client budgets are off.
        "LUDO_RATE_LIMIT": "0",
        "LUDO_GUEST_LIMIT": "0",
        "LUDO_WS_MESSAGE_RATE": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p),
        **(env or {}),
    }
    # This tree's options; a baseline checkout is served with its own.
    serving = [*UVICORN_ARGS] if root == ROOT else _uvicorn_args(root)
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        factory,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--log-level",
        "warning",
        *serving,
    ]
    with tempfile.TemporaryDirectory(prefix="ludo-bench-") as tmp:
        out, err = Path(tmp, "stdout.log"), Path(tmp, "stderr.log")
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=stdout, stderr=stderr)
        base = f"http://127.0.0.1:{port}"
        try:
            if say is not None:
                say(f"service: {' '.join(cmd[1:])} (pid {proc.pid})")
            deadline = time.monotonic() + _START_S
            while True:
                if proc.poll() is not None:
                    raise BenchError(
                        f"the service exited with status {proc.returncode} before it answered;"
                        f" its stderr ends with:\n{stderr_tail(err)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}{ready}", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"the service did not answer on {base} within {_START_S:g} s; its "
                        f"stderr ends with:\n{stderr_tail(err)}"
                    )
                time.sleep(0.1)  # polling a process that is starting: nothing to wait on
            yield Service(base, proc.pid)
            if proc.poll() is not None:
                raise BenchError(
                    f"the service died during the run (status {proc.returncode}); its stderr "
                    f"ends with:\n{stderr_tail(err)}"
                )
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def check_loopback(url: str) -> None:
    """`BenchError` unless `url` (a running service's, `--url`) is http(s) on loopback:
    a bench loads the service heavily."""
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


# --------------------------------------------------------------------------- CPU samples


def cpu_seconds(
    parts: Mapping[str, Iterable[int]], *, machine: str | None = None, reaped: bool = True
) -> dict[str, float]:
    """CPU seconds so far: under `machine` (when given), the busy time of all the machine's
    cores; under each part's name, the user + system time of its processes and every
    process under them. `reaped`: also what their children that have exited spent (the
    kernel adds it to the parent's `children_*` times when it reaps one: a PostgreSQL
    backend whose connection closed). Empty without psutil (an optional dependency)."""
    try:
        import psutil
    except ImportError:
        return {}
    sample: dict[str, float] = {}
    if machine is not None:
        times = psutil.cpu_times()
        sample[machine] = sum(times) - times.idle - getattr(times, "iowait", 0.0)
    for part, pids in parts.items():
        sample[part] = sum(_tree_cpu(psutil, pid, reaped=reaped) for pid in pids)
    return sample


def _tree_cpu(psutil: Any, pid: int, *, reaped: bool) -> float:
    """CPU seconds of `pid` and every process under it, living (and `reaped`: gone)."""
    total = 0.0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        if reaped:
            t = root.cpu_times()
            total += t.children_user + t.children_system
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                total += t.user + t.system
    return total


def postgresql_pid(db_url: str) -> int | None:
    """The PostgreSQL server's main process, when it runs on this machine (and psutil is
    there to find it)."""
    import psycopg

    from services.shared.database import libpq_url

    try:
        import psutil
    except ImportError:
        return None
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        # Asked while the session lives: its backend process exits with the connection.
        with contextlib.suppress(psutil.Error):
            return int(psutil.Process(int(row[0])).ppid()) if row else None
    return None


def service_cpu_seconds(service_pid: int | None, db_url: str) -> dict[str, float]:
    """`cpu_seconds` of a service's usual parts: the machine (`machine_busy`), the service's
    process tree (`service`, when known) and the PostgreSQL server's (`postgresql`, when it
    runs here)."""
    parts = {
        name: [pid]
        for name, pid in (("service", service_pid), ("postgresql", postgresql_pid(db_url)))
        if pid is not None
    }
    return cpu_seconds(parts, machine="machine_busy")
