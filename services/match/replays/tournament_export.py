"""An arena's tournament file from the event store (`ludo tournament export`, and the match
service's `GET /api/tournaments/{id}/export`).

The I/O half of `replays/tournament.py`, beside `replays/service.py` (the replays' I/O): it
reads the arena's stream and each paired match's through `ReplayStore.export`, so a match
in the file is the very file `ludo replay export` writes of it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from domain.arena import fold
from domain.errors import Conflict, NotFound
from domain.streams import tournament_stream
from replays.tournament import TournamentFile, arena_events, build_tournament, paired_tables
from services.match.replays.service import ReplayStore, exporter, replay_event
from services.shared.eventstore import EventStore

__all__ = ["ArenaNotFound", "ArenaRunning", "tournament_from_store"]


class ArenaNotFound(NotFound):
    """No arena has that id (no events under its stream); the message names the id."""


class ArenaRunning(Conflict):
    """The arena is not over, or a match of it still runs: its seeds are secret."""

    default_code = "arena_running"


def arena_stream_of(arena_id: str) -> str:
    """The stream of an arena id (a UUID; anything else is no arena)."""
    try:
        return tournament_stream(str(uuid.UUID(arena_id)))
    except ValueError:
        raise ArenaNotFound(f"{arena_id!r} is not an arena id (a UUID)") from None


async def tournament_from_store(
    store: EventStore, arena_id: str, *, exported_by: str | None = None
) -> TournamentFile:
    """The tournament file of a stored arena that is over: finished, or cancelled with no
    match running. `ArenaNotFound` for an unknown id, `ArenaRunning` (409
    `arena_running`) before: a running match's seed must stay secret, and a file of an
    arena still playing could not verify its results."""
    stream = arena_stream_of(arena_id)
    stored = [replay_event(e) for e in await store.read_stream(stream)]
    if not stored:
        raise ArenaNotFound(f"no arena {arena_id}")
    events = arena_events(stored)
    state = fold(events)
    if state.running:
        raise ArenaRunning(
            f"{len(state.running)} match(es) of arena {arena_id} still running: export it "
            "once they are over"
        )
    if state.ended_at is None and state.cancelled is None:
        raise ArenaRunning(f"arena {arena_id} has not ended: export it once it has finished")
    replays = ReplayStore(store)
    matches = [await replays.export(table.match_id) for table in paired_tables(events)]
    return build_tournament(
        arena_id,
        stored,
        matches,
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
        exported_by=exported_by or exporter(),
    )
