"""Structured logs: JSON lines with match ids and no secrets; at `info` only what an
operator acts on (no line per poll, slow requests yes, no Alembic chatter at start)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import structlog
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from ludo_cli.cluster import free_port
from services.match.app import create_app
from services.shared.logging import configure_logging
from services.shared.settings import Settings
from tests import paths
from tests.services.conftest import Api
from tests.waiting import wait_until_sync

pytestmark = pytest.mark.anyio

ROOT = paths.ROOT


@contextlib.contextmanager
def _logs(tmp_path: Path, level: str) -> Iterator[io.StringIO]:
    """JSON logging at `level` into a buffer, then structlog's defaults back."""
    root = logging.getLogger()
    handlers, root_level = root.handlers[:], root.level
    alembic = logging.getLogger("alembic").level
    buffer = io.StringIO()
    configure_logging(Settings(data_dir=tmp_path, log_format="json", log_level=level), buffer)
    try:
        yield buffer
    finally:
        structlog.reset_defaults()
        root.handlers[:], root.level = handlers, root_level
        logging.getLogger("alembic").setLevel(alembic)


@pytest.fixture
def json_logs(tmp_path: Path) -> Iterator[io.StringIO]:
    """JSON logging at debug (every line) into a buffer for one test."""
    with _logs(tmp_path, "debug") as buffer:
        yield buffer


@pytest.fixture
def info_logs(tmp_path: Path) -> Iterator[io.StringIO]:
    """JSON logging at info, the default level, into a buffer for one test."""
    with _logs(tmp_path, "info") as buffer:
        yield buffer


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")]


async def test_logs_are_json_with_ids_and_no_secrets(api: Api, json_logs: io.StringIO) -> None:
    """Request and command lines are JSON, carry match_id, and hold no token or seed."""
    match_id, players, _ = await api.duel()
    r = await api.call("POST", f"/api/matches/{match_id}/roll", headers=api.h(players[0]))
    assert r.status_code in (200, 409)
    async with api.engine.connect() as conn:
        seed = await conn.scalar(sa.text("SELECT server_seed FROM match_seeds"))
    out = json_logs.getvalue()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert any(line.get("event") == "request" and line.get("status") for line in lines)
    assert any(line.get("match_id") == match_id for line in lines)
    for player in players:
        assert player["auth"].removeprefix("Bearer ") not in out
    assert bytes(seed).hex() not in out


_REFUSE_REVEAL = """
CREATE FUNCTION refuse_reveal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Echoes the row's values, as psycopg's DETAIL: Key (...)=(...) lines do.
    RAISE EXCEPTION 'refused event %', NEW.data
        USING DETAIL = format('Key (data)=(%s) metadata %s', NEW.data, NEW.metadata);
END $$;
CREATE TRIGGER refuse_reveal BEFORE INSERT ON events
    FOR EACH ROW WHEN (NEW.type = 'SeedRevealed') EXECUTE FUNCTION refuse_reveal();
"""


async def test_a_failed_reveal_logs_what_failed_but_no_seed_token_or_body(
    api: Api, json_logs: io.StringIO
) -> None:
    """A database error on the append that carries SeedRevealed is logged with its type,
    SQLSTATE and place, but no seed, token or request body value (the error's own text
    and SQLAlchemy's bound parameters echo them)."""
    async with api.engine.begin() as conn:  # this test's own database
        for statement in _REFUSE_REVEAL.split(";\nCREATE"):
            sql = statement if statement.startswith("\nCREATE FUNCTION") else "CREATE" + statement
            await conn.execute(sa.text(sql))
    match_id, players, _ = await api.duel()
    url = f"/api/matches/{match_id}"
    failed = None
    for _ in range(5000):
        state = (await api.call("GET", url)).json()
        who = api.h(players[state["turn"]])
        if state["phase"] == "roll":
            r = await api.call("POST", f"{url}/roll", headers=who)
        else:
            moves = (await api.call("GET", f"{url}/moves")).json()["moves"]
            r = await api.call(
                "POST", f"{url}/move", json={"piece": moves[0]["piece"]}, headers=who
            )
        if r.status_code != 200:
            failed = r
            break
    assert failed is not None and failed.status_code == 500, "the winning move must fail"
    assert failed.json() == {"error": "internal", "detail": "internal server error"}
    async with api.engine.connect() as conn:
        seed = bytes(await conn.scalar(sa.text("SELECT server_seed FROM match_seeds")))
        revealed = await conn.scalar(
            sa.text("SELECT count(*) FROM events WHERE type = 'SeedRevealed'")
        )
    assert revealed == 0

    out = json_logs.getvalue()
    assert seed.hex() not in out
    assert "server_seed" not in out
    for player in players:
        assert player["auth"].removeprefix("Bearer ") not in out
    assert "a-seed" not in out and "b-seed" not in out  # the parties' client seeds (bodies)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    failure = next(line for line in lines if line.get("event") == "request_failed")
    assert failure["error_type"] in ("RaiseException", "InternalError", "ProgrammingError")
    assert failure["sqlstate"] == "P0001"  # raise_exception: what failed, without values
    assert "refused event" in failure["error"]
    assert "where" in failure and failure["match_id"] == match_id


def _app_settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(data_dir=tmp_path, cpu_delay=0, scheduler=False, pairing=False, **overrides)


async def test_polls_write_nothing_at_info(
    engine: AsyncEngine, tmp_path: Path, info_logs: io.StringIO
) -> None:
    """Fifty GET polls (state, moves, events, lobby) write no line at info: the request
    lines are debug unless slow (threshold out of reach here) or a 5xx."""
    app = create_app(_app_settings(tmp_path, slow_request_ms=10**9), engine=engine)
    async with AsyncTestClient(app) as client:
        api = Api(client, engine)
        match_id, _players, _ = await api.duel()
        info_logs.truncate(0)
        info_logs.seek(0)
        for _ in range(10):
            for path in ("", "/moves", "/events?from=0", "/fairness"):
                assert (await client.get(f"/api/matches/{match_id}{path}")).status_code == 200
            assert (await client.get("/api/parties")).status_code == 200
    assert [line for line in _lines(info_logs) if line.get("event") == "request"] == []


async def test_a_slow_request_is_a_warning(
    engine: AsyncEngine, tmp_path: Path, info_logs: io.StringIO
) -> None:
    """With `LUDO_SLOW_REQUEST_MS` 0 every request is over the threshold: its `request`
    line is at warning with `slow: true`, method, path, status and duration."""
    app = create_app(_app_settings(tmp_path, slow_request_ms=0), engine=engine)
    async with AsyncTestClient(app) as client:
        assert (await client.get("/api/parties")).status_code == 200
    slow = [line for line in _lines(info_logs) if line.get("event") == "request"]
    assert len(slow) == 1
    assert slow[0]["level"] == "warning" and slow[0]["slow"] is True
    assert (slow[0]["method"], slow[0]["path"], slow[0]["status"]) == ("GET", "/api/parties", 200)
    assert slow[0]["ms"] >= 0


async def test_service_start_writes_no_alembic_lines(
    database_url: str, tmp_path: Path, info_logs: io.StringIO
) -> None:
    """A service migrates its database at start; at info that writes no Alembic line
    ("Context impl …", "Will assume transactional DDL")."""
    app = create_app(_app_settings(tmp_path, database_url=database_url))
    async with AsyncTestClient(app) as client:
        assert (await client.get("/healthz")).status_code == 200
    out = info_logs.getvalue()
    assert "Context impl" not in out and "transactional DDL" not in out
    assert not [line for line in _lines(info_logs) if line.get("logger", "").startswith("alembic")]


def test_the_container_command_writes_only_json_lines_on_stdout(
    database_url: str, tmp_path: Path
) -> None:
    """The Dockerfile's CMD, run as is (host and port aside), writes nothing but JSON lines
    on stdout: uvicorn's plain-text access lines are off, the services' own lines remain."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    command = json.loads(
        next(line for line in dockerfile.splitlines() if line.startswith("CMD ")).removeprefix(
            "CMD "
        )
    )
    assert command[0] == "python"
    port = free_port()
    argv = [sys.executable, *command[1:]]
    argv[argv.index("--host") + 1] = "127.0.0.1"
    argv[argv.index("--port") + 1] = str(port)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "LUDO_LOG_FORMAT": "json",  # the Dockerfile's ENV
        "LUDO_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    server = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            assert server.poll() is None, server.communicate()
            with contextlib.suppress(httpx.TransportError):
                return httpx.get(f"{base}/healthz").status_code == 200
            return False

        wait_until_sync(ready, 30, what="the service to answer /healthz")
        assert httpx.get(f"{base}/api/parties").status_code == 200
        assert httpx.post(f"{base}/api/players", json={"name": "ops"}).status_code == 201
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    lines = out.decode().splitlines()
    assert lines, err.decode()
    parsed = [json.loads(line) for line in lines]  # a plain-text line fails here
    assert any(line["event"] == "player_created" for line in parsed)
    assert b"GET /healthz HTTP/1.1" not in out + err
