"""A match's table settings travel in its `MatchCreated` (version 3, `table`), and a match
stored before that (a version-2 `MatchCreated`, no `table`) keeps reading them from its
`matches` row (docs/events.md "The table's settings"), on real PostgreSQL."""

from __future__ import annotations

import uuid

import msgspec
import pytest
import sqlalchemy as sa

from domain import events as ev
from domain.decider import MatchState
from services.match.play.reads import NO_ROW, MatchRow, settings_of
from services.shared import match_rows
from services.shared.eventstore import EventData, EventStore
from tests.conftest import rules, start_events
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


async def _stored_created(api: Api, match_id: str) -> tuple[int, dict[str, object]]:
    async with api.engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT schema_version, data::text FROM events"
                    " WHERE stream_id = :s AND stream_version = 0"
                ),
                {"s": f"match-{match_id}"},
            )
        ).one()
    return int(row[0]), msgspec.json.decode(row[1])


async def test_a_started_match_pins_its_tables_settings_in_match_created(api: Api) -> None:
    """The stored MatchCreated is version 3 with the party's settings; the match's view
    reads them from there even when its `matches` row says otherwise."""
    match_id, _, party_id = await api.duel(turn_limit=60, ranked=True, cpu_speed="fast")
    version, data = await _stored_created(api, match_id)
    assert version == 3
    assert data["table"] == {
        "party_id": party_id,
        "turn_limit": 60,
        "ranked": True,
        "cpu_speed": "fast",
    }
    async with api.engine.begin() as conn:
        row = await match_rows.read_row(conn, f"match-{match_id}")
        assert row == MatchRow(party_id, 60, True, "fast")  # the index, written alike
        # Only for this test: a row that disagrees, to see which one the reads believe.
        await conn.execute(
            sa.text("UPDATE matches SET turn_limit = NULL, ranked = false WHERE stream_id = :s"),
            {"s": f"match-{match_id}"},
        )
    api.client.app.state.parts.matches.forget_row(f"match-{match_id}")
    match = await api.match(match_id)
    assert (match["turn_limit"], match["ranked"], match["party_id"]) == (60, True, party_id)


async def test_a_match_stored_before_reads_its_settings_from_its_row(
    api: Api, pg_store: EventStore
) -> None:
    """A version-2 MatchCreated (no `table`, as every match before it was stored) keeps its
    bytes and version, and its view shows its `matches` row's settings."""
    match_id = str(uuid.uuid4())
    stream = f"match-{match_id}"
    created, started = start_events(rules())
    v3_bytes = ev.encode_event(created)
    assert b"table" not in v3_bytes
    old = EventData("MatchCreated", 2, v3_bytes)  # a version-2 event's very bytes
    async with api.engine.begin() as conn:
        await match_rows.insert_match(
            conn, stream, bytes(32), MatchRow("old-party", 30, True, "normal")
        )
    await pg_store.append(stream, 0, [old, started])
    version, data = await _stored_created(api, match_id)
    assert version == 2 and "table" not in data
    match = await api.match(match_id)
    assert (match["turn_limit"], match["ranked"], match["party_id"]) == (30, True, "old-party")


def test_settings_of_prefers_the_event_but_the_rows_cpu_speed() -> None:
    """The event's settings win; the CPUs' speed is the row's (the host may change it
    mid-match); with no table in the event, the row (or NO_ROW) as it is."""
    state = MatchState()
    row = MatchRow("p", None, False, "fast")
    assert settings_of(state, row) is row and settings_of(state, NO_ROW) is NO_ROW
    state.table = ev.MatchTable(party_id="p", turn_limit=30, ranked=True, cpu_speed="normal")
    assert settings_of(state, row) == MatchRow("p", 30, True, "fast")
