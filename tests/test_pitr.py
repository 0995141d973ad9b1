"""Point-in-time recovery (docs/operations.md, Backups): the documented recipe, run for real.

A PostgreSQL 18 server of this module's own (the embedded wheel's, in a folder of the
system's temporary directory that its OS user owns), set up as an operator's would be:
its socket folder and no TCP in its configuration, not only on its command line. The
lines of `RECIPE` run as docs/operations.md prints them, through `sh` as the server's OS
user (the `ludo` line as this one), with the test's paths, URLs and target time: WAL
archiving switched on, a base backup, matches played through the match service, the time
noted, more played, the WAL switched and archived, the server stopped and its data
replaced by the base backup, recovery to the noted time, then the audit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.engine import make_url

from services.match.app import create_app
from services.shared.database import (
    EmbeddedPostgres,
    _embedded_user,
    create_engine,
    libpq_url,
    migrate,
    stop_embedded,
)
from services.shared.settings import Settings
from tests import paths
from tests.databases import anyio_backend  # noqa: F401 - the fixture, re-used by import
from tests.services.conftest import Api
from tests.test_backup import pg_bin
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DOC = paths.ROOT / "docs" / "operations.md"

# The recipe's steps, exactly as docs/operations.md prints them
# (test_the_recipe_is_the_documented_one checks each line is there).
ARCHIVING = [
    "psql -v ON_ERROR_STOP=1 -d \"$ADMIN_URL\" -c 'ALTER SYSTEM SET archive_mode = on' -c"
    " \"ALTER SYSTEM SET archive_command = 'test ! -f $ARCHIVE/%f && cp %p $ARCHIVE/%f'\""
    " -c \"ALTER SYSTEM SET archive_timeout = '60s'\"",
    'pg_ctl -D "$PGDATA" -m fast -w restart',
]
BASE_BACKUP = ['pg_basebackup -d "$ADMIN_URL" -D "$BASE" -Fp -X stream -c fast']
SWITCH_WAL = [
    "psql -At -v ON_ERROR_STOP=1 -d \"$ADMIN_URL\" -c 'SELECT pg_walfile_name(pg_switch_wal())'"
]
REPLACE = [
    'pg_ctl -D "$PGDATA" -m fast -w stop',
    'mv "$PGDATA" "$PGDATA.before-restore"',
    'cp -a "$BASE" "$PGDATA"',
    'rm -f "$PGDATA"/.s.PGSQL.*.lock',
]
RECOVER = [
    "printf \"restore_command = 'cp $ARCHIVE/%%f %%p'\\nrecovery_target_time = '%s'\\n"
    'recovery_target_action = \'promote\'\\n" "$TARGET_TIME" >> "$PGDATA/postgresql.auto.conf"',
    'touch "$PGDATA/recovery.signal"',
    'pg_ctl -D "$PGDATA" -l "$PGDATA/restore.log" -w -t 600 start',
]
AFTER = [
    "psql -v ON_ERROR_STOP=1 -d \"$ADMIN_URL\" -c 'ALTER SYSTEM RESET restore_command' -c"
    " 'ALTER SYSTEM RESET recovery_target_time' -c 'ALTER SYSTEM RESET recovery_target_action'",
    'DATABASE_URL="$APP_URL" ludo replay audit --all',
]
RECIPE = [*ARCHIVING, *BASE_BACKUP, *SWITCH_WAL, *REPLACE, *RECOVER, *AFTER]

_EVENTS = (
    "SELECT global_position, tx::text, stream_id, stream_version, event_id, type,"
    " data::text, metadata::text, recorded_at, prev_hash, hash FROM events"
    " ORDER BY global_position"
)


class Server:
    """The module's server, its folders, and a runner for the recipe's lines."""

    def __init__(self, home: Path, pg: EmbeddedPostgres) -> None:
        self.home = home
        self.pg = pg
        self.pgdata = pg.pgdata
        self.admin = libpq_url(make_url(pg.url).set(database="postgres"))
        bin_dir = home / "bin"
        bin_dir.mkdir()
        ludo = bin_dir / "ludo"  # the checkout's `ludo`, whether installed or not
        ludo.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ludo_cli.main "$@"\n')
        ludo.chmod(0o755)
        self.env = {
            **os.environ,
            "PATH": f"{Path(pg_bin('psql')).parent}:{bin_dir}:{os.environ['PATH']}",
            "PYTHONPATH": str(paths.ROOT),
            "PGDATA": str(self.pgdata),
            "ARCHIVE": str(home / "archive"),
            "BASE": str(home / "base"),
            "ADMIN_URL": self.admin,
            "APP_URL": pg.url,
        }

    def run(self, lines: list[str], **env: str) -> str:
        """Each line through `sh` (as the server's OS user, but `ludo` as this one);
        fails the test with its output when one fails. Returns the last one's output."""
        out = ""
        for line in lines:
            user = None if " ludo " in f" {line}" else _embedded_user()
            # Into a file, not a pipe: a server that `pg_ctl` starts keeps its
            # descriptors, and reading a pipe to its end would wait for the server.
            with tempfile.TemporaryFile("w+") as log:
                done = subprocess.run(
                    ["sh", "-c", line],
                    cwd=self.home,
                    env={**self.env, **env},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    text=True,
                    check=False,
                    user=user,
                )
                log.seek(0)
                out = log.read()
            # The server's own account of a failed start (recovery's errors go there).
            log_file = self.pgdata / "restore.log"
            server_log = log_file.read_text()[-3000:] if log_file.exists() else ""
            assert done.returncode == 0, f"{line}\n{out}\n{server_log}"
        return out

    def scalar(self, query: str, url: str | None = None) -> Any:
        with psycopg.connect(url or self.admin, autocommit=True) as conn:
            row = conn.execute(query).fetchone()
            return None if row is None else row[0]

    def events(self) -> list[tuple[Any, ...]]:
        with psycopg.connect(libpq_url(self.pg.url)) as conn:
            return conn.execute(_EVENTS).fetchall()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    home = Path(tempfile.mkdtemp(prefix="ludo-pitr-"))
    user = _embedded_user()
    if user is not None:  # the server's OS user moves its data folder and writes the archive
        shutil.chown(home, user, user)
    (home / "archive").mkdir()
    if user is not None:
        shutil.chown(home / "archive", user, user)
    pg = EmbeddedPostgres.start(home / "pg")
    try:
        socket_dir = make_url(pg.url).query["host"]
        with psycopg.connect(libpq_url(make_url(pg.url).set(database="postgres"))) as conn:
            conn.autocommit = True
            # What an operator's postgresql.conf says; the wheel says it on the command
            # line only, which a plain `pg_ctl start` (step 5) does not repeat.
            conn.execute("ALTER SYSTEM SET listen_addresses = ''")
            conn.execute(f"ALTER SYSTEM SET unix_socket_directories = '{socket_dir}'")
        migrate(pg.url)
        yield Server(home, pg)
    finally:
        with contextlib.suppress(Exception):
            stop_embedded(home / "pg")
        with contextlib.suppress(Exception):
            pg.close()
        shutil.rmtree(home, ignore_errors=True)


def settings(data_dir: Path, url: str) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=url,
        cpu_delay=0,
        scheduler=False,
        pairing=False,
        rate_limit=0,
        arena_schedule="[]",  # no arena streams appearing on their own
    )


def test_the_recipe_is_the_documented_one() -> None:
    """Every line the test runs is printed, as it runs, in docs/operations.md."""
    text = DOC.read_text()
    missing = [line for line in RECIPE if line not in text]
    assert not missing, f"docs/operations.md does not show: {missing}"


async def test_restore_to_a_time_keeps_what_came_before_and_plays_on(
    server: Server, tmp_path: Path
) -> None:
    """Recovered to the noted time, the server holds exactly the events appended before it
    (byte for byte) and none after, the audit passes, and the match left in play takes its
    next command with a `tx` past every restored one."""
    server.run(ARCHIVING)
    assert server.scalar("SHOW archive_mode") == "on"
    server.run(BASE_BACKUP)

    engine = create_engine(server.pg.url)
    try:
        async with AsyncTestClient(create_app(settings(tmp_path, server.pg.url))) as client:
            api = Api(client, engine)
            finished, finished_players, _ = await api.duel()
            assert (await api.play_to_end(finished, finished_players))["status"] == "finished"
            live, live_players, _ = await api.duel()
            for _ in range(4):
                await api.step(live, live_players)
        # The service stopped: nothing appends between this read and the noted time.
        before = server.events()
        target = str(server.scalar("SELECT clock_timestamp()::text"))
        async with AsyncTestClient(create_app(settings(tmp_path, server.pg.url))) as client:
            api = Api(client, engine)
            for _ in range(4):
                await api.step(live, live_players)
            later, later_players, _ = await api.duel()
            await api.step(later, later_players)
    finally:
        await engine.dispose()
    after = server.events()
    assert len(after) > len(before) and after[: len(before)] == before

    segment = server.run(SWITCH_WAL).strip()
    await wait_until(
        lambda: (server.scalar("SELECT last_archived_wal FROM pg_stat_archiver") or "") >= segment,
        60.0,
    )
    server.run(REPLACE)
    server.run(RECOVER, TARGET_TIME=target)

    def promoted() -> bool:
        try:
            return server.scalar("SELECT NOT pg_is_in_recovery()") is True
        except psycopg.OperationalError:  # still replaying, not yet accepting connections
            return False

    await wait_until(promoted, 120.0)
    audit = server.run(AFTER)
    assert server.events() == before
    streams = {row[2] for row in before}
    assert f"match-{finished}" in streams and f"match-{live}" in streams
    assert f"match-{later}" not in {row[2] for row in server.events()}
    assert f"OK   {finished}: " in audit and f"OK   {live}: " in audit, audit
    assert later not in audit, audit

    engine = create_engine(server.pg.url)
    try:
        async with AsyncTestClient(create_app(settings(tmp_path, server.pg.url))) as client:
            api = Api(client, engine)
            version = await api.version(live)
            await api.step(live, live_players)
            assert await api.version(live) > version
    finally:
        await engine.dispose()
    restored_tx = max(int(row[1]) for row in before)
    new = server.events()[len(before) :]
    assert new and all(int(row[1]) > restored_tx for row in new)
