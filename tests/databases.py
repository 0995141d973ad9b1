"""PostgreSQL for the tests: the server the services would use, a database per test.

- The server: `DATABASE_URL` when set (its role must be allowed to CREATE DATABASE),
  otherwise the embedded PostgreSQL in `LUDO_DATA_DIR/pg`, started (or reused) through
  `services.shared.database` exactly as the services do.
- Once per session the migrations run into a template database; each test then gets a
  fresh copy (`CREATE DATABASE … TEMPLATE`, about 50 ms), dropped after the test.
- Async tests run on asyncio through the anyio pytest plugin (`pytestmark` in each module).

Not a conftest: the conftest.py of tests/services, tests/migrations and tests/ludo_cli
import these fixtures, so that one definition serves every folder that needs a database
(a top-level module imports the ones it uses).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.database import (
    EmbeddedPostgres,
    create_engine,
    libpq_url,
    migrate,
    normalize_url,
)
from services.shared.eventstore import EventStore
from services.shared.settings import Settings


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server_home() -> Iterator[Path]:
    """A folder for a test's own embedded server (`ludo up`'s data, a `pg/` of its own), in
    the system's temporary directory, removed afterwards, as `EmbeddedPostgres.scratch`
    makes its own. Not under pytest's tmp_path: any pytest session starting meanwhile (on
    another worker, test_compiled.py's) tightens /tmp/pytest-of-<user> to its owner
    alone, and the server, as its own OS user when we are root, could no longer reach it."""
    home = Path(tempfile.mkdtemp(prefix="ludo-test-home-"))
    home.chmod(0o755)
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """URL of a database on the test server from which databases can be created."""
    settings = Settings.from_env()
    if settings.database_url:
        yield normalize_url(settings.database_url)
        return
    with EmbeddedPostgres.start(settings.embedded_pgdata) as pg:
        yield pg.url


def with_database(url: str, name: str) -> str:
    """`url` pointing at database `name` on the same server."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def admin(url: str, *statements: str) -> None:
    """Run `statements` in autocommit mode on the database of `url`."""
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.fixture(scope="session")
def template_name(server_url: str) -> Iterator[str]:
    """A database migrated to head, copied for each test."""
    name = f"ludo_test_template_{uuid.uuid4().hex[:8]}"
    admin(server_url, f'CREATE DATABASE "{name}"')
    try:
        migrate(with_database(server_url, name))
        yield name
    finally:
        admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def blank_database_url(server_url: str) -> Iterator[str]:
    """A fresh, empty database (no migrations), dropped after the test."""
    name = f"ludo_test_{uuid.uuid4().hex[:12]}"
    admin(server_url, f'CREATE DATABASE "{name}"')
    try:
        yield with_database(server_url, name)
    finally:
        admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def migrated_database(server_url: str, template_name: str) -> Iterator[str]:
    """A fresh database migrated to head (a copy of the template), dropped afterwards."""
    name = f"ludo_test_{uuid.uuid4().hex[:12]}"
    admin(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"')
    try:
        yield with_database(server_url, name)
    finally:
        admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(server_url: str, template_name: str) -> Iterator[str]:
    """A fresh database migrated to head, dropped after the test."""
    with migrated_database(server_url, template_name) as url:
        yield url


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An async engine on the test's database, with room for many concurrent writers."""
    engine = create_engine(database_url, pool_size=24, max_overflow=8)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def pg_store(engine: AsyncEngine) -> EventStore:
    """The PostgreSQL event store on the test's database."""
    return EventStore(engine)
