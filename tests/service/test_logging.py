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
