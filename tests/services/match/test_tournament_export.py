"""The tournament export against a real PostgreSQL: an arena over exports to a file that
verifies, with its matches as `ludo replay export` writes them; an arena still playing, or
unknown, is refused."""

from __future__ import annotations

import pytest

from domain.arena import ArenaCancelled, TablesPaired
from domain.streams import match_stream
from replays.tournament import dump_tournament, load_tournament
from replays.tournament_verify import verify_tournament
from services.match.replays.service import ReplayStore
from services.match.replays.tournament_export import (
    ArenaNotFound,
    ArenaRunning,
    tournament_from_store,
)
from services.shared.eventstore import EventStore
from tests.arena_fixtures import STARTS_AT, ArenaRecord, build_arena, store_arena

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def record() -> ArenaRecord:
    return build_arena()


class TestExport:
    async def test_export_verifies_with_every_match_in_pairing_order(
        self, pg_store: EventStore, record: ArenaRecord
    ) -> None:
        """A stored, finished arena exports to a file that verifies: its events, each
        paired match's replay (as `ludo replay export` writes it) in pairing order, and the
        standings of the fold."""
        await store_arena(pg_store, record)
        tournament = await tournament_from_store(pg_store, record.arena_id, exported_by="test")
        verdict = verify_tournament(load_tournament(dump_tournament(tournament)))
        assert verdict.ok, verdict.failure
        assert (verdict.events, verdict.matches, verdict.players) == (
            len(record.events),
            len(record.matches),
            6,
        )
        assert [m.match_id for m in tournament.matches] == list(record.matches)
        first = tournament.matches[0]
        again = await ReplayStore(pg_store).export(first.match_id)
        assert again.events == first.events and first.stream_id == match_stream(first.match_id)
        assert tournament.exported_by == "test"

    async def test_an_arena_with_a_match_running_is_refused(
        self, pg_store: EventStore, record: ArenaRecord
    ) -> None:
        """While a paired match has no result the export is refused (`arena_running`): its
        seed is secret, and the file could not verify."""
        last_pairing = max(i for i, e in enumerate(record.events) if isinstance(e, TablesPaired))
        await store_arena(pg_store, record, record.events[: last_pairing + 1])
        with pytest.raises(ArenaRunning, match="still running") as refused:
            await tournament_from_store(pg_store, record.arena_id)
        assert refused.value.code == "arena_running"

    async def test_an_arena_not_ended_is_refused(
        self, pg_store: EventStore, record: ArenaRecord
    ) -> None:
        """Every match scored but the clock not yet out: refused, it is still playing."""
        await store_arena(pg_store, record, record.events[:-1])
        with pytest.raises(ArenaRunning, match="has not ended"):
            await tournament_from_store(pg_store, record.arena_id)

    async def test_a_cancelled_arena_with_no_match_running_exports(
        self, pg_store: EventStore, record: ArenaRecord
    ) -> None:
        """Cancelled (instead of ended) once its matches were scored: the file verifies."""
        cancelled = ArenaCancelled(reason="a test", by="operator", at=STARTS_AT + 1100)
        await store_arena(pg_store, record, [*record.events[:-1], cancelled])
        tournament = await tournament_from_store(pg_store, record.arena_id)
        verdict = verify_tournament(load_tournament(dump_tournament(tournament)))
        assert verdict.ok, verdict.failure

    async def test_unknown_and_malformed_ids(self, pg_store: EventStore) -> None:
        """No such arena, or no arena id at all: `ArenaNotFound` (404) naming it."""
        with pytest.raises(ArenaNotFound, match="no arena"):
            await tournament_from_store(pg_store, "00000000-0000-4000-8000-000000000000")
        with pytest.raises(ArenaNotFound, match="not an arena id"):
            await tournament_from_store(pg_store, "../etc/passwd")
