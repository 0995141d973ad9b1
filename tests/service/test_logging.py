"""Structured request logs: JSON lines with match ids, and no secrets."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import structlog

from services.shared.logging import configure_logging
from services.shared.settings import Settings

from .conftest import Api

pytestmark = pytest.mark.anyio


@pytest.fixture
def json_logs(tmp_path: Path) -> Iterator[io.StringIO]:
    """JSON logging into a buffer for one test, then structlog's defaults back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    buffer = io.StringIO()
    configure_logging(Settings(data_dir=tmp_path, log_format="json"), buffer)
    yield buffer
    structlog.reset_defaults()
    root.handlers[:], root.level = handlers, level


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
